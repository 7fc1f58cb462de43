"""`lose-unfsynced`: a power-loss crash.

The broker appends `<relative path> <synced size>` to `<data>/fsync.ledger`
after every fsync. Losing power keeps only what was synced: the node is
SIGKILLed, each data file is cut back to its last ledger size (files never
synced to zero bytes), then the broker restarts on what is left.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Sequence

from control.backends.base import Node
from control.remote import on_nodes
from nemesis.base import NemesisContext, NemesisError, OpDict, complete
from nemesis.family import Build, FaultFamily, FaultOptions
from nemesis.process import restart_all
from nemesis.schedule import Fault
from nemesis.targets import check, pin_nodes

LEDGER = "fsync.ledger"
#: Files in the data directory that are not data: the ledger and the broker's log.
NOT_DATA = frozenset({LEDGER, "broker.log"})


def parse_ledger(text: str) -> dict[str, int]:
    """The last synced size of each file named in a ledger; malformed lines
    (a torn last line after a crash) are skipped."""
    sizes: dict[str, int] = {}
    for line in text.splitlines():
        name, _, size = line.rpartition(" ")
        if name and size.isdigit():
            sizes[name] = int(size)
    return sizes


def truncation_plan(ledger: dict[str, int], sizes: dict[str, int]) -> dict[str, tuple[int, int]]:
    """`{path: (size now, size after)}` for every data file that loses bytes."""
    plan = {}
    for path, size in sizes.items():
        if path in NOT_DATA:
            continue
        keep = min(size, ledger.get(path, 0))
        if keep < size:
            plan[path] = (size, keep)
    return plan


def file_sizes(node: Node, data_dir: str) -> dict[str, int]:
    out = node.run(f"cd {shlex.quote(data_dir)} && find . -type f -printf '%s %P\\n'").out
    sizes = {}
    for line in out.splitlines():
        size, _, path = line.partition(" ")
        sizes[path] = int(size)
    return sizes


def lose_unfsynced(node: Node, data_dir: str) -> dict[str, tuple[int, int]]:
    """Truncates the unsynced tail of every data file on a node whose broker
    is already dead; returns what it cut."""
    ledger_path = shlex.quote(posixpath.join(data_dir, LEDGER))
    ledger = parse_ledger(node.run(f"cat {ledger_path} 2>/dev/null || true").out)
    plan = truncation_plan(ledger, file_sizes(node, data_dir))
    if plan:
        node.run(
            " && ".join(
                f"truncate -s {keep} {shlex.quote(posixpath.join(data_dir, path))}"
                for path, (_, keep) in sorted(plan.items())
            )
        )
    return plan


class LoseUnfsynced:
    """`lose-unfsynced` kills the target brokers, drops their unsynced bytes
    and restarts them."""

    fs = frozenset({"lose-unfsynced"})

    def setup(self, ctx: NemesisContext) -> None:
        pass

    def invoke(self, ctx: NemesisContext, op: OpDict) -> OpDict:
        if op["f"] != "lose-unfsynced":
            raise NemesisError(f"lose-unfsynced nemesis cannot do f={op['f']!r}")
        names = ctx.targets(op.get("value", "one"))
        ctx.record("lose-unfsynced", names)
        nodes = [ctx.node(n) for n in names]
        on_nodes(nodes, ctx.db.kill)
        cut = on_nodes(nodes, lambda n: lose_unfsynced(n, ctx.db.data_dir(n)))
        restart_all(ctx)
        return complete(
            op,
            {
                "nodes": names,
                "truncated": {
                    n: {p: list(sizes) for p, sizes in c.items()}
                    for n, c in zip(names, cut, strict=True)
                },
            },
        )

    def teardown(self, ctx: NemesisContext) -> None:
        restart_all(ctx)


def build(chosen: Sequence[str], options: FaultOptions) -> Build:
    if not chosen:
        return Build([], [])
    fault = Fault(
        "lose-unfsynced",
        "lose-unfsynced",
        options.pick_target,
        None,
        check=check,
        pin=pin_nodes("nodes"),
    )
    return Build([LoseUnfsynced()], [fault])


#: lost data cannot be restored; the killed brokers restart with process faults' heal
FAMILY = FaultFamily("disk", ("lose-unfsynced",), build, None)
