"""The cycle kinds (Elle's G0 and G1c, and their -process and -realtime forms)
beside the specs the search (:mod:`checkers.cycles.search`) finds them by.

Kept apart from the search so that reading the kinds does not load scipy:
the registry (:mod:`checkers.kinds`) is imported by reports and by every
Spark worker.
"""

from __future__ import annotations

from dataclasses import dataclass

from checkers.cycles.edges import PROCESS, REALTIME, WR, WW
from checkers.kind import WRITES_NOT_ISOLATED, Allowance, Case, CycleSearch, Kind
from checkers.wording import at_offset

REL_TEXT = {
    "ww": lambda a, b, s: (
        f"{a} sent {s.get('v1')} to key {s.get('key')} {at_offset(s.get('o1'))} before {b} "
        f"sent {s.get('v2')} ({at_offset(s.get('o2'))})"
    ),
    "wr": lambda a, b, s: f"{b} polled {s.get('value')} from key {s.get('key')}, which {a} sent",
    "process": lambda a, b, s: f"{a} and {b} ran on process {s.get('process')}, {a} first",
    "realtime": lambda a, b, s: f"{a} completed before {b} began",
}


def _explain_cycle(c: Case) -> str:
    names: dict[int, str] = {}
    for st in c["steps"]:
        names.setdefault(st["from"]["index"], f"T{len(names) + 1}")
    let = ", ".join(
        f"{t} = op {idx} (process {next(s['from']['process'] for s in c['steps'] if s['from']['index'] == idx)})"  # noqa: E501
        for idx, t in names.items()
    )
    steps = "; ".join(
        REL_TEXT[st["rel"]](names[st["from"]["index"]], names[st["to"]["index"]], st)
        for st in c["steps"]
    )
    first = names[c["steps"][0]["from"]["index"]]
    return f"Let {let}. {steps}: so {first} precedes itself, a {c['kind']} cycle."


def _explain_timeout(c: Case) -> str:
    return (
        f"A {c['spec']} cycle exists in a component of {c['component_size']} ops, but "
        "the cycle search ran out of time before naming one."
    )


WRITE_CYCLES = Allowance(
    WRITES_NOT_ISOLATED + ": write cycles are normal in Kafka's transaction model", always=True
)
# the search marks each cycle that needs a ww edge as allowed (checkers.result)
NEEDS_WW = Allowance(
    "every such cycle needs a ww edge, and "
    + WRITES_NOT_ISOLATED
    + " (use --no-ww-deps to look for pure wr cycles)"
)


def _cycle_kind(name: str, meaning: str, allowed: Allowance) -> Kind:
    return Kind(name, CycleSearch.CYCLE, _explain_cycle, meaning, allowed)


G0 = _cycle_kind(
    "G0",
    "Write cycle: transactions' writes are ordered one way in one partition and the other "
    "way in another. Kafka's transactional model allows this.",
    WRITE_CYCLES,
)
G1C = _cycle_kind(
    "G1c",
    "Circular information flow: transaction A read data written by B, and B (directly or "
    "through others) read or was ordered after A. No serial order explains what happened.",
    NEEDS_WW,
)
G0_PROCESS = _cycle_kind(
    "G0-process",
    "Write cycle that also uses the order of operations within one client process.",
    WRITE_CYCLES,
)
G1C_PROCESS = _cycle_kind(
    "G1c-process",
    "Circular information flow that also uses the order of operations within one client process.",
    NEEDS_WW,
)
G0_REALTIME = _cycle_kind(
    "G0-realtime",
    "Write cycle that also uses real-time order: an operation that finished before "
    "another began appears to have happened after it.",
    WRITE_CYCLES,
)
G1C_REALTIME = _cycle_kind(
    "G1c-realtime",
    "Circular information flow that also uses real-time order: some operation observed "
    "effects from the future relative to when it ran.",
    NEEDS_WW,
)
SEARCH_TIMEOUT = Kind(
    "cycle-search-timeout",
    CycleSearch.TIMEOUT,
    _explain_timeout,
    "A dependency cycle exists among some operations, but the search ran out of time "
    "before naming one: the run could not be fully judged.",
)


@dataclass(frozen=True)
class Spec:
    """Cycles of ``kind`` over the relations in ``allowed`` holding an edge of
    every ``required`` one; ``pure_wr``: without ww edges, which Kafka's
    transactions do not order."""

    kind: Kind
    allowed: int
    required: tuple[int, ...]
    pure_wr: bool = False
    skip_if: tuple[Spec, ...] = ()  # specs whose components already explain this one

    @property
    def name(self) -> str:
        return self.kind.name + (" (pure wr)" if self.pure_wr else "")


_G0 = Spec(G0, WW, (WW,))
_G1C_PURE = Spec(G1C, WR, (WR,), pure_wr=True)
_G1C = Spec(G1C, WW | WR, (WR,), skip_if=(_G1C_PURE,))
_G0_PROCESS = Spec(G0_PROCESS, WW | PROCESS, (PROCESS,), skip_if=(_G0,))
_G1C_PROCESS_PURE = Spec(
    G1C_PROCESS, WR | PROCESS, (WR, PROCESS), pure_wr=True, skip_if=(_G1C_PURE,)
)
_G1C_PROCESS = Spec(
    G1C_PROCESS, WW | WR | PROCESS, (WR, PROCESS), skip_if=(_G1C_PURE, _G1C, _G1C_PROCESS_PURE)
)
_G0_REALTIME = Spec(G0_REALTIME, WW | PROCESS | REALTIME, (REALTIME,), skip_if=(_G0, _G0_PROCESS))
_G1C_REALTIME_PURE = Spec(
    G1C_REALTIME,
    WR | PROCESS | REALTIME,
    (WR, REALTIME),
    pure_wr=True,
    skip_if=(_G1C_PURE, _G1C_PROCESS_PURE),
)
_G1C_REALTIME = Spec(
    G1C_REALTIME,
    WW | WR | PROCESS | REALTIME,
    (WR, REALTIME),
    skip_if=(_G1C_PURE, _G1C, _G1C_PROCESS_PURE, _G1C_PROCESS, _G1C_REALTIME_PURE),
)
# in search order: a spec's skip_if are searched before it
SPECS: tuple[Spec, ...] = (
    _G0,
    _G1C_PURE,
    _G1C,
    _G0_PROCESS,
    _G1C_PROCESS_PURE,
    _G1C_PROCESS,
    _G0_REALTIME,
    _G1C_REALTIME_PURE,
    _G1C_REALTIME,
)
