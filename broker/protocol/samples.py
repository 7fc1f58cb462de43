"""Valid instances of any kio schema with sample values, for checking the frame
guard against every schema (tests) and for the fuzz campaign's seed frames
(``bench/fuzz_broker.py``): every field is filled by its kafka_type, arrays get
0-3 elements, nullable fields are sometimes null and tagged fields sometimes set.

Strings are drawn from ``strings`` and integers lean to small values, so that a
seed naming existing topics and partitions reaches past a handler's first check.
"""

from __future__ import annotations

import dataclasses
import datetime
import random
import uuid
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
UINT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
ERROR_CODES = tuple(ErrorCode)


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
