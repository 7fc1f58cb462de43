"""Reads of data that should not have been visible: aborted or uncommitted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from checkers.queue.key_log import FAIL, OK, KeyLog, equi_join, pair_codes


def g1a(kl: KeyLog) -> Iterator[dict[str, Any]]:
    """G1a, aborted read: an OK poll returned a value whose sending op definitely
    failed. A read_committed consumer must never see an aborted transaction's
    records."""
    failed = np.flatnonzero(kl.is_send & (kl.type == FAIL))
    reads = np.flatnonzero(kl.is_poll & (kl.type == OK) & np.isin(kl.value, kl.value[failed]))
    i, j = equi_join(kl.value[reads], kl.value[failed])
    for r, w in zip(reads[i], failed[j], strict=True):
        yield {
            "key": kl.key,
            "value": int(kl.value[r]),
            "offset": kl.offset_at(int(r)),
            "writer": kl.op_ref(int(w)),
            "reader": kl.op_ref(int(r)),
        }


def precommitted_read(kl: KeyLog) -> Iterator[dict[str, Any]]:
    """A transaction polled a value it sent itself. Most databases allow reading
    your own writes, but under Kafka's read_committed a record is invisible to
    every consumer, its producer's included, until its transaction commits."""
    sends = np.flatnonzero(kl.is_send)
    reads = np.flatnonzero(kl.is_poll & np.isin(kl.index, kl.index[sends]))
    i, j = equi_join(
        *pair_codes((kl.index[reads], kl.value[reads]), (kl.index[sends], kl.value[sends]))
    )
    for r, s in zip(reads[i], sends[j], strict=True):
        yield {
            "key": kl.key,
            "value": int(kl.value[r]),
            "offset": kl.offset_at(int(r)),
            "op": kl.op_ref(int(r)),
            "send_mop": int(kl.mop_index[s]),
            "poll_mop": int(kl.mop_index[r]),
        }
