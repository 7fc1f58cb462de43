"""``__consumer_offsets`` records in Kafka's layout: OffsetCommitKey v1 /
OffsetCommitValue v3, and GroupMetadataKey v2 / GroupMetadataValue v3.

No ``from __future__ import annotations`` here: kio's codec reads the field
types of these dataclasses at run time.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i64

from broker.coordinator import serde

OFFSET_KEY_VERSION = 1
OFFSET_VALUE_VERSION = 3
GROUP_KEY_VERSION = 2
GROUP_VALUE_VERSION = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitKey:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    group: str = field(metadata={"kafka_type": "string"})
    topic: str = field(metadata={"kafka_type": "string"})
    partition: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = False
    offset: i64 = field(metadata={"kafka_type": "int64"})
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    metadata: str = field(metadata={"kafka_type": "string"})
    commit_timestamp: i64 = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataKey:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(2)
    __flexible__: ClassVar[bool] = False
    group: str = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberMetadata:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = False
    member_id: str = field(metadata={"kafka_type": "string"})
    group_instance_id: str | None = field(metadata={"kafka_type": "string"})
    client_id: str = field(metadata={"kafka_type": "string"})
    client_host: str = field(metadata={"kafka_type": "string"})
    rebalance_timeout: i32 = field(metadata={"kafka_type": "int32"})
    session_timeout: i32 = field(metadata={"kafka_type": "int32"})
    subscription: bytes = field(metadata={"kafka_type": "bytes"})
    assignment: bytes = field(metadata={"kafka_type": "bytes"})


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = False
    protocol_type: str = field(metadata={"kafka_type": "string"})
    generation: i32 = field(metadata={"kafka_type": "int32"})
    protocol: str | None = field(metadata={"kafka_type": "string"})
    leader: str | None = field(metadata={"kafka_type": "string"})
    current_state_timestamp: i64 = field(metadata={"kafka_type": "int64"})
    members: tuple[MemberMetadata, ...]


GroupRecordKey = OffsetCommitKey | GroupMetadataKey


def offset_key(group: str, topic: str, partition: int) -> bytes:
    entity = OffsetCommitKey(group=group, topic=topic, partition=i32(partition))
    return serde.encode(OFFSET_KEY_VERSION, entity)


def offset_value(offset: int, leader_epoch: int, metadata: str, timestamp_ms: int) -> bytes:
    entity = OffsetCommitValue(
        offset=i64(offset),
        leader_epoch=i32(leader_epoch),
        metadata=metadata,
        commit_timestamp=i64(timestamp_ms),
    )
    return serde.encode(OFFSET_VALUE_VERSION, entity)


def group_key(group: str) -> bytes:
    return serde.encode(GROUP_KEY_VERSION, GroupMetadataKey(group=group))


def group_value(value: GroupMetadataValue) -> bytes:
    return serde.encode(GROUP_VALUE_VERSION, value)


def decode_key(data: bytes) -> GroupRecordKey:
    """Offset keys are versions 0 and 1 (same fields); group keys are version 2."""
    version = serde.read_version(data)
    if version in (0, 1):
        return serde.decode(OffsetCommitKey, data)
    if version == GROUP_KEY_VERSION:
        return serde.decode(GroupMetadataKey, data)
    raise serde.RecordFormatError(f"unknown __consumer_offsets key version {version}")


def decode_offset_value(data: bytes) -> OffsetCommitValue:
    version = serde.read_version(data)
    if version != OFFSET_VALUE_VERSION:
        raise serde.RecordFormatError(f"unsupported offset commit value version {version}")
    return serde.decode(OffsetCommitValue, data)


def decode_group_value(data: bytes) -> GroupMetadataValue:
    version = serde.read_version(data)
    if version != GROUP_VALUE_VERSION:
        raise serde.RecordFormatError(f"unsupported group metadata value version {version}")
    return serde.decode(GroupMetadataValue, data)
