"""The marker channel's routing and retry rules: each partition's marker goes to the
leader named at that attempt (this node's replica manager, or one request per other
leader), failed partitions are retried until written, and definite refusals are
dropped. The node's own log and the network are replaced by recorders so every rule
is checked exactly; the real paths run in the cluster tests."""

from __future__ import annotations

import asyncio

import pytest

from broker.coordinator.partitioning import GROUP_TOPIC
from broker.coordinator.txn import markers
from broker.coordinator.txn.markers import MarkerChannel, TxnMarker, write_markers_until_done
from broker.errors import ErrorCode, KafkaError

TopicPartition = tuple[str, int]
ME = 1


def exists_everywhere(topic: str, partition: int) -> bool:
    return True


class LocalLog:
    """This node's replica manager as the channel sees it: refuses what it is told to."""

    def __init__(self, refuse: dict[TopicPartition, list[ErrorCode]]) -> None:
        self.refuse = refuse
        self.written: list[TopicPartition] = []

    async def append_marker(
        self, topic: str, partition: int, pid: int, epoch: int, commit: bool, coord: int
    ) -> int:
        pending = self.refuse.get((topic, partition))
        if pending:
            raise KafkaError(pending.pop(0))
        self.written.append((topic, partition))
        return len(self.written)


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(markers, "RETRY_BACKOFF_S", 0.0)


def test_partitions_go_to_their_leaders_and_retries_follow_leader_changes() -> None:
    leaders = {("t", 0): ME, ("t", 1): 2, ("t", 2): 2, ("t", 3): 3, (GROUP_TOPIC, 4): ME}
    local = LocalLog({("t", 0): [ErrorCode.not_enough_replicas]})
    remote_calls: list[tuple[int, list[TopicPartition]]] = []
    offsets_markers: list[tuple[int, bool]] = []

    def leader_of(topic: str, partition: int) -> tuple[int, str, int] | None:
        node = leaders[(topic, partition)]
        return node, f"n{node}", 9092

    async def remote(
        leader: tuple[int, str, int], marker: TxnMarker, tps: list[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        remote_calls.append((leader[0], tps))
        if leader[0] == 3:  # node 3 lost the leadership: the next attempt asks node 2
            leaders[("t", 3)] = 2
            return dict.fromkeys(tps, ErrorCode.not_leader_or_follower)
        return dict.fromkeys(tps, ErrorCode.none)

    channel = MarkerChannel(
        ME,
        local,
        lambda p, pid, e, c: offsets_markers.append((p, c)),
        exists_everywhere,
        leader_of,
        remote,
    )
    asyncio.run(write_markers_until_done(channel, TxnMarker(5, 0, True, 7), set(leaders)))
    assert sorted(local.written) == [(GROUP_TOPIC, 4), ("t", 0)]
    assert offsets_markers == [(4, True)]  # the group coordinator learns of its marker
    assert remote_calls[0] == (2, [("t", 1), ("t", 2)])
    assert (3, [("t", 3)]) in remote_calls and remote_calls[-1] == (2, [("t", 3)])


def test_definite_refusals_are_dropped_and_unknown_leaders_retried() -> None:
    local = LocalLog(
        {
            ("t", 0): [ErrorCode.producer_fenced],
            ("t", 1): [ErrorCode.request_timed_out] * 2,
            # a leader still loading the partition: Kafka retries
            ("t", 2): [ErrorCode.unknown_topic_or_partition],
        }
    )
    asked: list[TopicPartition] = []

    def leader_of(topic: str, partition: int) -> tuple[int, str, int] | None:
        asked.append((topic, partition))
        unknown_once = (topic, partition) == ("t", 2) and asked.count(("t", 2)) == 1
        return None if unknown_once else (ME, "n1", 9092)

    channel = MarkerChannel(ME, local, lambda *_: None, exists_everywhere, leader_of)
    abort = TxnMarker(5, 0, False, 7)
    asyncio.run(write_markers_until_done(channel, abort, {("t", 0), ("t", 1), ("t", 2)}))
    assert sorted(local.written) == [("t", 1), ("t", 2)]  # ("t", 0) refused for good
    assert asked.count(("t", 1)) == 3 and asked.count(("t", 2)) == 3


def test_markers_to_deleted_partitions_are_dropped() -> None:
    local = LocalLog({("t", 0): [ErrorCode.unknown_topic_or_partition] * 3})
    deleted = {("gone", 0)}

    def exists(topic: str, partition: int) -> bool:
        return (topic, partition) not in deleted

    channel = MarkerChannel(ME, local, lambda *_: None, exists, lambda t, p: (ME, "n1", 9092))
    asyncio.run(write_markers_until_done(channel, TxnMarker(5, 0, True, 7), {("t", 0), *deleted}))
    assert local.written == [("t", 0)]
