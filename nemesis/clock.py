"""Clock faults through libfaketime.

Nodes of one machine share the kernel clock, so each broker runs under
libfaketime reading its realtime offset from `<node root>/faketime` on every
call (see `control.remote.daemon_line`); writing that file moves the clock of
the running broker. `bump-clock` sets an offset, `strobe-clock` flips between
two offsets every period for a bounded duration, `reset-clock` sets +0.
"""

from __future__ import annotations

import math
import random
import shlex
import time
from collections.abc import Callable, Sequence
from typing import Any

from control.backends.base import Node
from control.db.base import DaemonDB, faketime_file
from control.remote import on_nodes
from nemesis.base import Nemesis, NemesisContext, NemesisError, OpDict, complete
from nemesis.family import DEFAULT_TARGETS, Build, FaultFamily, FaultOptions
from nemesis.schedule import Fault
from nemesis.targets import check as check_targets
from nemesis.targets import pin

MAX_STROBE_S = 60.0


def offset_text(ms: float) -> str:
    """libfaketime's relative offset format, in seconds."""
    return f"{ms / 1000:+.3f}"


def set_offset(node: Node, ms: float) -> None:
    """Writes the offset atomically (rename), so the broker never reads a
    half-written file."""
    path = faketime_file(node)
    tmp = shlex.quote(path + ".tmp")
    node.run(f"echo {offset_text(ms)} > {tmp} && mv {tmp} {shlex.quote(path)}")


def _targets(ctx: NemesisContext, value: Any) -> list[str]:
    spec = value.get("targets", "one") if isinstance(value, dict) else value
    return ctx.targets(spec)


class Clock:
    fs = frozenset({"bump-clock", "strobe-clock", "reset-clock"})

    def setup(self, ctx: NemesisContext) -> None:
        self.teardown(ctx)

    def invoke(self, ctx: NemesisContext, op: OpDict) -> OpDict:
        f, value = op["f"], op.get("value") or {}
        if f == "reset-clock":
            self.teardown(ctx)
            return complete(op, {"reset": ctx.names})
        names = _targets(ctx, value)
        nodes = [ctx.node(n) for n in names]
        delta = float(value.get("delta_ms", 0)) if isinstance(value, dict) else 0.0
        if f == "bump-clock":
            ctx.record("clock", names)
            on_nodes(nodes, lambda n: set_offset(n, delta))
            return complete(op, {"nodes": names, "offset_ms": delta})
        if f == "strobe-clock":
            period = float(value.get("period_ms", 100)) / 1000
            duration = min(float(value.get("duration_s", 1)), MAX_STROBE_S)
            ctx.record("clock", names)
            flips = 0
            deadline = time.monotonic() + duration
            while time.monotonic() < deadline:
                offset = delta if flips % 2 == 0 else 0.0
                on_nodes(nodes, lambda n: set_offset(n, offset))  # noqa: B023 (used at once)
                flips += 1
                time.sleep(period)
            on_nodes(nodes, lambda n: set_offset(n, 0))
            return complete(op, {"nodes": names, "delta_ms": delta, "flips": flips})
        raise NemesisError(f"clock nemesis cannot do f={f!r}")

    def teardown(self, ctx: NemesisContext) -> None:
        on_nodes(ctx.nodes, lambda n: set_offset(n, 0))


def heal_node(node: Node, db: DaemonDB, nodes: Sequence[Node]) -> None:
    """Undoes every clock fault on ``node``: its offset back to +0 (before a
    killed broker restarts, so that it starts on the true time)."""
    set_offset(node, 0)


def bump(rng: random.Random) -> dict[str, Any]:
    """Jepsen's bump-time: ±1.5^(6..31) ms, about 11 ms to 288 s."""
    return {
        "targets": rng.choice(DEFAULT_TARGETS),
        "delta_ms": round(rng.choice((-1, 1)) * 1.5 ** rng.randint(6, 31), 3),
    }


def strobe(rng: random.Random) -> dict[str, Any]:
    """Jepsen's strobe-time ranges, with the period and duration bounded so a
    flip is a file write the node can keep up with."""
    return {
        "targets": rng.choice(DEFAULT_TARGETS),
        "delta_ms": 2 ** rng.randint(2, 18),
        "period_ms": 2 ** rng.randint(4, 10),
        "duration_s": round(rng.uniform(0, 10), 3),
    }


def _checker(numbers: tuple[str, ...]) -> Callable[[Any, Sequence[str] | None], None]:
    """Checks a clock op's value: a mapping of ``targets`` (a node spec) and
    the numbers the op needs."""

    def check(value: Any, nodes: Sequence[str] | None = None) -> None:
        if not isinstance(value, dict):
            raise NemesisError(f"expected a mapping with {', '.join(numbers)}, got {value!r}")
        for key in numbers:
            number = value.get(key)
            if isinstance(number, bool) or not isinstance(number, int | float):
                raise NemesisError(f"{key} must be a number, got {number!r}")
            if not math.isfinite(number):
                raise NemesisError(f"{key} must be finite, got {number!r}")
        check_targets(value.get("targets", "one"), nodes)

    return check


def pin_clock(value: Any, done: Any) -> Any:
    """A clock op's value with randomly drawn targets pinned to the nodes hit."""
    if not isinstance(value, dict) or not isinstance(done, dict):
        return value
    return {**value, "targets": pin(value.get("targets", "one"), done.get("nodes"))}


def build(chosen: Sequence[str], options: FaultOptions) -> Build:
    nemeses: list[Nemesis] = [Clock()] if chosen else []
    faults: list[Fault] = []
    if "clock" in chosen:
        check = _checker(("delta_ms",))
        faults.append(Fault("clock", "bump-clock", bump, "reset-clock", "all", check, pin_clock))
    if "clock-strobe" in chosen:
        check = _checker(("delta_ms", "period_ms", "duration_s"))
        faults.append(Fault("clock-strobe", "strobe-clock", strobe, None, "all", check, pin_clock))
    return Build(nemeses, faults)


FAMILY = FaultFamily("clock", ("clock", "clock-strobe"), build, heal_node)
