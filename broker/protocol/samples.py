"""Valid request frames for any kio schema, and where their lengths sit: for
checking the frame guard against every schema (tests) and for the fuzz campaign's
seed frames and structure-aware mutations (``bench/fuzz_broker.py``).

``Sampler`` fills every field by its kafka_type: arrays get 0-3 elements, nullable
fields are sometimes null and tagged fields sometimes set. Strings are drawn from
``strings`` and integers lean to small values, so that a seed naming existing topics
and partitions reaches past a handler's first check. ``length_spots`` finds every
length and count in an encoding from the sizes kio's own writer gives each field,
independently of the guard's walk.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import random
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_writer
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from kio.serial._serialize import get_field_writer, get_writer

from broker.protocol.frame_guard import read_uvarint

INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
UINT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
ERROR_CODES = tuple(ErrorCode)
UVARINT, INT16, INT32 = "uvarint", "int16", "int32"
MAXIMUM = {UVARINT: (1 << 35) - 1, INT16: (1 << 15) - 1, INT32: (1 << 31) - 1}  # as kio reads
Spot = tuple[int, str]  # offset of a length or count, and its encoding


@dataclasses.dataclass(frozen=True)
class Sampler:
    """Draws sample values from ``rng``; ``records`` fills record-batch fields."""

    rng: random.Random
    strings: Sequence[str] = ("sample",)
    records: bytes = b""
    null_chance: float = 0.2
    tag_chance: float = 0.5

    def entity(self, entity_type: type) -> Any:
        values = {}
        for field in dataclasses.fields(entity_type):
            if get_field_tag(field) is not None and self.rng.random() >= self.tag_chance:
                values[field.name] = get_tagged_field_default(field)
            else:
                values[field.name] = self.field(field)
        return entity_type(**values)

    def field(self, field: dataclasses.Field) -> Any:
        if is_optional(field) and self.rng.random() < self.null_chance:
            return None
        kind = classify_field(field)
        if isinstance(kind, EntityField):
            return self.entity(kind.type_)
        if isinstance(kind, EntityTupleField):
            return tuple(self.entity(kind.type_) for _ in range(self.rng.randint(0, 3)))
        if kind.is_array:
            kafka_type = get_schema_field_type(field)
            return tuple(self.primitive(kafka_type) for _ in range(self.rng.randint(0, 3)))
        return self.primitive(get_schema_field_type(field))

    def primitive(self, kafka_type: str) -> Any:
        rng = self.rng
        if kafka_type in INT_BITS:
            bound = 1 << (INT_BITS[kafka_type] - 1)
            return rng.choice((0, 1, 2, -1, rng.randrange(-bound, bound)))
        if kafka_type in UINT_BITS:
            return rng.choice((0, 1, 2, rng.randrange(1 << UINT_BITS[kafka_type])))
        if kafka_type == "bool":
            return rng.random() < 0.5
        if kafka_type == "float64":
            return rng.random()
        if kafka_type == "string":
            return rng.choice(self.strings)
        if kafka_type == "bytes":
            return rng.randbytes(rng.randint(0, 8))
        if kafka_type == "records":
            return self.records
        if kafka_type == "uuid":
            return uuid.UUID(int=rng.getrandbits(128))
        if kafka_type == "error_code":
            return rng.choice(ERROR_CODES)
        if kafka_type in ("timedelta_i32", "timedelta_i64"):
            return datetime.timedelta(milliseconds=rng.randint(0, 10**6))
        if kafka_type == "datetime_i64":
            return datetime.datetime.fromtimestamp(rng.randint(0, 2 * 10**9), datetime.UTC)
        raise NotImplementedError(f"no sample for kafka_type {kafka_type!r}")


def request_frame(
    sampler: Sampler, api_key: int, version: int, correlation_id: int = 1
) -> tuple[bytes, list[Spot]]:
    """A sample request (header and body, no size prefix) and its length spots."""
    body_type = load_request_schema(api_key, version)
    header_type = RequestHeaderV2 if body_type.__flexible__ else RequestHeaderV1
    client_id = None if sampler.rng.random() < sampler.null_chance else sampler.primitive("string")
    header = header_type(
        request_api_key=api_key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    body = sampler.entity(body_type)
    head = encoded(entity_writer(header_type), header)
    spots = length_spots(header_type, header) + shifted(length_spots(body_type, body), len(head))
    return head + encoded(entity_writer(body_type), body), spots


def length_spots(entity_type: type, entity: Any) -> list[Spot]:
    """Every length and count kio's writer puts in ``entity``'s encoding."""
    flexible = entity_type.__flexible__
    header = entity_type.__name__ == "RequestHeader"
    spots: list[Spot] = []
    at = 0
    tagged = {}
    for field in dataclasses.fields(entity_type):
        tag = get_field_tag(field)
        if tag is not None:
            tagged[tag] = field
            continue
        value = getattr(entity, field.name)
        spots += shifted(_field_spots(field, value, flexible, header), at)
        at += len(encoded(get_field_writer(field, flexible, header, False), value))
    if flexible:  # the tagged fields section, read back from the writer's output
        data = encoded(entity_writer(entity_type), entity)
        spots.append((at, UVARINT))
        count, at = read_uvarint(data, at, len(data))
        for _ in range(count):
            tag, at = read_uvarint(data, at, len(data))
            spots.append((at, UVARINT))
            size, at = read_uvarint(data, at, len(data))
            field = tagged[tag]
            spots += shifted(_field_spots(field, getattr(entity, field.name), True, False), at)
            at += size
    return spots


def encoded(writer: Callable[[io.BytesIO, Any], None], value: Any) -> bytes:
    buf = io.BytesIO()
    writer(buf, value)
    return buf.getvalue()


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes([*out, value])


def shifted(spots: list[Spot], by: int) -> list[Spot]:
    return [(at + by, kind) for at, kind in spots]


def _scalar_spots(kafka_type: str, flexible: bool) -> list[Spot]:
    if kafka_type == "string":
        return [(0, UVARINT if flexible else INT16)]
    if kafka_type in ("bytes", "records"):
        return [(0, UVARINT if flexible else INT32)]
    return []


def _field_spots(field: dataclasses.Field, value: Any, flexible: bool, header: bool) -> list[Spot]:
    if header and field.name == "client_id":
        return [(0, INT16)]
    kind = classify_field(field)
    if isinstance(kind, EntityField):
        if not is_optional(field):
            return length_spots(kind.type_, value)
        return [] if value is None else shifted(length_spots(kind.type_, value), 1)
    if not kind.is_array:
        return _scalar_spots(get_schema_field_type(field), flexible)
    spots = [(0, UVARINT if flexible else INT32)]
    if value is None:
        return spots
    at = len(uvarint(len(value) + 1)) if flexible else 4
    for item in value:
        if isinstance(kind, EntityTupleField):
            spots += shifted(length_spots(kind.type_, item), at)
            at += len(encoded(entity_writer(kind.type_), item))
        else:
            kafka_type = get_schema_field_type(field)
            spots += shifted(_scalar_spots(kafka_type, flexible), at)
            at += len(encoded(get_writer(kafka_type, flexible, False), item))
    return spots


def rewrite_length(frame: bytes, spot: Spot, value: Callable[[int, int], int]) -> bytes:
    """``frame`` with the length at ``spot`` set to ``value(old, bytes after it)``;
    values outside the spot's encoding are clamped into it."""
    at, kind = spot
    if kind == UVARINT:
        old, after = read_uvarint(frame, at, len(frame))
        new = min(max(value(old, len(frame) - after), 0), MAXIMUM[UVARINT])
        return frame[:at] + uvarint(new) + frame[after:]
    width = 2 if kind == INT16 else 4
    old = int.from_bytes(frame[at : at + width], "big", signed=True)
    new = min(max(value(old, len(frame) - at - width), -MAXIMUM[kind] - 1), MAXIMUM[kind])
    return frame[:at] + new.to_bytes(width, "big", signed=True) + frame[at + width :]
