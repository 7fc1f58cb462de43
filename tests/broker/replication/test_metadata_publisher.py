"""The broker's metadata publisher tells the replica fetchers of every change of the
local replicas, so each fetch loop follows what its leader leads for this node: a
leader change moves a partition to the new leader's loop, a new replica joins its
leader's, a deleted one leaves — and the fetchers hear of what got applied even
when opening a log fails part-way."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.broker import Broker
from broker.metadata.image import MetadataDelta, MetadataImage
from broker.metadata.records import (
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from broker.server.replica_manager import ReplicaManager
from broker.server_properties import load_config
from tests.broker.controller.images import cluster_image, with_records


def followed(broker: Broker) -> dict[int, list[tuple[str, int]]]:
    """Each leader's partitions this node follows, as its fetchers hold them."""
    assert broker.cluster is not None
    fetchers = broker.cluster.fetchers
    return {leader: sorted(fetchers.followed(leader)) for leader in (1, 2, 3)}


def publish(broker: Broker, image: MetadataImage) -> None:
    assert broker.publisher is not None
    broker.publisher.on_metadata_update(MetadataDelta(image), image)


def test_the_fetchers_follow_each_change_of_the_local_replicas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(
        2,
        "127.0.0.1:19092",
        tmp_path,
        None,
        ["controller.quorum.voters=1@127.0.0.1:9", "process.roles=broker"],
    )
    broker = Broker(config)
    start = with_records(
        cluster_image([1, 2, 3]),
        [
            TopicRecord("t", "id-t"),
            PartitionRecord("id-t", 0, (1, 2, 3), (1, 2, 3), 1),
            PartitionRecord("id-t", 1, (3, 2, 1), (3, 2, 1), 3),
            PartitionRecord("id-t", 2, (2, 1, 3), (2, 1, 3), 2),  # led here
            PartitionRecord("id-t", 3, (1, 3), (1, 3), 1),  # not hosted here
        ],
    )
    moved = with_records(
        start,
        [
            PartitionChangeRecord("id-t", 0, leader=3),
            TopicRecord("u", "id-u"),
            PartitionRecord("id-u", 0, (1, 2), (1, 2), 1),
        ],
    )
    open_log = ReplicaManager.open_log

    def fails_for_v(manager: ReplicaManager, tp: tuple[str, int], *args: object) -> object:
        if tp[0] == "v":
            raise OSError("disk full")
        return open_log(manager, tp, *args)  # type: ignore[arg-type]

    async def scenario() -> None:
        publish(broker, start)
        assert followed(broker) == {1: [("t", 0)], 2: [], 3: [("t", 1)]}
        publish(broker, moved)
        assert followed(broker) == {1: [("u", 0)], 2: [], 3: [("t", 0), ("t", 1)]}
        publish(broker, with_records(moved, [RemoveTopicRecord("id-u")]))
        assert followed(broker) == {1: [], 2: [], 3: [("t", 0), ("t", 1)]}
        monkeypatch.setattr(ReplicaManager, "open_log", fails_for_v)
        failing = with_records(
            moved,
            [
                RemoveTopicRecord("id-u"),
                PartitionChangeRecord("id-t", 1, leader=1),
                TopicRecord("v", "id-v"),
                PartitionRecord("id-v", 0, (3, 2), (3, 2), 3),
            ],
        )
        with pytest.raises(OSError, match="disk full"):
            publish(broker, failing)
        assert followed(broker) == {1: [("t", 1)], 2: [], 3: [("t", 0)]}
        assert broker.cluster is not None
        await broker.cluster.fetchers.stop()

    try:
        asyncio.run(scenario())
    finally:
        broker.replica_manager.close()
        broker.ledger.close()
