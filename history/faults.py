"""Injecting one anomaly into a valid history, for property tests of the
checker ("correct ⇒ valid; one fault ⇒ that kind reported").

Each fault is a short scenario of ops on fresh keys (one past the largest
key of the history) by fresh processes, spliced into the history at random
positions (scenario order kept, so ops overlap other ops). Keeping the
scenario apart from the valid traffic means the checker should report that
kind and nothing else, except the echoes listed in :data:`ECHOES` that the
anomaly implies.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from history.op import Op

Event = tuple[str, int, str, Any]  # type, process, f, value


@dataclass
class _Scenario:
    """Builds scenario events for fresh processes and keys."""

    first_process: int
    x: int  # a fresh key
    events: list[Event] = field(default_factory=list)
    processes: int = 0

    @property
    def y(self) -> int:
        return self.x + 1

    def process(self) -> int:
        self.processes += 1
        return self.first_process + self.processes - 1

    def op(self, p: int, f: str, invoke: Any, done: Any, outcome: str = "ok") -> None:
        self.events += [("invoke", p, f, invoke), (outcome, p, f, done)]

    def sends(self, p: int, key: int, records: list[tuple[int, int]], outcome: str = "ok"):
        """One op sending ``records`` ([offset, value]) to ``key``."""
        invoke = [["send", key, v] for _, v in records]
        done = [["send", key, [o, v]] for o, v in records] if outcome == "ok" else invoke
        self.op(p, "send", invoke, done, outcome)

    def polls(self, p: int, *reads: dict[int, list[tuple[int, int]]]) -> None:
        """An assign of the keys read, then one poll op per read map."""
        keys = sorted({k for r in reads for k in r})
        self.op(p, "assign", keys, keys)
        for r in reads:
            done = {k: [list(rec) for rec in recs] for k, recs in r.items()}
            self.op(p, "poll", [["poll"]], [["poll", done]])


def _lost_write(s: _Scenario) -> None:
    s.sends(s.process(), s.x, [(0, 1)])
    s.sends(s.process(), s.x, [(1, 2)])
    s.polls(s.process(), {s.x: [(1, 2)]})


def _unseen(s: _Scenario) -> None:
    s.sends(s.process(), s.x, [(0, 1)])


def _duplicate(s: _Scenario) -> None:
    s.sends(s.process(), s.x, [(0, 1)])
    s.polls(s.process(), {s.x: [(0, 1)]})
    s.polls(s.process(), {s.x: [(1, 1)]})


def _inconsistent_offsets(s: _Scenario) -> None:
    s.sends(s.process(), s.x, [(0, 1)])
    s.sends(s.process(), s.x, [(0, 2)])
    s.polls(s.process(), {s.x: [(0, 1)]})
    s.polls(s.process(), {s.x: [(0, 2)]})


def _g1a(s: _Scenario) -> None:
    s.sends(s.process(), s.x, [(0, 1)], outcome="fail")
    s.polls(s.process(), {s.x: [(0, 1)]})


def _precommitted_read(s: _Scenario) -> None:
    invoke = [["send", s.x, 1], ["poll"]]
    s.op(s.process(), "txn", invoke, [["send", s.x, [0, 1]], ["poll", {s.x: [[0, 1]]}]])


def _three_sent(s: _Scenario) -> None:
    s.sends(s.process(), s.x, [(0, 1), (1, 2), (2, 3)])


def _poll_skip(s: _Scenario) -> None:
    _three_sent(s)
    s.polls(s.process(), {s.x: [(0, 1)]}, {s.x: [(2, 3)]})
    s.polls(s.process(), {s.x: [(0, 1), (1, 2), (2, 3)]})


def _nonmonotonic_poll(s: _Scenario) -> None:
    s.sends(s.process(), s.x, [(0, 1), (1, 2)])
    s.polls(s.process(), {s.x: [(0, 1), (1, 2)]}, {s.x: [(1, 2)]})


def _int_poll_skip(s: _Scenario) -> None:
    _three_sent(s)
    s.polls(s.process(), {s.x: [(0, 1), (2, 3)]})
    s.polls(s.process(), {s.x: [(0, 1), (1, 2), (2, 3)]})


def _int_nonmonotonic_poll(s: _Scenario) -> None:
    s.sends(s.process(), s.x, [(0, 1), (1, 2)])
    s.polls(s.process(), {s.x: [(1, 2), (0, 1)]})


def _nonmonotonic_send(s: _Scenario) -> None:
    p = s.process()
    s.sends(p, s.x, [(1, 1)])
    s.sends(p, s.x, [(0, 2)])
    s.polls(s.process(), {s.x: [(0, 2), (1, 1)]})


def _int_nonmonotonic_send(s: _Scenario) -> None:
    s.sends(s.process(), s.x, [(1, 1), (0, 2)])
    s.polls(s.process(), {s.x: [(0, 2), (1, 1)]})


def _g1c(s: _Scenario) -> None:
    """Two concurrent transactions, each reading the other's write: a cycle
    of wr edges only (circular information flow)."""
    a, b = s.process(), s.process()
    s.op(a, "assign", [s.y], [s.y])
    s.op(b, "assign", [s.x], [s.x])
    s.events += [
        ("invoke", a, "txn", [["send", s.x, 1], ["poll"]]),
        ("invoke", b, "txn", [["send", s.y, 1], ["poll"]]),
        ("ok", a, "txn", [["send", s.x, [0, 1]], ["poll", {s.y: [[0, 1]]}]]),
        ("ok", b, "txn", [["send", s.y, [0, 1]], ["poll", {s.x: [[0, 1]]}]]),
    ]


FAULTS: dict[str, Callable[[_Scenario], None]] = {
    "lost-write": _lost_write,
    "duplicate": _duplicate,
    "inconsistent-offsets": _inconsistent_offsets,
    "G1a": _g1a,
    "precommitted-read": _precommitted_read,
    "poll-skip": _poll_skip,
    "nonmonotonic-poll": _nonmonotonic_poll,
    "int-poll-skip": _int_poll_skip,
    "int-nonmonotonic-poll": _int_nonmonotonic_poll,
    "nonmonotonic-send": _nonmonotonic_send,
    "int-nonmonotonic-send": _int_nonmonotonic_send,
    "unseen": _unseen,
    "G1c": _g1c,
}

# Other kinds a correct checker may also report for a fault (implied by it).
ECHOES: dict[str, frozenset[str]] = {
    "lost-write": frozenset({"unseen"}),
    "nonmonotonic-send": frozenset({"G0-process", "G0-realtime", "G0"}),
}


def scenario(fault: str, first_process: int, key: int) -> list[Event]:
    """The events of one fault's scenario, in order."""
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; choose one of {', '.join(FAULTS)}")
    s = _Scenario(first_process, key)
    FAULTS[fault](s)
    return s.events


def inject(ops: list[Op], fault: str, seed: int) -> list[Op]:
    """A copy of ``ops`` with ``fault``'s scenario spliced in at random
    positions; indices are renumbered and spliced ops take the time of the op
    before them."""
    fresh_process = 1 + max((o.process for o in ops if type(o.process) is int), default=-1)
    fresh_key = 1 + max((k for o in ops for k in _keys(o)), default=-1)
    events = scenario(fault, fresh_process, fresh_key)
    rng = random.Random(seed)
    total = len(ops) + len(events)
    slots = set(rng.sample(range(total), len(events)))
    out: list[Op] = []
    history, spliced = iter(ops), iter(events)
    time = 0
    for i in range(total):
        if i in slots:
            op_type, process, f, value = next(spliced)
            out.append(Op(i, time, op_type, process, f, value))
        else:
            op = next(history)
            time = op.time
            out.append(replace(op, index=i))
    return out


def _keys(op: Op) -> list[int]:
    """Every key an op names (micro-ops and key lists)."""
    v = op.value
    if type(v) is not list:
        return []
    keys: list[int] = []
    for m in v:
        if type(m) is int:
            keys.append(m)
        elif type(m) is list and m and m[0] == "send":
            keys.append(m[1])
        elif type(m) is list and len(m) == 2 and m[0] == "poll":
            keys.extend(m[1])
    return keys
