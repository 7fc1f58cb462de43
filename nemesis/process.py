"""Process faults: kill (SIGKILL, then restart) and pause (SIGSTOP/SIGCONT)."""

from __future__ import annotations

from collections.abc import Sequence

from control.backends.base import Node
from control.db.base import DaemonDB
from control.remote import on_nodes
from nemesis.base import Nemesis, NemesisContext, NemesisError, OpDict, complete
from nemesis.family import Build, FaultFamily, FaultOptions
from nemesis.schedule import Fault
from nemesis.targets import check, pin_nodes


def restart_all(ctx: NemesisContext) -> list[str]:
    """Starts every broker that is not running and waits until it is up (a
    cluster node cut off from its quorum by another fault counts as up once
    started; it serves when the quorum is back); returns the nodes it started."""
    down = [n for n in ctx.nodes if not ctx.db.running(n)]

    def start(node):  # type: ignore[no-untyped-def]
        ctx.db.start(node, ctx.nodes)
        ctx.db.wait_up(node, ctx.nodes)

    on_nodes(down, start)
    return [n.name for n in down]


class _TargetedProcessFault:
    """A fault applied to the targeted brokers by `start_f` and healed on every
    broker by `stop_f` (and at teardown): kill/start and pause/resume differ
    only in their verbs and in what they do to a node."""

    start_f: str
    stop_f: str
    done: tuple[str, str]  # the completion keys: (applied, healed)

    def __init__(self) -> None:
        self.fs = frozenset({self.start_f, self.stop_f})

    def apply(self, ctx: NemesisContext, nodes: list[Node]) -> None:
        raise NotImplementedError

    def heal(self, ctx: NemesisContext) -> list[str]:
        raise NotImplementedError

    def setup(self, ctx: NemesisContext) -> None:
        pass

    def invoke(self, ctx: NemesisContext, op: OpDict) -> OpDict:
        if op["f"] == self.start_f:
            names = ctx.targets(op.get("value"))
            ctx.record(self.start_f, names)
            self.apply(ctx, [ctx.node(n) for n in names])
            return complete(op, {self.done[0]: names})
        if op["f"] == self.stop_f:
            return complete(op, {self.done[1]: self.heal(ctx)})
        raise NemesisError(f"{self.start_f} nemesis cannot do f={op['f']!r}")

    def teardown(self, ctx: NemesisContext) -> None:
        self.heal(ctx)


class Kill(_TargetedProcessFault):
    """`kill` SIGKILLs the target brokers; `start` restarts every dead one."""

    start_f, stop_f, done = "kill", "start", ("killed", "started")

    def apply(self, ctx: NemesisContext, nodes: list[Node]) -> None:
        on_nodes(nodes, ctx.db.kill)

    def heal(self, ctx: NemesisContext) -> list[str]:
        return restart_all(ctx)


class Pause(_TargetedProcessFault):
    """`pause` SIGSTOPs the target brokers; `resume` SIGCONTs every broker."""

    start_f, stop_f, done = "pause", "resume", ("paused", "resumed")

    def apply(self, ctx: NemesisContext, nodes: list[Node]) -> None:
        on_nodes(nodes, ctx.db.pause)

    def heal(self, ctx: NemesisContext) -> list[str]:
        on_nodes(ctx.nodes, ctx.db.resume)
        return list(ctx.names)


def heal_node(node: Node, db: DaemonDB, nodes: Sequence[Node]) -> None:
    """Undoes every process fault on ``node``: resumes a paused broker and
    starts a killed one."""
    db.resume(node)
    if not db.running(node):
        db.start(node, list(nodes))


def build(chosen: Sequence[str], options: FaultOptions) -> Build:
    nemeses: list[Nemesis] = []
    faults: list[Fault] = []
    for cls in (Kill, Pause):
        if cls.start_f in chosen:
            nemeses.append(cls())
            start, stop, (done, _) = cls.start_f, cls.stop_f, cls.done
            pinned = pin_nodes(done)
            faults.append(Fault(start, start, options.pick_target, stop, check=check, pin=pinned))
    return Build(nemeses, faults)


FAMILY = FaultFamily("process", ("kill", "pause"), build, heal_node)
