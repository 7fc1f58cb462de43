"""`KafkaRoles` asks the cluster's brokers who holds a role: the active
controller by DescribeQuorum, which a broker forwards to it, since Metadata
names an alive broker as controller when the controllers are nodes of their
own (those get no client connection)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from broker.launcher import BrokerProcess
from control.backends.base import Node, Remote
from nemesis import roles as roles_module
from nemesis.roles import ASK_NODE_S, KafkaRoles, RoleLookupError

pytestmark = [pytest.mark.broker, pytest.mark.integration]


@pytest.fixture
def single_node(tmp_path: Path) -> Iterator[BrokerProcess]:
    broker = BrokerProcess(tmp_path / "n7", node_id=7).start()
    yield broker
    broker.kill()


def node(name: str, node_id: int, address: str = "127.0.0.1") -> Node:
    return Node(name, address, cast(Remote, None), "", node_id)


def test_the_controller_is_asked_of_the_brokers_only(
    single_node: BrokerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the controller-only node comes first, at an address nothing answers on
    controller, broker = node("n9", 9, "198.18.255.254"), node("n7", 7)
    asked: list[str] = []
    real = roles_module.quorum_leader

    def recording(address: str, port: int, timeout: float = 5.0) -> int:
        asked.append(address)
        return real(address, port, timeout)

    monkeypatch.setattr(roles_module, "quorum_leader", recording)
    roles = KafkaRoles([controller, broker], single_node.port, brokers=[broker])
    try:
        assert roles.controller() == "n7"  # a single node is its own quorum's leader
        assert asked == ["127.0.0.1"]
    finally:
        roles.close()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that takes connections and never answers, as a paused broker's does."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


def test_a_silent_broker_costs_one_timeout_not_one_each(
    single_node: BrokerProcess, silent_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every broker is asked at once: the nemesis, which waits for the answer
    before its next fault, is held up by silent brokers for one timeout in
    all, and the first broker in order that answers is the one believed."""
    real = (roles_module.quorum_leader, roles_module.find_coordinator)
    silent = ("127.0.0.2", "127.0.0.3")

    def to(address: str, port: int) -> tuple[str, int]:
        return ("127.0.0.1", silent_port) if address in silent else (address, port)

    monkeypatch.setattr(roles_module, "quorum_leader", lambda a, p, t=5.0: real[0](*to(a, p), t))
    monkeypatch.setattr(
        roles_module, "find_coordinator", lambda a, p, k, key, t=5.0: real[1](*to(a, p), k, key, t)
    )
    paused = [node("n1", 1, "127.0.0.2"), node("n2", 2, "127.0.0.3")]
    roles = KafkaRoles([*paused, node("n7", 7)], single_node.port)
    try:
        t0 = time.monotonic()
        assert roles.controller() == "n7"
        assert roles.coordinator("transaction", "jepka-txn-0") == "n7"
        assert time.monotonic() - t0 < 2 * ASK_NODE_S + 1  # one timeout each, not two
        alone = KafkaRoles(paused, single_node.port)
        t0 = time.monotonic()
        with pytest.raises(RoleLookupError, match=r"n1: timed out; n2: timed out"):
            alone.coordinator("group", "g")
        assert time.monotonic() - t0 < ASK_NODE_S + 1
        alone.close()
    finally:
        roles.close()
