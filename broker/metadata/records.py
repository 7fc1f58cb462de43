"""Metadata records: every change to cluster state is one of these, appended to the
metadata log by the active controller and replayed by every node (KRaft's
``common/metadata/*Record.json``).

Each record is stored as one JSON object with a ``type`` tag. Decoding checks the
tag, the field names and the field types, and says which record and field is wrong.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import MISSING, asdict, dataclass, fields

NO_LEADER = -1
NO_LEADER_CHANGE = -2


class MetadataRecordError(ValueError):
    """Bytes that are not a valid metadata record."""


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    """A broker (re)joins; its epoch is this record's offset. It starts fenced."""

    broker_id: int
    broker_epoch: int
    incarnation_id: str
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class FenceBrokerRecord:
    """The broker missed its session (or shut down): it may lead nothing."""

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class UnfenceBrokerRecord:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class TopicRecord:
    name: str
    topic_id: str


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    topic_id: str


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    """A topic (or broker) configuration override; ``value`` None removes it."""

    resource_type: str
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    topic_id: str
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    """A change of leader and/or ISR. Replaying it bumps the partition epoch always and
    the leader epoch when the leader changes (``NO_LEADER_CHANGE`` keeps it)."""

    topic_id: str
    partition_id: int
    leader: int = NO_LEADER_CHANGE
    isr: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class ProducerIdsRecord:
    """A block of producer ids handed to a broker: everything below ``next_producer_id``
    is taken."""

    broker_id: int
    broker_epoch: int
    next_producer_id: int


MetadataRecord = (
    RegisterBrokerRecord
    | UnregisterBrokerRecord
    | FenceBrokerRecord
    | UnfenceBrokerRecord
    | TopicRecord
    | RemoveTopicRecord
    | ConfigRecord
    | PartitionRecord
    | PartitionChangeRecord
    | ProducerIdsRecord
)
RECORD_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        RegisterBrokerRecord,
        UnregisterBrokerRecord,
        FenceBrokerRecord,
        UnfenceBrokerRecord,
        TopicRecord,
        RemoveTopicRecord,
        ConfigRecord,
        PartitionRecord,
        PartitionChangeRecord,
        ProducerIdsRecord,
    )
}


def encode_record(record: MetadataRecord) -> bytes:
    return json.dumps({"type": type(record).__name__, **asdict(record)}).encode()


def decode_record(raw: bytes) -> MetadataRecord:
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MetadataRecordError(f"metadata record is not JSON: {exc}") from exc
    if not isinstance(obj, dict) or obj.get("type") not in RECORD_TYPES:
        tag = obj.get("type") if isinstance(obj, dict) else type(obj).__name__
        raise MetadataRecordError(f"unknown metadata record type {tag!r}")
    cls = RECORD_TYPES[obj.pop("type")]
    hints = typing.get_type_hints(cls)
    names = {f.name for f in fields(cls)}
    required = {f.name for f in fields(cls) if f.default is MISSING}
    if unknown := set(obj) - names:
        raise MetadataRecordError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
    if missing := required - set(obj):
        raise MetadataRecordError(f"{cls.__name__}: missing fields {sorted(missing)}")
    values = {name: _convert(cls.__name__, name, hints[name], value) for name, value in obj.items()}
    return cls(**values)  # type: ignore[no-any-return]


def _convert(record: str, name: str, hint: object, value: object) -> object:
    optional = isinstance(hint, types.UnionType) and type(None) in typing.get_args(hint)
    if value is None and optional:
        return None
    base = next(a for a in typing.get_args(hint) if a is not type(None)) if optional else hint
    if base is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if base is str and isinstance(value, str):
        return value
    if (
        typing.get_origin(base) is tuple
        and isinstance(value, list)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return tuple(value)
    raise MetadataRecordError(f"{record}.{name}: {value!r} is not a valid {base}")
