"""`KafkaRoles` asks the cluster's brokers who holds a role: the active
controller by DescribeQuorum, which a broker forwards to it, since Metadata
names an alive broker as controller when the controllers are nodes of their
own (those get no client connection)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from broker.launcher import BrokerProcess
from control.backends.base import Node, Remote
from nemesis import roles as roles_module
from nemesis.roles import KafkaRoles

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
