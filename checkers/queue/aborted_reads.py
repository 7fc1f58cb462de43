"""Reads of data that should not have been visible: aborted or uncommitted."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from checkers.kind import Case, Kind, PerKey
from checkers.queue.key_log import FAIL, KeyLog, equi_join, pair_codes
from checkers.wording import at_offset, op_name


def g1a(kl: KeyLog) -> Iterator[Case]:
    """G1a, aborted read: an OK poll returned a value whose send definitely
    failed: its op failed, or its client saw that send refused. A
    read_committed consumer must never see an aborted transaction's records,
    nor any consumer a write the broker refused."""
    failed = np.flatnonzero(kl.is_send & ((kl.type == FAIL) | kl.refused))
    reads = kl.ok_polls_of(kl.value[failed])
    i, j = equi_join(kl.value[reads], kl.value[failed])
    for r, w in zip(reads[i], failed[j], strict=True):
        yield {
            "key": kl.key,
            "value": int(kl.value[r]),
            "offset": kl.offset_at(int(r)),
            "writer": kl.op_ref(int(w)),
            "reader": kl.op_ref(int(r)),
            **({"refused_mop": int(kl.mop_index[w])} if kl.refused[w] else {}),
        }


def precommitted_read(kl: KeyLog) -> Iterator[Case]:
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


def _explain_g1a(c: Case) -> str:
    what = f"its send #{c['refused_mop']} was refused" if "refused_mop" in c else "an aborted write"
    return (
        f"{op_name(c['reader'])} polled {c['value']} from key {c['key']} "
        f"{at_offset(c['offset'])}, which {op_name(c['writer'])} sent: {what}."
    )


def _explain_precommitted_read(c: Case) -> str:
    return (
        f"{op_name(c['op'])} sent {c['value']} to key {c['key']} and polled it back "
        f"{at_offset(c['offset'])} in the same transaction, before it committed."
    )


G1A = Kind(
    "G1a",
    PerKey(g1a),
    _explain_g1a,
    "Aborted read: a consumer read a message whose send definitely failed or whose "
    "transaction aborted. read_committed consumers must never see such data.",
)
PRECOMMITTED_READ = Kind(
    "precommitted-read",
    PerKey(precommitted_read),
    _explain_precommitted_read,
    "A transaction read a message before that message's transaction committed. Kafka's "
    "read_committed isolation forbids seeing uncommitted records.",
)
