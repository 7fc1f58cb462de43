"""Process faults: kill (SIGKILL, then restart) and pause (SIGSTOP/SIGCONT)."""

from __future__ import annotations

from harness.control import on_nodes
from nemesis.base import NemesisContext, NemesisError, OpDict, complete
from nemesis.targets import resolve


def restart_all(ctx: NemesisContext) -> list[str]:
    """Starts every broker that is not running and waits until it accepts
    connections; returns the nodes it started."""
    down = [n for n in ctx.nodes if not ctx.db.running(n)]

    def start(node):  # type: ignore[no-untyped-def]
        ctx.db.start(node, ctx.nodes)
        ctx.db.wait_ready(node)

    on_nodes(down, start)
    return [n.name for n in down]


class Kill:
    """`kill` SIGKILLs the target brokers; `start` restarts every dead one."""

    fs = frozenset({"kill", "start"})

    def setup(self, ctx: NemesisContext) -> None:
        pass

    def invoke(self, ctx: NemesisContext, op: OpDict) -> OpDict:
        if op["f"] == "kill":
            names = resolve(op.get("value"), ctx.names, ctx.rng, ctx.roles)
            ctx.record("kill", names)
            on_nodes([ctx.node(n) for n in names], ctx.db.kill)
            return complete(op, {"killed": names})
        if op["f"] == "start":
            return complete(op, {"started": restart_all(ctx)})
        raise NemesisError(f"kill nemesis cannot do f={op['f']!r}")

    def teardown(self, ctx: NemesisContext) -> None:
        restart_all(ctx)


class Pause:
    """`pause` SIGSTOPs the target brokers; `resume` SIGCONTs every broker."""

    fs = frozenset({"pause", "resume"})

    def setup(self, ctx: NemesisContext) -> None:
        pass

    def invoke(self, ctx: NemesisContext, op: OpDict) -> OpDict:
        if op["f"] == "pause":
            names = resolve(op.get("value"), ctx.names, ctx.rng, ctx.roles)
            ctx.record("pause", names)
            on_nodes([ctx.node(n) for n in names], ctx.db.pause)
            return complete(op, {"paused": names})
        if op["f"] == "resume":
            on_nodes(ctx.nodes, ctx.db.resume)
            return complete(op, {"resumed": ctx.names})
        raise NemesisError(f"pause nemesis cannot do f={op['f']!r}")

    def teardown(self, ctx: NemesisContext) -> None:
        on_nodes(ctx.nodes, ctx.db.resume)
