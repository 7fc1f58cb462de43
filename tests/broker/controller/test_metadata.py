"""Metadata records, images, deltas, snapshots and the loader's publishing."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.metadata.image import EMPTY_IMAGE, MetadataDelta, MetadataImage
from broker.metadata.loader import MetadataLoader, decode_snapshot, encode_snapshot
from broker.metadata.local_changes import local_changes
from broker.metadata.records import (
    RECORD_TYPES,
    ConfigRecord,
    FenceBrokerRecord,
    MetadataRecordError,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RemoveTopicRecord,
    TopicRecord,
    decode_record,
    encode_record,
)
from broker.raft.entries import LogEntry, OffsetAndEpoch, Snapshot
from tests.broker.controller.images import cluster_image, with_partition, with_records

# Every registered record type, every field (defaulted ones too) drawn from its type.
records = st.one_of(
    *(
        st.builds(cls, **dict.fromkeys((f.name for f in dataclasses.fields(cls)), ...))
        for cls in RECORD_TYPES.values()
    )
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(records)
def test_records_round_trip(record: object) -> None:
    assert decode_record(encode_record(record)) == record  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\xff", "not JSON"),
        (b"[]", "unknown metadata record type 'list'"),
        (b'{"type": "Nope"}', "unknown metadata record type 'Nope'"),
        (b'{"type": "TopicRecord", "name": "a"}', r"TopicRecord: missing fields \['topic_id'\]"),
        (b'{"type": "TopicRecord", "name": "a", "topic_id": "b", "x": 1}', "unknown fields"),
        (
            b'{"type": "FenceBrokerRecord", "broker_id": "1", "broker_epoch": 1}',
            "FenceBrokerRecord.broker_id: '1' is not a valid",
        ),
        (
            b'{"type": "PartitionChangeRecord", "topic_id": "t", "partition_id": 0, "isr": [true]}',
            "PartitionChangeRecord.isr",
        ),
    ],
)
def test_bad_records_are_named(raw: bytes, message: str) -> None:
    with pytest.raises(MetadataRecordError, match=message):
        decode_record(raw)


def test_replay_rejects_dangling_references() -> None:
    delta = MetadataDelta(EMPTY_IMAGE)
    with pytest.raises(MetadataRecordError, match="unknown topic id nope"):
        delta.replay(PartitionRecord("nope", 0, (1,), (1,), 1), 0)
    with pytest.raises(MetadataRecordError, match="broker 4 epoch 1 is not registered"):
        delta.replay(FenceBrokerRecord(4, 1), 1)
    delta.replay(TopicRecord("t", "id"), 2)
    with pytest.raises(MetadataRecordError, match="leader 5 is not a replica"):
        delta.replay(PartitionRecord("id", 0, (1, 2), (1, 2), 5), 3)


def test_images_are_immutable_and_share_unchanged_topics() -> None:
    image = with_partition(
        with_partition(cluster_image([1, 2]), (1, 2), (1, 2), 1, "a"), (2, 1), (2, 1), 2, "b"
    )
    after = with_records(image, [PartitionChangeRecord("id-a", 0, isr=(1,))])
    assert after.topics["id-b"] is image.topics["id-b"]
    assert image.partition("id-a", 0).isr == (1, 2)  # type: ignore[union-attr]
    with pytest.raises(TypeError):
        after.topics["id-c"] = after.topics["id-a"]  # type: ignore[index]


def test_delta_lists_changed_partitions() -> None:
    image = with_partition(cluster_image([1, 2, 3]), (1, 2, 3), (1, 2, 3), 1)
    delta = MetadataDelta(image)
    delta.replay(PartitionChangeRecord("id-t", 0, leader=2, isr=(2, 3)), image.offset)
    ((name, p, before, after),) = list(delta.changed_partitions())
    assert (name, p, before.leader, after.leader, after.leader_epoch) == ("t", 0, 1, 2, 1)  # type: ignore[union-attr]
    removal = MetadataDelta(image)
    removal.replay(RemoveTopicRecord("id-t"), image.offset)
    assert [(n, a) for n, _, _, a in removal.changed_partitions()] == [("t", None)]
    assert removal.apply().topic("t") is None


def rich_image() -> MetadataImage:
    image = with_partition(cluster_image([1, 2, 3], fenced=(3,)), (1, 2, 3), (1, 2), 1)
    return with_records(
        image,
        [
            ConfigRecord("topic", "t", "min.insync.replicas", "2"),
            PartitionChangeRecord("id-t", 0, leader=2),
            ProducerIdsRecord(1, 101, 5000),
        ],
    )


def test_snapshot_round_trip_rebuilds_the_same_image() -> None:
    image = rich_image()
    rebuilt = decode_snapshot(encode_snapshot(image), image.offset).apply()
    assert rebuilt == image


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[list[str], MetadataImage]] = []

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.seen.append(([name for name, *_ in delta.changed_partitions()], image))


def test_loader_publishes_committed_images_and_snapshots() -> None:
    loader = MetadataLoader()
    recorder = Recorder()
    loader.install_publisher(recorder)
    entries = [
        LogEntry(0, 1, encode_record(TopicRecord("t", "id-t"))),
        LogEntry(1, 1, encode_record(PartitionRecord("id-t", 0, (1,), (1,), 1))),
    ]
    loader.handle_commit(entries)
    assert recorder.seen[-1][0] == ["t"] and recorder.seen[-1][1].offset == 2
    image = rich_image()
    loader.handle_load_snapshot(Snapshot(OffsetAndEpoch(3, image.offset), encode_snapshot(image)))
    assert loader.image == image
    with pytest.raises(MetadataRecordError, match="snapshot line 1"):
        loader.handle_load_snapshot(Snapshot(OffsetAndEpoch(3, 9), b'{"type": "X"}'))


def test_a_snapshot_is_published_with_the_entries_after_it_never_alone() -> None:
    """A restarting node loads its own snapshot, older than the log it then
    catches up on: its broker must never see the snapshot's leaderships alone
    (it would lead partitions in epochs long gone)."""
    old = with_records(
        cluster_image([1, 2]),
        [TopicRecord("t", "id-t"), PartitionRecord("id-t", 0, (1, 2), (1, 2), 1, leader_epoch=4)],
    )
    loader = MetadataLoader()
    recorder = Recorder()
    loader.install_publisher(recorder)
    loader.handle_load_snapshot(Snapshot(OffsetAndEpoch(3, old.offset), encode_snapshot(old)))
    assert len(recorder.seen) == 1  # only the empty image given at install
    moved = PartitionChangeRecord("id-t", 0, leader=2, isr=(2,))
    loader.handle_commit([LogEntry(old.offset, 3, encode_record(moved))])
    assert len(recorder.seen) == 2
    (partition,) = recorder.seen[-1][1].topics["id-t"].partitions.values()
    assert (partition.leader, partition.leader_epoch) == (2, 5)
    # a snapshot nothing followed goes out with the (empty) commit after it
    loader.handle_load_snapshot(Snapshot(OffsetAndEpoch(3, old.offset), encode_snapshot(old)))
    loader.handle_commit([])
    assert len(recorder.seen) == 3 and recorder.seen[-1][1] == old


def test_local_changes_tell_a_broker_what_to_lead_follow_and_drop() -> None:
    image = with_partition(cluster_image([1, 2, 3]), (1, 2), (1, 2), 1, "a")
    image = with_partition(image, (2, 3), (2, 3), 2, "b")
    delta = MetadataDelta(image)
    delta.replay(PartitionChangeRecord("id-a", 0, leader=2, isr=(2,)), image.offset)
    delta.replay(RemoveTopicRecord("id-b"), image.offset + 1)
    for_2 = local_changes(delta, 2)
    assert list(for_2.leaders) == [("a", 0)] and for_2.leaders[("a", 0)].leader_epoch == 1
    assert for_2.deletes == {("b", 0)} and not for_2.followers
    for_1 = local_changes(delta, 1)
    assert list(for_1.followers) == [("a", 0)] and not for_1.leaders
    assert local_changes(delta, 3).deletes == {("b", 0)}
