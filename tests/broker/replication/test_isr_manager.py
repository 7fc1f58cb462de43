"""The leader's ISR changes reach the controller batched, as Kafka's
AlterPartitionManager sends them: one request in flight, and every change queued
meanwhile goes in the next one, so a restarted follower catching up on many
partitions costs one metadata commit instead of one per partition."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.alter_partition.v2 import response as ap_resp
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32

from broker.replication.controller_apis import NO_THROTTLE
from broker.replication.controller_channel import ControllerUnavailable
from broker.replication.isr import IsrManager

LEADER = 1
TOPICS = {"a": str(uuid.uuid4()), "b": str(uuid.uuid4())}


def image(leader: int = LEADER) -> Any:
    """Two topics of three partitions, each led by ``leader`` with ISR [1, 3]."""

    def reg(index: int) -> Any:
        return SimpleNamespace(leader=leader, isr=[1, 3], leader_epoch=4, partition_epoch=9 + index)

    topics = {
        name: SimpleNamespace(topic_id=topic_id, partitions={i: reg(i) for i in range(3)})
        for name, topic_id in TOPICS.items()
    }
    return SimpleNamespace(topic=topics.get)


def echo(request: Any) -> Any:
    """The controller accepting every change as asked."""
    return ap_resp.AlterPartitionResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        topics=tuple(
            ap_resp.TopicData(
                topic_id=t.topic_id,
                partitions=tuple(
                    ap_resp.PartitionData(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.none,
                        leader_id=BrokerId(LEADER),
                        leader_epoch=p.leader_epoch,
                        isr=p.new_isr,
                        leader_recovery_state=i8(0),
                        partition_epoch=i32(p.partition_epoch + 1),
                    )
                    for p in t.partitions
                ),
            )
            for t in request.topics
        ),
    )


def sent(request: Any) -> list[tuple[str, int, tuple[int, ...], int]]:
    names = {uuid.UUID(v): k for k, v in TOPICS.items()}
    return sorted(
        (names[t.topic_id], p.partition_index, tuple(p.new_isr), p.partition_epoch)
        for t in request.topics
        for p in t.partitions
    )


class Part:
    """A partition as the manager sees it, recording the expansions refused."""

    def __init__(self, topic: str, index: int) -> None:
        self.topic, self.index = topic, index
        self.joining: dict[int, int] = {}
        self.refused: list[int] = []

    def expansion_refused(self, replica: int) -> None:
        self.refused.append(replica)
        self.joining.pop(replica, None)


def part(topic: str, index: int) -> Any:
    return Part(topic, index)


def run_manager(scenario: Any, current: Any = None) -> list[Any]:
    """Runs ``scenario(manager, answer_gate)`` and returns the requests sent."""
    requests: list[Any] = []

    async def main() -> None:
        gate = asyncio.Event()

        async def call_controller(request: Any, _timeout: float) -> Any:
            requests.append(request)
            await gate.wait()
            return echo(request)

        manager = IsrManager(
            LEADER, {}, lambda: current or image(), lambda: 7, call_controller, 10_000
        )
        await scenario(manager, gate)
        while manager._sender is not None and not manager._sender.done():
            await asyncio.sleep(0)

    asyncio.run(main())
    return requests


def test_changes_queued_while_one_is_in_flight_go_in_one_request() -> None:
    async def scenario(manager: IsrManager, gate: asyncio.Event) -> None:
        manager.expand(part("a", 0), 2)
        await asyncio.sleep(0)  # the first request is now in flight
        for topic, index in [("a", 1), ("a", 2), ("b", 0), ("b", 2)]:
            manager.expand(part(topic, index), 2)
        manager.expand(part("a", 0), 2)  # in flight already: not sent twice
        manager.expand(part("a", 1), 2)  # queued already
        gate.set()

    first, second = run_manager(scenario)
    assert first.broker_id == LEADER and first.broker_epoch == 7
    assert sent(first) == [("a", 0, (1, 3, 2), 9)]
    assert sent(second) == [
        ("a", 1, (1, 3, 2), 10),
        ("a", 2, (1, 3, 2), 11),
        ("b", 0, (1, 3, 2), 9),
        ("b", 2, (1, 3, 2), 11),
    ]


def test_no_request_for_partitions_led_elsewhere_or_already_in_sync() -> None:
    async def scenario(manager: IsrManager, gate: asyncio.Event) -> None:
        manager.expand(part("a", 0), 3)  # already in the ISR
        manager.expand(part("c", 0), 2)  # unknown topic
        gate.set()

    assert run_manager(scenario) == []
    led_elsewhere = run_manager(_expand_all, current=image(leader=2))
    assert led_elsewhere == []


async def _expand_all(manager: IsrManager, gate: asyncio.Event) -> None:
    for topic in TOPICS:
        for index in range(3):
            manager.expand(part(topic, index), 2)
    gate.set()


def test_an_expansion_with_nothing_to_ask_is_left_to_the_metadata() -> None:
    parts = [part("a", 0), part("c", 0)]

    async def scenario(manager: IsrManager, gate: asyncio.Event) -> None:
        assert manager.expand(parts[0], 3)  # already in the ISR
        assert manager.expand(parts[1], 2)  # unknown topic
        gate.set()

    assert run_manager(scenario) == []
    assert [p.refused for p in parts] == [[], []]


@pytest.mark.parametrize(
    ("answer", "refused", "sent"),
    [
        ("accepted", [], 1),
        (ErrorCode.ineligible_replica, [2], 1),
        (ErrorCode.invalid_update_version, [], 1),  # may be an earlier copy's commit
        ("unavailable", [], 2),  # sent again while still undecided
    ],
)
def test_only_a_refusal_ends_an_expansion(answer: Any, refused: list[int], sent: int) -> None:
    proposals = [part("a", 0), part("a", 1)]
    requests: list[Any] = []

    async def main() -> None:
        async def call_controller(request: Any, _timeout: float) -> Any:
            requests.append(request)
            if answer == "unavailable" and len(requests) == 1:
                raise ControllerUnavailable("no controller")
            response = echo(request)
            if isinstance(answer, ErrorCode):
                response = replace(response, topics=tuple(
                    replace(t, partitions=tuple(
                        replace(p, error_code=answer) for p in t.partitions
                    ))
                    for t in response.topics
                ))  # fmt: skip
            proposals[0].joining.pop(2, None)  # the metadata decides it
            return response

        manager = IsrManager(LEADER, {}, image, lambda: 7, call_controller, 10_000)
        assert manager.expand(proposals[0], 2)
        proposals[0].joining[2] = 9
        assert not manager.expand(proposals[0], 2)  # one change per partition at a time
        manager._propose(proposals[1], lambda isr: isr[:1], None)  # a shrink ends nothing
        for _ in range(40):
            await asyncio.sleep(0.05)
        while manager._sender is not None and not manager._sender.done():
            await asyncio.sleep(0)

    asyncio.run(main())
    assert [p.refused for p in proposals] == [refused, []]
    assert sum(any(p.partition_index == 0 for t in r.topics for p in t.partitions)
               for r in requests) == sent  # fmt: skip
