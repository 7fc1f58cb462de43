"""``__transaction_state`` records in Kafka's layout (TransactionLogKey v0,
TransactionLogValue v0).

No ``from __future__ import annotations`` here: kio's codec reads the field
types of these dataclasses at run time.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i64

from broker.coordinator import serde

KEY_VERSION = 0
VALUE_VERSION = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionLogKey:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    transactional_id: str = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionLogPartitions:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    topic: str = field(metadata={"kafka_type": "string"})
    partition_ids: tuple[i32, ...] = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionLogValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    producer_id: i64 = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    transaction_timeout_ms: i32 = field(metadata={"kafka_type": "int32"})
    transaction_status: i8 = field(metadata={"kafka_type": "int8"})
    transaction_partitions: tuple[TransactionLogPartitions, ...] | None
    transaction_last_update_timestamp_ms: i64 = field(metadata={"kafka_type": "int64"})
    transaction_start_timestamp_ms: i64 = field(metadata={"kafka_type": "int64"})


def encode_key(transactional_id: str) -> bytes:
    return serde.encode(KEY_VERSION, TransactionLogKey(transactional_id=transactional_id))


def decode_key(data: bytes) -> str:
    version = serde.read_version(data)
    if version != KEY_VERSION:
        raise serde.RecordFormatError(f"unknown transaction log key version {version}")
    return serde.decode(TransactionLogKey, data).transactional_id


def encode_value(value: TransactionLogValue) -> bytes:
    return serde.encode(VALUE_VERSION, value)


def decode_value(data: bytes) -> TransactionLogValue:
    version = serde.read_version(data)
    if version != VALUE_VERSION:
        raise serde.RecordFormatError(f"unknown transaction log value version {version}")
    return serde.decode(TransactionLogValue, data)
