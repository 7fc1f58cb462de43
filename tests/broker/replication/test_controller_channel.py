"""How often the controller channel sends a request its controller is slow to
answer: a forwarded CreateTopics sent again after a slow first answer finds its own
topic and tells the client TOPIC_ALREADY_EXISTS (seen on a loaded machine), so the
forwarding channel waits for the answer as Kafka's does; the heartbeat channel
moves on within a second."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from broker.broker import Broker
from broker.replication.controller_channel import (
    FORWARDING_ATTEMPT_S,
    HEARTBEAT_ATTEMPT_S,
    ControllerChannel,
    ControllerUnavailable,
)
from broker.replication.peer_client import PeerConnection
from broker.replication.voters import Voter
from broker.server_properties import load_config

REQUEST = ApiVersionsRequest(client_software_name="t", client_software_version="1")
ANSWER_AFTER_S = HEARTBEAT_ATTEMPT_S + 0.5


def call(
    voters: dict[int, Voter], leader: Callable[[], int], attempt_s: float, timeout: float
) -> object:
    """What one ``ControllerChannel.call`` of ``REQUEST`` returns."""

    async def run() -> object:
        channel = ControllerChannel(1, voters, leader, attempt_s)
        try:
            return await channel.call(REQUEST, timeout=timeout)
        finally:
            channel.close()

    return asyncio.run(run())


def one_voter() -> dict[int, Voter]:
    return {1: Voter(1, "127.0.0.1", 9)}


def requests_sent(monkeypatch: pytest.MonkeyPatch, attempt_s: float) -> tuple[int, object]:
    """The requests a channel of ``attempt_s`` sends to a controller that answers
    each ``ANSWER_AFTER_S`` after it came, and the answer the call returns (None
    when it gives up)."""
    sent = 0

    async def slow_exchange(_peer: PeerConnection, _entity: object) -> object:
        nonlocal sent
        sent += 1
        await asyncio.sleep(ANSWER_AFTER_S)
        return "answer"

    monkeypatch.setattr(PeerConnection, "_exchange", slow_exchange)
    try:
        answer = call(one_voter(), lambda: 1, attempt_s, ANSWER_AFTER_S * 2.5)
    except ControllerUnavailable:
        answer = None
    return sent, answer


def test_the_forwarding_channel_waits_for_a_slow_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    assert requests_sent(monkeypatch, FORWARDING_ATTEMPT_S) == (1, "answer")


def test_the_heartbeat_channel_sends_again_after_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    sent, answer = requests_sent(monkeypatch, HEARTBEAT_ATTEMPT_S)
    assert sent >= 2
    assert answer is None  # no attempt waited long enough


def test_a_create_topics_answered_not_controller_goes_to_the_next_controller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CreateTopics has no top-level error: a controller that lost its leadership
    says NOT_CONTROLLER for each topic, and the client must not get that."""
    leaders = iter([1, 2])
    leader = 1
    answers = {
        1: SimpleNamespace(topics=[SimpleNamespace(error_code=ErrorCode.not_controller)]),
        2: SimpleNamespace(topics=[SimpleNamespace(error_code=ErrorCode.none)]),
    }

    async def exchange(peer: PeerConnection, _entity: object) -> object:
        nonlocal leader
        answer = answers[peer.port]
        leader = next(leaders, leader)
        return answer

    monkeypatch.setattr(PeerConnection, "_exchange", exchange)
    voters = {n: Voter(n, "127.0.0.1", n) for n in (1, 2)}
    assert call(voters, lambda: leader, FORWARDING_ATTEMPT_S, 5) is answers[2]


def test_an_answer_whose_items_carry_no_error_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """DescribeQuorum's topics have no error code of their own."""
    quorum = SimpleNamespace(error_code=ErrorCode.none, topics=[SimpleNamespace(topic_name="m")])

    async def exchange(_peer: PeerConnection, _entity: object) -> object:
        return quorum

    monkeypatch.setattr(PeerConnection, "_exchange", exchange)
    assert call(one_voter(), lambda: 1, HEARTBEAT_ATTEMPT_S, 5) is quorum


def test_a_cluster_node_forwards_over_the_waiting_channel(tmp_path: Path) -> None:
    """The broker gives its ForwardingManager the channel that waits, and sends
    heartbeats and DescribeQuorum over the one that moves on."""
    config = load_config(
        1, "127.0.0.1:19092", tmp_path, None, ["controller.quorum.voters=1@127.0.0.1:19093"]
    )
    broker = Broker(config)
    try:
        cluster = broker.cluster
        assert cluster is not None
        assert cluster.forwarding._channel is cluster.forwarding_channel
        assert cluster.forwarding_channel._attempt_s == FORWARDING_ATTEMPT_S
        assert cluster.forwarding._reads is cluster.channel
        assert cluster.lifecycle._channel is cluster.channel
        assert cluster.channel._attempt_s == HEARTBEAT_ATTEMPT_S
    finally:
        broker.ledger.close()
