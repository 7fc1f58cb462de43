"""Kafka request/response framing on top of ``kio``'s generated schemas.

Requests are read with the header version their API version implies
(v2 for flexible versions, v1 otherwise), and trailing bytes after the body
are ignored, because librdkafka sends some. ``frame_guard`` checks every length
and count first: kio's native reader allocates by them before checking, and an
allocation it cannot make aborts the process. Responses are written with header
v1 for flexible versions except ApiVersions, which always uses v0 so that a
client can read it before knowing what the broker supports.

``build`` turns plain dicts and lists into kio entities for the exact version
being answered, dropping fields that version lacks and converting
milliseconds to the ``timedelta``/``datetime`` types kio expects, so handlers
are written once for every version.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import types
import typing
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer

from broker.protocol.frame_guard import check

API_VERSIONS_KEY = 18
PREFIX = struct.Struct(">hhi")  # api key, api version, correlation id


class DecodeError(ValueError):
    """A request frame that cannot be parsed."""


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """``(api_key, api_version, correlation_id)`` without parsing the rest."""
    if len(frame) < PREFIX.size:
        raise DecodeError(f"frame of {len(frame)} bytes is shorter than a request header")
    return PREFIX.unpack_from(frame)


@cache
def request_type(api_key: int, version: int) -> type:
    return load_request_schema(api_key, version)


@cache
def response_type(api_key: int, version: int) -> type:
    return load_response_schema(api_key, version)


def decode_request(frame: bytes, api_key: int, version: int) -> tuple[str | None, Any]:
    """Parses header and body; returns ``(client_id, request)``."""
    body_type = request_type(api_key, version)
    header_type = RequestHeaderV2 if body_type.__flexible__ else RequestHeaderV1
    try:
        check(body_type, frame, check(header_type, frame))
        header, offset = entity_reader(header_type)(frame, 0)
        request, _ = entity_reader(body_type)(frame, offset)
    except Exception as e:  # the guard's UnsafeFrame, or one of kio's several types
        raise DecodeError(
            f"cannot decode {body_type.__name__} v{version}: {type(e).__name__}: {e}"
        ) from None
    return header.client_id, request


def encode_response(api_key: int, correlation_id: int, response: Any) -> bytes:
    """Serialises a response with its size prefix and header."""
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    flexible = type(response).__flexible__ and api_key != API_VERSIONS_KEY
    header_type = ResponseHeaderV1 if flexible else ResponseHeaderV0
    entity_writer(header_type)(buf, header_type(correlation_id=correlation_id))
    entity_writer(type(response))(buf, response)
    data = buf.getbuffer()
    struct.pack_into(">i", data, 0, len(data) - 4)
    return bytes(data)


# -- building version-specific entities from plain data -----------------------
@dataclasses.dataclass(frozen=True)
class _FieldPlan:
    name: str
    kind: str  # "plain", "entity", "entities", "timedelta", "datetime"
    target: type | None = None


def _entity_in(tp: Any) -> type | None:
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return tp
    return None


def _strip_optional(tp: Any) -> Any:
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


@cache
def _plan(cls: type) -> tuple[_FieldPlan, ...]:
    plans = []
    for f in dataclasses.fields(cls):
        tp = _strip_optional(f.type)
        kafka_type = f.metadata.get("kafka_type", "")
        if typing.get_origin(tp) is tuple and _entity_in(typing.get_args(tp)[0]):
            plans.append(_FieldPlan(f.name, "entities", typing.get_args(tp)[0]))
        elif _entity_in(tp):
            plans.append(_FieldPlan(f.name, "entity", tp))
        elif kafka_type.startswith("timedelta"):
            plans.append(_FieldPlan(f.name, "timedelta"))
        elif kafka_type.startswith("datetime"):
            plans.append(_FieldPlan(f.name, "datetime"))
        else:
            plans.append(_FieldPlan(f.name, "plain"))
    return tuple(plans)


def build(cls: type, data: dict[str, Any]) -> Any:
    """A ``cls`` instance from ``data``; keys ``cls`` lacks are dropped, missing
    keys take the schema default."""
    kwargs: dict[str, Any] = {}
    for plan in _plan(cls):
        if plan.name not in data:
            continue
        value = data[plan.name]
        if value is None:
            kwargs[plan.name] = None
        elif plan.kind == "entities":
            kwargs[plan.name] = tuple(
                build(plan.target, v) if isinstance(v, dict) else v for v in value
            )
        elif plan.kind == "entity":
            kwargs[plan.name] = build(plan.target, value) if isinstance(value, dict) else value
        elif plan.kind == "timedelta" and isinstance(value, int):
            kwargs[plan.name] = datetime.timedelta(milliseconds=value)
        elif plan.kind == "datetime" and isinstance(value, int):
            kwargs[plan.name] = (
                None if value < 0 else datetime.datetime.fromtimestamp(value / 1000, datetime.UTC)
            )
        elif isinstance(value, list):
            kwargs[plan.name] = tuple(value)
        else:
            kwargs[plan.name] = value
    return cls(**kwargs)


def build_response(api_key: int, version: int, data: dict[str, Any]) -> Any:
    return build(response_type(api_key, version), data)
