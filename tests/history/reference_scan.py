"""A small reference scan for the anomalies the synthetic faults inject,
straight from their definitions on the data (independent of the checker)."""

from __future__ import annotations

import itertools
from collections import defaultdict

from history import Op


def _sends(op: Op) -> list[tuple[int, int | None, int]]:
    return [
        (m[1], m[2][0] if type(m[2]) is list else None, m[2][1] if type(m[2]) is list else m[2])
        for m in op.value or []
        if m[0] == "send"
    ]


def _polls(op: Op) -> list[dict[int, list[list[int]]]]:
    return [m[1] for m in op.value or [] if m[0] == "poll" and len(m) == 2]


def anomalies(ops: list[Op]) -> set[str]:
    """The fault kinds visible in the data, by direct definitions."""
    found: set[str] = set()
    done = [o for o in ops if o.type != "invoke" and o.f in ("send", "poll", "txn")]
    ok = [o for o in done if o.type == "ok"]
    at: dict[tuple[int, int], set[int]] = defaultdict(set)  # (key, offset) -> values
    offsets: dict[tuple[int, int], set[int]] = defaultdict(set)  # (key, value) -> offsets
    read: set[tuple[int, int]] = set()
    failed = {(k, v) for o in done if o.type == "fail" for k, _, v in _sends(o)}
    failed |= {  # sends refused inside an info op
        (m[1], m[2][1])
        for o in done
        if o.type == "info"
        for i, m in enumerate(o.value or [])
        if i in o.extra.get("refused", ())
    }
    for o in ok:
        for k, off, v in _sends(o):
            at[k, off].add(v)
            offsets[k, v].add(off)
    for o in done:
        for poll in _polls(o):
            for k, records in poll.items():
                for off, v in records:
                    at[k, off].add(v)
                    offsets[k, v].add(off)
                    if o.type == "ok":
                        read.add((k, v))
    if any(len(vs) > 1 for vs in at.values()):
        found.add("inconsistent-offsets")
    if any(len(offs) > 1 for offs in offsets.values()):
        found.add("duplicate")
    order = defaultdict(list)
    for k, off in sorted(at):
        order[k].append(off)
    rank = {(k, off): i for k, offs in order.items() for i, off in enumerate(offs)}
    max_read = defaultdict(lambda: -1)
    for k, v in read:
        max_read[k] = max(max_read[k], *(rank[k, off] for off in offsets[k, v]))
    writers = defaultdict(list)
    for o in ok:
        for k, off, v in _sends(o):
            writers[o.index].append((k, v))
            if (k, v) not in read:
                found.add("lost-write" if rank[k, off] < max_read[k] else "unseen")
        reads = {(k, v) for p in _polls(o) for k, rs in p.items() for _, v in rs}
        if reads & set(writers[o.index]):
            found.add("precommitted-read")
        if reads & failed:
            found.add("G1a")
        for p in _polls(o):
            for k, rs in p.items():
                steps = [rank[k, b[0]] - rank[k, a[0]] for a, b in itertools.pairwise(rs)]
                found |= {"int-poll-skip" for d in steps if d > 1}
                found |= {"int-nonmonotonic-poll" for d in steps if d < 1}
        sends_by_key = defaultdict(list)
        for k, off, _ in _sends(o):
            sends_by_key[k].append(rank[k, off])
        if any(b <= a for rs in sends_by_key.values() for a, b in itertools.pairwise(rs)):
            found.add("int-nonmonotonic-send")
    readers_of = defaultdict(set)
    for o in ok:
        for p in _polls(o):
            for k, rs in p.items():
                readers_of[o.index] |= {(k, v) for _, v in rs}
    for a in ok:
        for b in ok:
            a_reads_b = readers_of[a.index] & set(writers[b.index])
            if a.index < b.index and a_reads_b and readers_of[b.index] & set(writers[a.index]):
                found.add("G1c")
    last_read: dict[tuple, int] = {}
    last_sent: dict[tuple, int] = {}
    for o in ops:
        if o.type != "ok":
            continue
        if o.f in ("assign", "subscribe"):
            last_read = {pk: r for pk, r in last_read.items() if pk[0] != o.process}
            continue
        for p in _polls(o):
            for k, rs in p.items():
                if rs and (o.process, k) in last_read:
                    d = rank[k, rs[0][0]] - last_read[o.process, k]
                    found |= {"poll-skip"} if d > 1 else {"nonmonotonic-poll"} if d < 1 else set()
                if rs:
                    last_read[o.process, k] = rank[k, rs[-1][0]]
        firsts: dict[int, int] = {}
        for k, off, _ in _sends(o):
            firsts.setdefault(k, rank[k, off])
            if (o.process, k) in last_sent and firsts[k] <= last_sent[o.process, k]:
                found.add("nonmonotonic-send")
        for k, off, _ in _sends(o):
            last_sent[o.process, k] = rank[k, off]
    return found
