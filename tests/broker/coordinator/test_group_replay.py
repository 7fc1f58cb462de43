"""``__consumer_offsets`` records and replay: offsets, group metadata and the
transactional offsets that only a COMMIT marker makes visible."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.coordinator.group import records
from broker.coordinator.group.offsets import CommittedOffset
from broker.coordinator.group.shard import GroupShard, group_from_record, group_to_record
from broker.coordinator.group.state import Group, GroupState, Member
from broker.coordinator.runtime import build_batch, replay_batch
from broker.log.batch import control_batch, iter_batches


def replay(shard: GroupShard, data: bytes) -> None:
    for pos, header in iter_batches(data):
        replay_batch(shard, header, data[pos : pos + header.size])


def offset_record(group: str, topic: str, partition: int, offset: int) -> tuple[bytes, bytes]:
    return records.offset_key(group, topic, partition), records.offset_value(offset, 3, "m", 1000)


def new_shard() -> GroupShard:
    return GroupShard(0, lambda shard: None)


def test_plain_commits_and_tombstones_replay() -> None:
    shard = new_shard()
    replay(shard, build_batch([offset_record("g", "t", 0, 5), offset_record("g", "t", 1, 9)]))
    replay(shard, build_batch([offset_record("g", "t", 0, 7)]))
    assert shard.offsets.fetch("g") == {
        ("t", 0): CommittedOffset(7, 3, "m", 1000),
        ("t", 1): CommittedOffset(9, 3, "m", 1000),
    }
    replay(shard, build_batch([(records.offset_key("g", "t", 1), None)]))
    assert set(shard.offsets.fetch("g")) == {("t", 0)}


def test_transactional_offsets_wait_for_the_commit_marker() -> None:
    shard = new_shard()
    replay(shard, build_batch([offset_record("g", "t", 0, 10)], producer_id=42, producer_epoch=1))
    assert shard.offsets.fetch("g") == {} and shard.offsets.has_pending("g", ("t", 0))
    replay(shard, bytes(control_batch(42, 1, True, 0, 0)))
    assert shard.offsets.fetch("g")[("t", 0)].offset == 10
    assert not shard.offsets.has_pending("g", ("t", 0))


def test_aborted_transactional_offsets_are_dropped_and_zombies_fenced() -> None:
    shard = new_shard()
    replay(shard, build_batch([offset_record("g", "t", 0, 4)]))
    replay(shard, build_batch([offset_record("g", "t", 0, 10)], producer_id=42, producer_epoch=1))
    replay(shard, bytes(control_batch(42, 2, False, 0, 0)))
    assert shard.offsets.fetch("g")[("t", 0)].offset == 4
    assert shard.offsets.is_fenced(42, 1) and not shard.offsets.is_fenced(42, 2)


def test_group_metadata_round_trips_through_its_record() -> None:
    group = Group("g", GroupState.STABLE, "consumer", "range", 4, "m1")
    group.members["m1"] = Member(
        "m1", "i1", "c", "/h", 300, 10_000, "consumer", [("range", b"S")], b"A"
    )
    group.static_members["i1"] = "m1"
    shard = new_shard()
    replay(
        shard, build_batch([(records.group_key("g"), records.group_value(group_to_record(group)))])
    )
    loaded = shard.groups["g"]
    assert (loaded.state, loaded.generation, loaded.leader_id, loaded.protocol_name) == (
        GroupState.STABLE, 4, "m1", "range",
    )  # fmt: skip
    member = loaded.members["m1"]
    assert (member.assignment, member.metadata_for("range"), member.group_instance_id) == (
        b"A",
        b"S",
        "i1",
    )
    assert loaded.static_members == {"i1": "m1"}
    replay(shard, build_batch([(records.group_key("g"), None)]))
    assert "g" not in shard.groups


def test_an_empty_group_loads_as_empty() -> None:
    value = group_to_record(Group("g", GroupState.EMPTY, "consumer", None, 7))
    loaded = group_from_record("g", value)
    assert loaded.state is GroupState.EMPTY and loaded.generation == 7 and not loaded.members


@given(
    st.text(max_size=30),
    st.text(max_size=30),
    st.integers(0, 2**31 - 1),
    st.integers(-1, 2**63 - 1),
    st.integers(-1, 2**31 - 1),
    st.text(max_size=100),
)
def test_offset_records_round_trip(
    group: str, topic: str, partition: int, offset: int, epoch: int, metadata: str
) -> None:
    key = records.decode_key(records.offset_key(group, topic, partition))
    assert isinstance(key, records.OffsetCommitKey)
    assert (key.group, key.topic, key.partition) == (group, topic, partition)
    value = records.decode_offset_value(records.offset_value(offset, epoch, metadata, 5))
    assert (value.offset, value.leader_epoch, value.metadata, value.commit_timestamp) == (
        offset, epoch, metadata, 5,
    )  # fmt: skip
