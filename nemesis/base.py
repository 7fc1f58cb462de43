"""The nemesis protocol, its context, and composition by `f`.

A nemesis gets an op such as `{"process": "nemesis", "f": "kill", "value":
"one"}` and returns its completion: the same op with `type: "info"` and a
`value` saying exactly what it did (which nodes, which grudge), so the
history shows the fault. Before touching anything it records the fault in the
cluster's leftover registry (`ctx.record`), so a crash mid-fault is healed at
the next start.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from control.backends.base import Node
from control.db.base import DaemonDB
from nemesis.targets import NodeSpec, Roles, resolve
from workloads.keys import KeyMap

OpDict = dict[str, Any]


class NemesisError(ValueError):
    """An op a nemesis cannot carry out (unknown f, bad value)."""


@dataclass
class NemesisContext:
    """What a nemesis may touch: the nodes, the DB adapter that runs brokers on
    them, the address clients connect from, who holds roles, and the
    workload's keys (for targets such as the leader of a key)."""

    nodes: list[Node]
    db: DaemonDB
    client_address: str
    roles: Roles | None = None
    record: Callable[[str, Any], None] = lambda f, detail: None
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    key_map: KeyMap = field(default_factory=KeyMap)
    #: the workload's consumer group (whose coordinator a cut isolates)
    group: str = "jepka"

    @property
    def names(self) -> list[str]:
        return [n.name for n in self.nodes]

    def targets(self, spec: NodeSpec) -> list[str]:
        """The nodes a node spec denotes on this cluster now."""
        return resolve(spec, self.names, self.rng, self.roles, self.key_map.topic_partition)

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise NemesisError(f"no node named {name!r}")

    def by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    def close(self) -> None:
        """Lets go of the cluster: the roles client stops reconnecting."""
        if self.roles is not None:
            self.roles.close()

    def __enter__(self) -> NemesisContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Nemesis(Protocol):
    """A fault injector (Jepsen's `Nemesis` plus `Reflection`)."""

    fs: frozenset[str]

    def setup(self, ctx: NemesisContext) -> None: ...

    def invoke(self, ctx: NemesisContext, op: OpDict) -> OpDict:
        """Applies `op` and returns its completion (`type: "info"`)."""
        ...

    def teardown(self, ctx: NemesisContext) -> None:
        """Undoes every fault this nemesis may have left; idempotent."""
        ...


def complete(op: Mapping[str, Any], value: Any) -> OpDict:
    """The completion of a nemesis op."""
    return {**op, "type": "info", "value": value}


class Compose:
    """Routes each op to the one nemesis claiming its `f` (Jepsen's `compose`);
    two nemeses claiming the same `f` is a configuration error."""

    def __init__(self, nemeses: Iterable[Nemesis]) -> None:
        self.nemeses = list(nemeses)
        self.routes: dict[str, Nemesis] = {}
        for nem in self.nemeses:
            for f in nem.fs:
                if f in self.routes:
                    raise NemesisError(
                        f"two nemeses handle f={f!r}: {type(self.routes[f]).__name__} "
                        f"and {type(nem).__name__}"
                    )
                self.routes[f] = nem
        self.fs = frozenset(self.routes)

    def setup(self, ctx: NemesisContext) -> None:
        for nem in self.nemeses:
            nem.setup(ctx)

    def invoke(self, ctx: NemesisContext, op: OpDict) -> OpDict:
        nem = self.routes.get(op.get("f", ""))
        if nem is None:
            raise NemesisError(f"no nemesis handles f={op.get('f')!r}; known: {sorted(self.fs)}")
        return nem.invoke(ctx, op)

    def teardown(self, ctx: NemesisContext) -> None:
        errors = []
        for nem in self.nemeses:
            try:
                nem.teardown(ctx)
            except Exception as e:  # keep healing the others, then report
                errors.append(f"{type(nem).__name__}: {e}")
        if errors:
            raise RuntimeError("teardown failed: " + "; ".join(errors))


class Bound:
    """A nemesis bound to its cluster context, in the runner's shape
    (`setup(test)` returns the nemesis, `invoke(test, op)`, `teardown(test)`,
    `fs()`), so the interpreter needs to know nothing about nodes."""

    def __init__(self, nemesis: Nemesis, ctx: NemesisContext) -> None:
        self.nemesis = nemesis
        self.ctx = ctx

    def setup(self, test: Any) -> Bound:
        self.nemesis.setup(self.ctx)
        return self

    def invoke(self, test: Any, op: OpDict) -> OpDict:
        return self.nemesis.invoke(self.ctx, op)

    def teardown(self, test: Any) -> None:
        try:
            self.nemesis.teardown(self.ctx)
        finally:
            self.ctx.close()

    def fs(self) -> frozenset[str]:
        return self.nemesis.fs
