"""Lost writes: committed messages that later readers passed over."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from checkers.kind import Case, Kind, PerKey
from checkers.queue.key_log import OK, KeyLog
from checkers.wording import at_offset, op_name


def lost_write(kl: KeyLog) -> Iterator[Case]:
    """A committed message at dense index i was never read by an OK op, although
    some OK poll read a value at index ≥ i.

    ``bound`` is the highest first index of any OK-read value; every value
    whose last index is at or below it must have been read. Only values whose
    writer must have committed count, and an info writer counts as committed
    once any of its sends was read: so a transaction that is only partly
    visible (torn) shows up here too.
    """
    vp = kl.value_pos(kl.ok_read_values)
    vp = vp[vp >= 0]
    if len(vp) == 0:
        return
    bound = int(kl.value_first[vp].max())
    at_bound = kl.values[vp][kl.value_first[vp] == bound]
    reads = kl.ok_polls_of(at_bound)
    first = reads[np.lexsort((kl.value[reads], kl.offset[reads], kl.index[reads]))[0]]
    candidates = np.flatnonzero((kl.value_last <= bound) & ~kl.was_ok_read(kl.values))
    writers = kl.writer_rows(kl.values[candidates])
    for p, w in zip(candidates[writers >= 0], writers[writers >= 0], strict=True):
        value = int(kl.values[p])
        passed = kl.ok_polls[kl.idx[kl.ok_polls] >= kl.value_last[p]]
        yield {
            "key": kl.key,
            "value": value,
            "index": int(kl.value_first[p]),
            "offset": kl.value_offsets(value)[0],
            "max_read_index": bound,
            "writer": kl.op_ref(int(w)),
            "max_read": kl.op_ref(int(first)),
            "max_offset": kl.offset_at(int(first)),
            **_evident(kl, int(w), passed),
        }


def _evident(kl: KeyLog, writer: int, passed: np.ndarray) -> dict[str, int]:
    """When the loss became visible, as the field ``evident`` (ns): once the
    write was acknowledged and an OK poll had read its place or past it. An
    info writer is known to have committed only once a read proved it,
    possibly on another key, so it gets no such field."""
    if kl.type[writer] != OK:
        return {}
    return {"evident": max(int(kl.time[writer]), int(kl.time[passed].min()))}


def _explain(c: Case) -> str:
    return (
        f"{op_name(c['writer'])} sent {c['value']} to key {c['key']} {at_offset(c['offset'])}; "
        f"{op_name(c.get('max_read'))} polled key {c['key']} up to offset {c.get('max_offset')} "
        f"but no OK poll ever saw {c['value']}."
    )


LOST_WRITE = Kind(
    "lost-write",
    PerKey(lost_write),
    _explain,
    "A message the broker acknowledged was never read, although consumers read later "
    "messages of the same partition. Data was lost after it was confirmed as written.",
)
