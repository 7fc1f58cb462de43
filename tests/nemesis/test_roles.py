"""`KafkaRoles` asks the cluster's brokers who holds a role: the active
controller by DescribeQuorum, which a broker forwards to it, since Metadata
names an alive broker as controller when the controllers are nodes of their
own (those get no client connection)."""

from __future__ import annotations

import datetime
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta

from broker.launcher import BrokerProcess
from control.backends.base import Node, Remote
from nemesis import roles as roles_module
from nemesis.roles import ASK_NODE_S, GRACE_S, KafkaRoles, RoleLookupError, first_answer

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
    real = (
        roles_module.quorum_leader,
        roles_module.find_coordinator,
        roles_module.partition_leaders,
    )
    silent = ("127.0.0.2", "127.0.0.3")

    def to(address: str, port: int) -> tuple[str, int]:
        return ("127.0.0.1", silent_port) if address in silent else (address, port)

    monkeypatch.setattr(roles_module, "quorum_leader", lambda a, p, t=5.0: real[0](*to(a, p), t))
    monkeypatch.setattr(
        roles_module, "find_coordinator", lambda a, p, k, key, t=5.0: real[1](*to(a, p), k, key, t)
    )
    monkeypatch.setattr(
        roles_module, "partition_leaders", lambda a, p, t=5.0: real[2](*to(a, p), t)
    )
    paused = [node("n1", 1, "127.0.0.2"), node("n2", 2, "127.0.0.3")]
    roles = KafkaRoles([*paused, node("n7", 7)], single_node.port)
    try:
        t0 = time.monotonic()
        assert roles.controller() == "n7"
        assert roles.coordinator("transaction", "jepka-txn-0") == "n7"
        # the lookup created the coordinator's topic, led by the one broker
        assert roles.leader("__transaction_state", 0) == "n7"
        assert time.monotonic() - t0 < 3 * (ASK_NODE_S + GRACE_S) + 1  # one timeout each, not two
    finally:
        roles.close()
    alone = KafkaRoles(paused, single_node.port)
    try:
        t0 = time.monotonic()
        with pytest.raises(RoleLookupError, match=r"answered FindCoordinator: n1: .*; n2: "):
            alone.coordinator("group", "g")
        with pytest.raises(RoleLookupError, match=r"answered Metadata: n1: .*; n2: "):
            alone.leaders()
        assert time.monotonic() - t0 < 2 * (ASK_NODE_S + GRACE_S) + 1
    finally:
        alone.close()


def metadata(*topics: tuple[str, int, list[int]]) -> Any:
    """A Metadata v9 response: per topic its name, error code and partitions'
    leaders (partition i led by the i-th id)."""
    from kio.schema.metadata.v9 import response as md

    def partition(index: int, leader: int) -> Any:
        return md.MetadataResponsePartition(
            error_code=ErrorCode(0), partition_index=i32(index), leader_id=BrokerId(leader)
        )

    return md.MetadataResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        brokers=(),
        topics=tuple(
            md.MetadataResponseTopic(
                error_code=ErrorCode(error),
                name=TopicName(name),
                partitions=tuple(partition(i, x) for i, x in enumerate(leaders)),
            )
            for name, error, leaders in topics
        ),
    )


def test_leaders_are_of_the_partitions_that_have_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Internal topics only when named, no leaderless partition, no topic
    answered with an error (unknown, or being deleted)."""
    answer = metadata(
        ("jepka-t0", 0, [2, -1]),
        ("__consumer_offsets", 0, [1]),
        ("gone", ErrorCode.unknown_topic_or_partition, [3]),
    )
    monkeypatch.setattr(roles_module, "_exchange", lambda *args: answer)
    roles = KafkaRoles([node("n1", 1), node("n2", 2), node("n3", 3)], 9092)
    assert roles_module.partition_leaders("127.0.0.1", 9092) == [
        ("__consumer_offsets", 0, 1),
        ("jepka-t0", 0, 2),
    ]
    assert roles.leaders() == ["n2"]
    assert roles.leader() == "n2"
    assert roles.leader("__consumer_offsets", 0) == "n1"
    with pytest.raises(RoleLookupError, match="no leader known for jepka-t0 partition 1"):
        roles.leader("jepka-t0", 1)


def test_the_first_node_in_order_that_answers_is_believed() -> None:
    """Not the quickest: the answer does not depend on timing."""
    nodes = [node("n1", 1), node("n2", 2), node("n3", 3)]
    delays = {"n1": 0.3, "n2": 0.0, "n3": 0.0}

    def ask(n: Node) -> str:
        time.sleep(delays[n.name])
        return f"{n.name} says n9"

    assert first_answer(nodes, ask, "X", timeout=2) == "n1 says n9"


def test_a_node_that_fails_or_answers_too_late_makes_way_for_the_next() -> None:
    nodes = [node("n1", 1), node("n2", 2), node("n3", 3)]

    def ask(n: Node) -> str:
        if n.name == "n1":
            raise struct.error("unpack requires a buffer of 4 bytes")  # a garbled answer
        if n.name == "n2":
            time.sleep(3)  # past the timeout and its grace
        return f"{n.name} answered"

    t0 = time.monotonic()
    assert first_answer(nodes, ask, "X", timeout=0.5) == "n3 answered"
    assert time.monotonic() - t0 < 2
    with pytest.raises(
        RoleLookupError, match=r"no broker answered X: n1: unpack .*; n2: no answer"
    ):
        first_answer(nodes[:2], ask, "X", timeout=0.5)
    with pytest.raises(RoleLookupError, match="none asked"):
        first_answer([], ask, "X")
