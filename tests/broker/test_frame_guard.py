"""The frame guard against every request schema kio has: it accepts what kio's
writer produces and stops exactly where the writer stopped; a truncated frame or any
length or count inflated past the bytes left is refused with DecodeError before
kio's native reader (which would abort the process on the allocation) sees it.

Where the lengths are is worked out independently of the guard, from the sizes
kio's own writer gives each field."""

import contextlib
import dataclasses
import io
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from kio.index import load_request_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.schema.request_header.v1.header import RequestHeader as HeaderV1
from kio.schema.request_header.v2.header import RequestHeader as HeaderV2
from kio.serial import entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from kio.serial._serialize import get_field_writer, get_writer
from kio.static.constants import EntityType

from broker.coordinator.group.records import GroupMetadataValue, decode_group_value, group_value
from broker.coordinator.serde import RecordFormatError
from broker.protocol.codec import DecodeError, decode_request
from broker.protocol.frame_guard import EMPTY_ELEMENTS, UnsafeFrame, check, read_uvarint
from broker.protocol.samples import Sampler
from broker.replication.peer_client import decode_response

SEEDS = range(6)
REQUESTS = [
    (key, version)
    for key, name in api_key_map.items()
    for version, entities in schema_name_map[name].items()
    if EntityType.request in entities
]
UVARINT, INT16, INT32 = "uvarint", "int16", "int32"
MAXIMUM = {UVARINT: (1 << 35) - 1, INT16: (1 << 15) - 1, INT32: (1 << 31) - 1}  # as kio reads
Spot = tuple[int, str]  # offset of a length or count, and its encoding


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


def scalar_spots(kafka_type: str, flexible: bool) -> list[Spot]:
    if kafka_type == "string":
        return [(0, UVARINT if flexible else INT16)]
    if kafka_type in ("bytes", "records"):
        return [(0, UVARINT if flexible else INT32)]
    return []


def field_spots(field: dataclasses.Field, value: Any, flexible: bool, header: bool) -> list[Spot]:
    if header and field.name == "client_id":
        return [(0, INT16)]
    kind = classify_field(field)
    if isinstance(kind, EntityField):
        if not is_optional(field):
            return entity_spots(kind.type_, value)
        return [] if value is None else shifted(entity_spots(kind.type_, value), 1)
    if not kind.is_array:
        return scalar_spots(get_schema_field_type(field), flexible)
    spots = [(0, UVARINT if flexible else INT32)]
    if value is None:
        return spots
    at = len(uvarint(len(value) + 1)) if flexible else 4
    for item in value:
        if isinstance(kind, EntityTupleField):
            spots += shifted(entity_spots(kind.type_, item), at)
            at += len(encoded(entity_writer(kind.type_), item))
        else:
            kafka_type = get_schema_field_type(field)
            spots += shifted(scalar_spots(kafka_type, flexible), at)
            at += len(encoded(get_writer(kafka_type, flexible, False), item))
    return spots


def entity_spots(entity_type: type, entity: Any) -> list[Spot]:
    """Every length and count kio's writer put in ``entity``'s encoding."""
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
        spots += shifted(field_spots(field, value, flexible, header), at)
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
            spots += shifted(field_spots(field, getattr(entity, field.name), True, False), at)
            at += size
    return spots


def sample_frame(api_key: int, version: int, seed: int) -> tuple[bytes, list[Spot]]:
    body_type = load_request_schema(api_key, version)
    header_type = HeaderV2 if body_type.__flexible__ else HeaderV1
    sampler = Sampler(random.Random(seed), strings=("", "topic", "ü" * 40), records=b"\x01" * 70)
    header, body = sampler.entity(header_type), sampler.entity(body_type)
    head = encoded(entity_writer(header_type), header)
    spots = entity_spots(header_type, header) + shifted(entity_spots(body_type, body), len(head))
    return head + encoded(entity_writer(body_type), body), spots


def guard(frame: bytes, api_key: int, version: int) -> int:
    body_type = load_request_schema(api_key, version)
    header_type = HeaderV2 if body_type.__flexible__ else HeaderV1
    return check(body_type, frame, check(header_type, frame))


def assert_refused(frame: bytes, api_key: int, version: int) -> None:
    """The guard refuses ``frame``, and so decode_request without running kio
    (plain try/except: pytest.raises would double this test's time)."""
    try:
        guard(frame, api_key, version)
    except UnsafeFrame:
        pass
    else:
        pytest.fail(f"guard accepted {frame.hex()}")
    try:
        decode_request(frame, api_key, version)
    except DecodeError as e:
        assert "UnsafeFrame" in str(e)
    else:
        pytest.fail(f"decode_request accepted {frame.hex()}")


def rewritten(frame: bytes, spot: Spot, value: Callable[[int, int], int]) -> bytes:
    """``frame`` with the length at ``spot`` set to ``value(old, bytes after it)``."""
    at, kind = spot
    if kind == UVARINT:
        old, after = read_uvarint(frame, at, len(frame))
        return frame[:at] + uvarint(value(old, len(frame) - after)) + frame[after:]
    width = 2 if kind == INT16 else 4
    old = int.from_bytes(frame[at : at + width], "big", signed=True)
    new = value(old, len(frame) - at - width).to_bytes(width, "big", signed=True)
    return frame[:at] + new + frame[at + width :]


@pytest.mark.parametrize(("api_key", "version"), REQUESTS)
def test_every_request_schema(api_key: int, version: int) -> None:
    for seed in SEEDS:
        frame, spots = sample_frame(api_key, version, seed)
        assert guard(frame, api_key, version) == len(frame)
        decode_request(frame, api_key, version)
        for cut in range(len(frame)):
            assert_refused(frame[:cut], api_key, version)
        for spot in spots:
            maximum = MAXIMUM[spot[1]]
            assert_refused(rewritten(frame, spot, lambda _, left: left + 2), api_key, version)
            assert_refused(rewritten(frame, spot, lambda _, left, m=maximum: m), api_key, version)
            # one byte shorter may still parse, read differently: DecodeError or a request
            shorter = rewritten(frame, spot, lambda old, _: max(old - 1, 0))
            with contextlib.suppress(DecodeError):
                decode_request(shorter, api_key, version)


def test_the_metadata_frame_that_aborted_kio_is_refused() -> None:
    body = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\0" * 10  # 2^32 - 2 topics
    head = encoded(
        entity_writer(HeaderV2),
        HeaderV2(request_api_key=3, request_api_version=12, correlation_id=1, client_id="c"),
    )
    with pytest.raises(UnsafeFrame, match="array of 4294967294"):
        check(load_request_schema(3, 12), body)
    with pytest.raises(DecodeError):
        decode_request(head + body, 3, 12)


@dataclass(frozen=True, slots=True, kw_only=True)
class Empty:
    __flexible__: ClassVar[bool] = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Empties:
    __flexible__: ClassVar[bool] = False
    items: tuple[Empty, ...]


def test_elements_of_no_bytes_are_counted_not_measured() -> None:
    valid = encoded(entity_writer(Empties), Empties(items=(Empty(),) * 1000))
    assert valid == (1000).to_bytes(4, "big") and check(Empties, valid) == 4
    with pytest.raises(UnsafeFrame):
        check(Empties, (EMPTY_ELEMENTS + 1).to_bytes(4, "big"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Tagged:
    __flexible__: ClassVar[bool] = True
    count: int = dataclasses.field(metadata={"kafka_type": "int32", "tag": 0}, default=0)


@pytest.mark.parametrize(
    ("section", "fits"),
    [
        (bytes([1, 0, 4, 0, 0, 0, 7]), True),
        (bytes([1, 9, 2, 0xAA, 0xBB]), True),  # an unknown tag is skipped by its size
        (bytes([1, 0, 5, 0, 0, 0, 7, 0]), False),  # an int32 said to take 5 bytes
        (bytes([1, 0, 3, 0, 0, 0, 7]), False),
        (bytes([2, 0, 4, 0, 0, 0, 7]), False),  # a second field missing
    ],
)
def test_a_tagged_field_fills_exactly_its_size(section: bytes, fits: bool) -> None:
    assert encoded(entity_writer(Tagged), Tagged(count=7)) == bytes([1, 0, 4, 0, 0, 0, 7])
    if fits:
        assert check(Tagged, section) == len(section)
    else:
        with pytest.raises(UnsafeFrame):
            check(Tagged, section)


def test_a_peer_response_with_a_huge_count_is_refused() -> None:
    request = load_request_schema(3, 12)(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    # response header v1 (correlation id, no tags), throttle time, brokers: 2^32 - 2
    frame = struct.pack(">ibi", 1, 0, 0) + bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\0" * 8
    with pytest.raises(UnsafeFrame):  # a ValueError: the connection answers PeerError
        decode_response(frame, request)


def test_an_internal_record_with_a_huge_count_is_a_format_error() -> None:
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=1,
        protocol=None,
        leader=None,
        current_state_timestamp=0,
        members=(),
    )
    data = bytearray(group_value(value))
    assert data[-4:] == bytes(4)  # the members count comes last
    data[-4:] = struct.pack(">i", 2**31 - 1)
    with pytest.raises(RecordFormatError, match="array of 2147483647"):
        decode_group_value(bytes(data))
