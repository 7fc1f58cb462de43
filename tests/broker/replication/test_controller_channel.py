"""How often the controller channel sends a request its controller is slow to
answer: a forwarded CreateTopics sent again after a slow first answer finds its own
topic and tells the client TOPIC_ALREADY_EXISTS (seen on a loaded machine), so the
forwarding channel waits for the answer as Kafka's does; the heartbeat channel
moves on within a second."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from broker.replication.controller_channel import (
    FORWARDING_ATTEMPT_S,
    HEARTBEAT_ATTEMPT_S,
    ControllerChannel,
    ControllerUnavailable,
)
from broker.replication.peer_client import PeerConnection
from broker.replication.voters import Voter

REQUEST = ApiVersionsRequest(client_software_name="t", client_software_version="1")
ANSWER_AFTER_S = HEARTBEAT_ATTEMPT_S + 0.5


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

    async def call() -> object:
        channel = ControllerChannel(1, {1: Voter(1, "127.0.0.1", 9)}, lambda: 1, attempt_s)
        try:
            return await channel.call(REQUEST, timeout=ANSWER_AFTER_S * 2.5)
        except ControllerUnavailable:
            return None
        finally:
            channel.close()

    answer = asyncio.run(call())
    return sent, answer


def test_the_forwarding_channel_waits_for_a_slow_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    assert requests_sent(monkeypatch, FORWARDING_ATTEMPT_S) == (1, "answer")


def test_the_heartbeat_channel_sends_again_after_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    sent, answer = requests_sent(monkeypatch, HEARTBEAT_ATTEMPT_S)
    assert sent >= 2
    assert answer is None  # no attempt waited long enough
