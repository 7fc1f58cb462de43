"""One ``__consumer_offsets`` partition: its groups and their offsets, rebuilt by
replaying offset commits, group metadata and transaction markers."""

from __future__ import annotations

from collections.abc import Callable

from kio.static.primitive import i32, i64

from broker.coordinator.group import records
from broker.coordinator.group.offsets import CommittedOffset, OffsetStore
from broker.coordinator.group.state import Group, GroupState, Member
from broker.coordinator.runtime import NO_PRODUCER_ID


class GroupShard:
    def __init__(self, partition: int, on_activate: Callable[[GroupShard], None]) -> None:
        self.partition = partition
        self.groups: dict[str, Group] = {}
        self.offsets = OffsetStore()
        self._on_activate = on_activate
        self._on_deactivate: list[Callable[[], None]] = []

    def replay(
        self, key: bytes, value: bytes | None, producer_id: int, producer_epoch: int
    ) -> None:
        decoded = records.decode_key(key)
        if isinstance(decoded, records.OffsetCommitKey):
            tp = (decoded.topic, int(decoded.partition))
            if value is None:
                self.offsets.delete(decoded.group, tp)
                return
            v = records.decode_offset_value(value)
            offset = {tp: CommittedOffset(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp)}
            if producer_id != NO_PRODUCER_ID:
                self.offsets.add_pending(producer_id, producer_epoch, decoded.group, offset)
            else:
                self.offsets.commit(decoded.group, offset)
            return
        if value is None:
            self.groups.pop(decoded.group, None)
            return
        self.groups[decoded.group] = group_from_record(
            decoded.group, records.decode_group_value(value)
        )

    def replay_marker(self, producer_id: int, producer_epoch: int, commit: bool) -> None:
        self.offsets.complete(producer_id, producer_epoch, commit)

    def activate(self) -> None:
        self._on_activate(self)

    def deactivate(self) -> None:
        for callback in self._on_deactivate:
            callback()
        self._on_deactivate.clear()

    def on_deactivate(self, callback: Callable[[], None]) -> None:
        self._on_deactivate.append(callback)


def group_from_record(group_id: str, value: records.GroupMetadataValue) -> Group:
    """A group as its last metadata record left it: members with their
    assignments are Stable again (they resume heartbeating), none is Empty."""
    members = {
        m.member_id: Member(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=int(m.rebalance_timeout),
            session_timeout_ms=int(m.session_timeout),
            protocol_type=value.protocol_type,
            protocols=[(value.protocol or "", bytes(m.subscription))],
            assignment=bytes(m.assignment),
        )
        for m in value.members
    }
    return Group(
        group_id=group_id,
        state=GroupState.STABLE if members else GroupState.EMPTY,
        protocol_type=value.protocol_type or None,
        protocol_name=value.protocol,
        generation=int(value.generation),
        leader_id=value.leader,
        members=members,
        static_members={
            m.group_instance_id: m.member_id for m in members.values() if m.group_instance_id
        },
        state_timestamp_ms=int(value.current_state_timestamp),
    )


def group_to_record(group: Group) -> records.GroupMetadataValue:
    protocol = group.protocol_name
    return records.GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=i32(group.generation),
        protocol=protocol,
        leader=group.leader_id,
        current_state_timestamp=i64(group.state_timestamp_ms),
        members=tuple(
            records.MemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=i32(m.rebalance_timeout_ms),
                session_timeout=i32(m.session_timeout_ms),
                subscription=m.metadata_for(protocol or ""),
                assignment=m.assignment,
            )
            for m in group.members.values()
        ),
    )
