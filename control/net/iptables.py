"""Partitions as iptables DROP rules inside each node's own network stack.

Rules live in two chains of our own, `JEPKA-IN` and `JEPKA-OUT`, hooked at
the top of INPUT and OUTPUT: healing flushes only our chains, so on a real
host (ssh backend) other people's rules are never touched, and "no rules
left" is checkable by listing two chains.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from control.backends.base import Node
from control.remote import join, on_nodes

CHAIN_IN = "JEPKA-IN"
CHAIN_OUT = "JEPKA-OUT"
IPT = "iptables -w"


def _ensure_chains() -> str:
    lines = []
    for chain, hook in ((CHAIN_IN, "INPUT"), (CHAIN_OUT, "OUTPUT")):
        lines.append(f"{IPT} -N {chain} 2>/dev/null || true")
        lines.append(f"{IPT} -C {hook} -j {chain} 2>/dev/null || {IPT} -I {hook} -j {chain}")
    return " && ".join(lines)


def drop_lines(inbound: Iterable[str] = (), outbound: Iterable[str] = ()) -> str:
    """One shell line that drops packets from each `inbound` address and to
    each `outbound` address, on the node where it runs."""
    rules = [_ensure_chains()]
    rules += [join(["iptables", "-w", "-A", CHAIN_IN, "-s", a, "-j", "DROP"]) for a in inbound]
    rules += [join(["iptables", "-w", "-A", CHAIN_OUT, "-d", a, "-j", "DROP"]) for a in outbound]
    return " && ".join(rules)


def heal_line() -> str:
    """Flushes our chains (idempotent; fine when they do not exist)."""
    return f"{IPT} -F {CHAIN_IN} 2>/dev/null; {IPT} -F {CHAIN_OUT} 2>/dev/null; true"


def remove_line() -> str:
    """Unhooks and deletes our chains (teardown of a node's iptables state)."""
    parts = [heal_line()]
    for chain, hook in ((CHAIN_IN, "INPUT"), (CHAIN_OUT, "OUTPUT")):
        parts.append(f"while {IPT} -D {hook} -j {chain} 2>/dev/null; do :; done")
        parts.append(f"{IPT} -X {chain} 2>/dev/null")
    return "; ".join(parts) + "; true"


def drop_grudge(nodes: Mapping[str, Node], grudge: Mapping[str, Iterable[str]]) -> None:
    """Applies a grudge: each node drops inbound packets from every node it
    holds a grudge against (Jepsen's `drop-all!`)."""
    targets = [(nodes[dst], [nodes[src].address for src in srcs]) for dst, srcs in grudge.items()]
    on_nodes([t for t in targets if t[1]], lambda t: t[0].run(drop_lines(inbound=t[1])))


def cut_address(node: Node, address: str) -> None:
    """Drops all traffic between `node` and `address`, both directions."""
    node.run(drop_lines(inbound=[address], outbound=[address]))


def heal(nodes: Iterable[Node]) -> None:
    on_nodes(nodes, lambda n: n.run(heal_line()))


def rules(node: Node) -> list[str]:
    """The DROP rules currently in our chains on a node (for checks)."""
    out = node.run(f"{IPT} -S {CHAIN_IN} 2>/dev/null; {IPT} -S {CHAIN_OUT} 2>/dev/null; true").out
    return [line for line in out.splitlines() if line.startswith("-A ")]
