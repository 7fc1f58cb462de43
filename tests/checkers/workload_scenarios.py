"""One history of the eos and group workloads for the workload checks: each
anomaly on its own key, and each anomaly's near miss on that key plus
``NEAR`` (by processes of their own), so one Spark check covers both.

Eos copies input key ``k`` to output key ``k + SHIFT``; group members record
``commit`` and ``rebalance_log`` as the ``group`` workload does.
"""

from __future__ import annotations

from typing import Any

from tests.checkers.dsl import History, poll, send

SHIFT = 10
NEAR = 5  # near misses: the anomaly's key + NEAR, processes + 100
LOST, DUP, REGRESS, SPLIT, RESUME = 0, 1, 2, 3, 4


def copy(h: History, process: int, polled: dict[int, list[tuple[int, int]]], sent, t="ok") -> int:
    """A copy op: its poll of input keys, then its sends to output keys."""
    mops = [poll(polled), *[send(k, v, o) for k, v, o in sent]]
    return h.txn(process, mops, t, copy=True, output_shift=SHIFT)


def commit(offsets: dict[int, int], member: str = "m", t: str = "ok") -> dict[str, Any]:
    return {"offsets": {str(k): o for k, o in offsets.items()}, "member": member, "type": t}


def assigned(*keys: int) -> list[dict[str, Any]]:
    return [{"type": "assigned", "keys": list(keys)}]


def revoked(*keys: int) -> list[dict[str, Any]]:
    return [{"type": "revoked", "keys": list(keys)}]


def eos(h: History, near: bool) -> None:
    lost, dup, p = LOST + NEAR * near, DUP + NEAR * near, 100 * near
    h.txn(p + 1, [send(lost, 1, 0), send(lost, 2, 1)])
    copy(h, p + 2, {lost: [(0, 1)]}, [(lost + SHIFT, 1, 0)])
    if near:  # offset 1 was read by a copy that failed (aborted): it commits nothing
        copy(h, p + 3, {lost: [(1, 2)]}, [(lost + SHIFT, 2, 1)], "fail")
    else:  # the copier consumed 2 (offset 1) and committed, but never copied it
        copy(h, p + 3, {lost: [(1, 2)]}, [])
    h.txn(p + 1, [send(dup, 1, 0)])
    copy(h, p + 2, {dup: [(0, 1)]}, [(dup + SHIFT, 1, 0)])
    # a second copy of the same record: committed (a duplicate), or aborted
    copy(h, p + 3, {dup: [(0, 1)]}, [(dup + SHIFT, 1, 1)], "fail" if near else "ok")


def regress(h: History, near: bool) -> None:
    k, p = REGRESS + NEAR * near, 20 + 100 * near
    h.txn(p, [send(k, 1, 0)])
    if near:  # concurrent commits may apply in either order
        a = h.invoke(p, "poll", [poll({k: [(0, 1)]})])
        b = h.invoke(p + 1, "poll", [poll({k: [(0, 1)]})])
        h.complete(a, "ok", [poll({k: [(0, 1)]})], commit=commit({k: 5}))
        h.complete(b, "ok", [poll({k: [(0, 1)]})], commit=commit({k: 3}))
        # and a failed commit of a lower offset changed nothing
        h.txn(p + 1, [poll({})], commit=commit({k: 2}, t="fail"))
    else:  # 5, then (strictly later) 3
        h.txn(p, [poll({k: [(0, 1)]})], commit=commit({k: 5}))
        h.txn(p + 1, [poll({k: [(0, 1)]})], commit=commit({k: 3}))


def split(h: History, near: bool) -> None:
    k, p = SPLIT + NEAR * near, 22 + 100 * near
    h.txn(p, [poll({})], rebalance_log=assigned(k))
    if near:  # handed over while the revoking op runs: no proven overlap
        r = h.invoke(p, "poll", [poll({})])
        h.txn(p + 1, [poll({})], rebalance_log=assigned(k))
        h.complete(r, "ok", [poll({})], rebalance_log=revoked(k))
    else:  # assigned to p + 1 before p logs its revocation
        h.txn(p + 1, [poll({})], rebalance_log=assigned(k))
        h.txn(p, [poll({})], rebalance_log=revoked(k))
    h.txn(p + 1, [poll({})])


def resume(h: History, near: bool) -> None:
    """Offsets 0-3; the group commits 1; a member assigned the key first polls
    it from 1 (near miss) or from 3, skipping 1 and 2."""
    k, p, start = RESUME + NEAR * near, 30 + 100 * near, 1 if near else 3
    h.txn(p, [send(k, v, v) for v in range(4)])
    h.txn(p, [poll({k: [(0, 0)]})], commit=commit({k: 1}))
    h.txn(p + 1, [poll({})], rebalance_log=assigned(k))
    h.txn(p + 1, [poll({k: [(o, o) for o in range(start, 4)]})])


def history() -> History:
    h = History()
    for near in (False, True):
        for scenario in (eos, regress, split, resume):
            scenario(h, near)
    final(h)
    return h


def final(h: History) -> None:
    """Final reads of every output key, as the workload's final phase does."""
    reads: dict[int, list[tuple[int, int]]] = {}
    for op in h.ops:
        if op.type == "ok" and op.f in ("txn", "send") and op.value:
            for m in op.value:
                if m[0] == "send" and m[1] >= SHIFT:
                    reads.setdefault(m[1], []).append((m[2][0], m[2][1]))
    h.assign(9, sorted(reads))
    h.txn(9, [poll({k: sorted(v) for k, v in reads.items()})])
