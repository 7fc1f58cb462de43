"""Key/value encoding of internal-topic records: an int16 schema version, then the
fields in Kafka's layout, written by kio's generic codec. Records are read back
through the frame guard first: only this broker writes internal topics (Produce to
them is refused), but a replica copies them from its leader, and kio's native
reader aborts the process on a count it cannot allocate.

The record classes live next to their coordinator (``group/records.py``,
``txn/records.py``); they are declared without postponed annotations because kio
reads the field types at run time.
"""

from __future__ import annotations

import io
import struct
from typing import Any, TypeVar, cast

from kio.serial import entity_reader, entity_writer

from broker.protocol.frame_guard import check

T = TypeVar("T")


class RecordFormatError(ValueError):
    """An internal record that cannot be decoded (corrupt or from a newer version)."""


def encode(version: int, entity: Any) -> bytes:
    buf = io.BytesIO()
    buf.write(struct.pack(">h", version))
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def read_version(data: bytes) -> int:
    if len(data) < 2:
        raise RecordFormatError(f"internal record of {len(data)} bytes has no version")
    return int(struct.unpack_from(">h", data)[0])


def decode(entity_type: type[T], data: bytes) -> T:
    """Decodes the fields after the version prefix; the caller chose the type by version."""
    reader: Any = entity_reader(entity_type)
    try:
        check(entity_type, data, 2)
        entity, _ = reader(data, 2)
    except Exception as exc:  # the guard's UnsafeFrame, or one of kio's several types
        raise RecordFormatError(f"bad {entity_type.__name__} record: {exc}") from exc
    return cast(T, entity)
