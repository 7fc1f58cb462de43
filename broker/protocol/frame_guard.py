"""A bounds check that runs before kio's native reader sees untrusted bytes.

kio (0.6.5) decodes in Rust and sizes an array's storage from the count read off
the wire before it checks that count against the bytes left: a compact array
claiming 2^35 elements makes it ask for hundreds of GB, and Rust aborts the whole
process when that allocation fails (a legacy array's 2^31 - 1 asks for 16 GB).
This module walks the same encoding by the same kio schema, reading only lengths
and counts, and raises ``UnsafeFrame`` unless every one of them fits the bytes
left, at every nesting level; only then may kio decode.

The walk follows kio's reader: flexible entities use compact strings, bytes and
arrays (uvarint length + 1, 0 for null) and end with a tagged-fields section;
legacy ones use int16 strings, int32 bytes and arrays (-1 for null); a nullable
struct starts with an int8 marker (-1: null, KIP-893); ``RequestHeader.client_id``
is always a legacy nullable string. An array may hold no more elements than fit
in the bytes left at each element's minimum size, except elements that encode to
no bytes at all (an empty non-flexible struct; no Kafka schema has an array of
them today): those cost kio a pointer and an object each but no frame bytes, so
their count is capped at ``EMPTY_ELEMENTS`` instead. A tagged field's value must
fill exactly the size its header gives. An array the schema does not let be null
must not be: kio reads any array as nullable and would hand a handler ``None``
where Kafka's own readers refuse the frame. Values are not checked (UTF-8, enum
codes, booleans): kio raises ordinary exceptions for those.

Each type is compiled once into closures (``functools.cache``); runs of fixed-size
fields are skipped with one addition, and arrays of fixed-size elements in O(1).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

# (buffer, position, end) -> position after the value; raises UnsafeFrame.
# Positions may run past ``end`` inside a walk (fixed-size skips are not checked one
# by one); every read checks against ``end`` and so does the caller at the finish.
Walk = Callable[[bytes, int, int], int]

FIXED_SIZES = {
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_NULL_MARKER = 0xFF  # int8 -1 of a nullable struct
EMPTY_ELEMENTS = 1 << 16  # kio then allocates 512 KiB of pointers, not 2^35 x 8 bytes


class UnsafeFrame(ValueError):
    """Bytes whose lengths or counts do not fit the frame (or a null array the schema
    forbids); kio must not read them."""


@dataclass(frozen=True, slots=True)
class Shape:
    """How a value is laid out: exactly ``size`` bytes when ``walk`` is None,
    otherwise at least ``size`` bytes, measured by ``walk``."""

    size: int
    walk: Walk | None = None


def check(entity_type: type, data: bytes, offset: int = 0) -> int:
    """The offset just past the ``entity_type`` value encoded at ``offset``;
    raises ``UnsafeFrame`` if any length or count in it runs past ``data``."""
    shape = entity_shape(entity_type, False)
    end = len(data)
    pos = offset + shape.size if shape.walk is None else shape.walk(data, offset, end)
    if pos > end:
        raise UnsafeFrame(f"{entity_type.__name__} runs {pos - end} bytes past the frame")
    return pos


def read_uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """``(value, position after it)``; at most 5 bytes, as kio reads them."""
    value = 0
    for shift in (0, 7, 14, 21, 28):
        if pos >= end:
            raise UnsafeFrame("varint runs past the end")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
    raise UnsafeFrame("varint longer than 5 bytes")


def _too_long(what: str, length: int, pos: int, end: int) -> UnsafeFrame:
    return UnsafeFrame(f"{what} of {length} at byte {pos} with {end - pos} bytes left")


# -- primitives ------------------------------------------------------------------------
def _compact_bytes(buf: bytes, pos: int, end: int) -> int:
    if pos < end and buf[pos] < 0x80:
        length = buf[pos]
        pos += 1
    else:
        length, pos = read_uvarint(buf, pos, end)
    if length > end - pos + 1:
        raise _too_long("compact string", length - 1, pos, end)
    return pos + length - 1 if length else pos


def _legacy_sized(length_format: struct.Struct, what: str) -> Walk:
    prefix = length_format.size

    def legacy_sized(buf: bytes, pos: int, end: int) -> int:
        if pos + prefix > end:
            raise _too_long(f"{what} length", prefix, pos, end)
        (length,) = length_format.unpack_from(buf, pos)
        pos += prefix
        if length < -1 or length > end - pos:
            raise _too_long(what, length, pos, end)
        return pos + max(length, 0)

    return legacy_sized


_LEGACY_STRING = Shape(2, _legacy_sized(_INT16, "string"))
_LEGACY_BYTES = Shape(4, _legacy_sized(_INT32, "bytes"))
_COMPACT_BYTES = Shape(1, _compact_bytes)


def primitive_shape(kafka_type: str, flexible: bool) -> Shape:
    if kafka_type in FIXED_SIZES:
        return Shape(FIXED_SIZES[kafka_type])
    if kafka_type not in ("string", "bytes", "records"):
        raise NotImplementedError(f"no shape for kafka_type {kafka_type!r}")
    if flexible:
        return _COMPACT_BYTES
    return _LEGACY_STRING if kafka_type == "string" else _LEGACY_BYTES


# -- arrays ------------------------------------------------------------------------------
def _array(element: Shape, compact: bool, nullable: bool) -> Shape:
    size, walk = element.size, element.walk  # walk is None whenever size is 0

    def array(buf: bytes, pos: int, end: int) -> int:
        if compact:
            if pos < end and buf[pos] < 0x80:
                count = buf[pos]
                pos += 1
            else:
                count, pos = read_uvarint(buf, pos, end)
            count -= 1  # -1: null
        else:
            if pos + 4 > end:
                raise _too_long("array length", 4, pos, end)
            (count,) = _INT32.unpack_from(buf, pos)
            pos += 4
            if count < -1:
                raise _too_long("array", count, pos, end)
        if count <= 0:
            if count < 0 and not nullable:
                raise UnsafeFrame(f"null for a non-nullable array at byte {pos}")
            return pos
        if count * size > end - pos or (count > EMPTY_ELEMENTS and not size):
            raise _too_long("array", count, pos, end)
        if walk is None:
            return pos + count * size
        for _ in range(count):
            pos = walk(buf, pos, end)
        return pos

    return Shape(1 if compact else 4, array)


# -- structs -----------------------------------------------------------------------------
def _tagged_fields(tagged: dict[int, Shape]) -> Walk:
    def tagged_fields(buf: bytes, pos: int, end: int) -> int:
        count, pos = read_uvarint(buf, pos, end)
        if count * 2 > end - pos:  # a tag and a size, at least a byte each
            raise _too_long("tagged fields", count, pos, end)
        for _ in range(count):
            tag, pos = read_uvarint(buf, pos, end)
            size, pos = read_uvarint(buf, pos, end)
            stop = pos + size
            if stop > end:
                raise _too_long(f"tagged field {tag}", size, pos, end)
            shape = tagged.get(tag)  # unknown tags are skipped here; kio refuses them
            if shape is not None:
                reached = pos + shape.size if shape.walk is None else shape.walk(buf, pos, stop)
                if reached != stop:
                    raise UnsafeFrame(f"tagged field {tag} holds {reached - pos}, not {size} bytes")
            pos = stop
        return pos

    return tagged_fields


def field_shape(entity_type: type, field: dataclasses.Field, flexible: bool) -> Shape:
    if entity_type.__name__ == "RequestHeader" and field.name == "client_id":
        return _LEGACY_STRING
    kind = classify_field(field)
    if isinstance(kind, EntityField):
        inner = entity_shape(kind.type_, is_optional(field))
    elif isinstance(kind, EntityTupleField):
        inner = entity_shape(kind.type_, False)
    else:
        inner = primitive_shape(get_schema_field_type(field), flexible)
    if isinstance(kind, EntityTupleField | PrimitiveTupleField):
        return _array(inner, flexible, is_optional(field))
    return inner


@cache
def entity_shape(entity_type: type, nullable: bool) -> Shape:
    """The compiled layout of ``entity_type`` (with a null marker if ``nullable``)."""
    flexible = entity_type.__flexible__
    steps: list[tuple[int, Walk]] = []  # (fixed bytes to skip first, walk)
    skip = minimum = 0
    tagged: dict[int, Shape] = {}
    for field in dataclasses.fields(entity_type):
        shape = field_shape(entity_type, field, flexible)
        tag = get_field_tag(field)
        if tag is not None:
            tagged[tag] = shape
            continue
        minimum += shape.size
        if shape.walk is None:
            skip += shape.size
        else:
            steps.append((skip, shape.walk))
            skip = 0
    tail = skip
    tags = _tagged_fields(tagged) if flexible else None

    def struct_(buf: bytes, pos: int, end: int) -> int:
        for before, walk in steps:
            pos = walk(buf, pos + before, end)
        pos += tail
        if tags is None:
            return pos
        if pos < end and buf[pos] == 0:  # no tagged fields, the common case
            return pos + 1
        return tags(buf, pos, end)

    shape = Shape(minimum + (1 if flexible else 0), struct_ if steps or tags else None)
    if not nullable:
        return shape
    size, walk = shape.size, shape.walk

    def nullable_struct(buf: bytes, pos: int, end: int) -> int:
        if pos >= end:
            raise _too_long("null marker", 1, pos, end)
        if buf[pos] == _NULL_MARKER:
            return pos + 1
        return pos + 1 + size if walk is None else walk(buf, pos + 1, end)

    return Shape(1, nullable_struct)
