"""Network partitions: a grudge computed purely, applied as iptables DROP
rules inside each node's network stack, healed by flushing our chains.

`start-partition` takes a kind (or `{"kind": ..., ...}`):
- Jepsen's grudges `one`, `majority`, `majorities-ring`, `minority-third`,
  `bridge`;
- role-targeted cuts, asking the live cluster who holds the role:
  `isolate-leader` (of a `key`'s partition, or of `topic`/`partition`, else
  of a random partition),
  `isolate-controller`, `isolate-coordinator` (of a `transactional_id`, or
  of a `group`, by default the workload's);
- `clients`: cut the harness (clients) off from the `targets` brokers (a node
  spec, default `minority`) while brokers still see each other.
The completion records the exact grudge (or cut) so the history shows it;
a grudge kind given with its `grudge` applies that grudge as it is, which is
how a replay repeats a partition drawn at random.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from control.backends.base import Node
from control.db.base import DaemonDB
from control.net import iptables
from control.remote import on_nodes
from nemesis.base import NemesisContext, NemesisError, OpDict, complete
from nemesis.family import Build, FaultFamily, FaultOptions
from nemesis.grudge import GRUDGES, Grudge, isolate
from nemesis.schedule import Fault
from nemesis.targets import check as check_targets
from nemesis.targets import pin

ROLE_KINDS = ("isolate-leader", "isolate-controller", "isolate-coordinator")
KINDS = (*GRUDGES, *ROLE_KINDS, "clients")
#: what `--nemesis partition` draws from, besides any kind named alone
DEFAULT_KINDS = ("one", "majority", "majorities-ring", "bridge")
#: `--nemesis` names of one partition kind alone
KIND_NAMES = {
    **{f"partition-{k}": k for k in GRUDGES},
    **{k: k for k in ROLE_KINDS},
    "clients": "clients",
}


def _spec(value: Any) -> dict[str, Any]:
    spec = {"kind": value} if isinstance(value, str) else dict(value or {})
    if spec.get("kind") not in KINDS:
        raise NemesisError(
            f"unknown partition kind {spec.get('kind')!r}; known: {', '.join(KINDS)}"
        )
    return spec


def given_grudge(described: Any, names: Sequence[str]) -> Grudge:
    """A grudge written out (node → the nodes it drops), on these nodes."""
    if not isinstance(described, Mapping):
        raise NemesisError(f"a grudge maps nodes to the nodes they drop, got {described!r}")
    unknown = sorted({str(n) for n, ds in described.items() for n in [n, *ds]} - set(names))
    if unknown:
        raise NemesisError(f"grudge names unknown node(s) {', '.join(unknown)}")
    return {n: frozenset(described.get(n, ())) for n in names}


def check(value: Any, nodes: Sequence[str] | None = None) -> None:
    """Raises NemesisError for a start value that names no partition kind,
    or a node not among ``nodes`` (when given)."""
    spec = _spec(value)
    key = spec.get("key")
    if key is not None and (type(key) is not int or key < 0):
        raise NemesisError(f"key must be a key number (0 or more), got {key!r}")
    if spec["kind"] == "clients":
        check_targets(spec.get("targets", "minority"), nodes)
    grudge = spec.get("grudge")
    if grudge is not None and not (
        isinstance(grudge, Mapping) and all(isinstance(v, list) for v in grudge.values())
    ):
        raise NemesisError(f"a grudge maps nodes to lists of nodes, got {grudge!r}")
    if grudge is not None and nodes is not None:
        given_grudge(grudge, nodes)


def pin_partition(value: Any, done: Any) -> Any:
    """A partition drawn at random pinned to the grudge (or cut) applied."""
    if not isinstance(done, Mapping):
        return value
    spec = _spec(value)
    if spec["kind"] in GRUDGES and isinstance(done.get("grudge"), Mapping):
        return {**spec, "grudge": done["grudge"]}
    if spec["kind"] == "clients":
        return {**spec, "targets": pin(spec.get("targets", "minority"), done.get("cut"))}
    return value


def role_holder(ctx: NemesisContext, spec: Mapping[str, Any]) -> str:
    """The node holding the role a role-targeted partition cuts off."""
    if ctx.roles is None:
        raise NemesisError(f"{spec['kind']} needs a cluster to ask who holds the role")
    kind = spec["kind"]
    if kind == "isolate-leader" and "key" in spec:
        return ctx.roles.leader(*ctx.key_map.topic_partition(int(spec["key"])))
    if kind == "isolate-leader":
        return ctx.roles.leader(spec.get("topic"), spec.get("partition"))
    if kind == "isolate-controller":
        return ctx.roles.controller()
    if "transactional_id" in spec:
        return ctx.roles.coordinator("transaction", str(spec["transactional_id"]))
    return ctx.roles.coordinator("group", str(spec.get("group", ctx.group)))


def plan(ctx: NemesisContext, value: Any) -> tuple[dict[str, Any], Grudge | None, list[str]]:
    """What a `start-partition` op will do: its spec, the node grudge (or
    None for `clients`) and, for `clients`, the brokers cut from clients."""
    spec = _spec(value)
    kind = spec["kind"]
    if kind in GRUDGES and "grudge" in spec:
        return spec, given_grudge(spec["grudge"], ctx.names), []
    if kind in GRUDGES:
        return spec, GRUDGES[kind](ctx.names, ctx.rng), []
    if kind in ROLE_KINDS:
        return spec, isolate(ctx.names, [role_holder(ctx, spec)]), []
    return spec, None, ctx.targets(spec.get("targets", "minority"))


class Partition:
    """`start-partition` applies a grudge; `stop-partition` heals every node."""

    fs = frozenset({"start-partition", "stop-partition"})

    def setup(self, ctx: NemesisContext) -> None:
        iptables.heal(ctx.nodes)

    def invoke(self, ctx: NemesisContext, op: OpDict) -> OpDict:
        if op["f"] == "stop-partition":
            iptables.heal(ctx.nodes)
            return complete(op, "network healed")
        if op["f"] != "start-partition":
            raise NemesisError(f"partition nemesis cannot do f={op['f']!r}")
        spec, grudge, cut = plan(ctx, op.get("value"))
        if grudge is not None:
            described = {n: sorted(d) for n, d in grudge.items() if d}
            ctx.record("partition", described)
            iptables.drop_grudge(ctx.by_name(), grudge)
            return complete(op, {**spec, "grudge": described})
        ctx.record("partition", {"clients-cut-from": cut})
        on_nodes(
            [ctx.node(n) for n in cut], lambda node: iptables.cut_address(node, ctx.client_address)
        )
        return complete(op, {**spec, "cut": cut, "client": ctx.client_address})

    def teardown(self, ctx: NemesisContext) -> None:
        iptables.heal(ctx.nodes)


def heal_node(node: Node, db: DaemonDB, nodes: Sequence[Node]) -> None:
    """Undoes every partition on ``node``: flushes jepka's iptables chains."""
    node.run(iptables.heal_line())


def build(chosen: Sequence[str], options: FaultOptions) -> Build:
    kinds = [KIND_NAMES[n] for n in chosen if n in KIND_NAMES]
    if "partition" in chosen:
        kinds = list(dict.fromkeys([*DEFAULT_KINDS, *kinds]))
    if not kinds:
        return Build([], [])
    extra = options.coordinator

    def pick_kind(rng: random.Random) -> Any:
        kind = rng.choice(kinds)
        return {"kind": kind, **extra} if kind == "isolate-coordinator" and extra else kind

    fault = Fault(
        "partition",
        "start-partition",
        pick_kind,
        "stop-partition",
        None,
        check,
        pin_partition,
    )
    return Build([Partition()], [fault])


FAMILY = FaultFamily("partition", ("partition", *KIND_NAMES), build, heal_node)
