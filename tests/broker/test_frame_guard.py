"""The frame guard against every request schema kio has: it accepts what kio's
writer produces and stops exactly where the writer stopped; a truncated frame or any
length or count inflated past the bytes left is refused with DecodeError before
kio's native reader (which would abort the process on the allocation) sees it.

Where the lengths are is worked out independently of the guard, from the sizes
kio's own writer gives each field (``broker.protocol.samples.length_spots``)."""

import contextlib
import dataclasses
import random
import struct
from dataclasses import dataclass
from typing import ClassVar

import pytest
from kio.index import load_request_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.schema.request_header.v1.header import RequestHeader as HeaderV1
from kio.schema.request_header.v2.header import RequestHeader as HeaderV2
from kio.serial import entity_writer
from kio.static.constants import EntityType

from broker.coordinator.group.records import GroupMetadataValue, decode_group_value, group_value
from broker.coordinator.serde import RecordFormatError
from broker.protocol.codec import DecodeError, decode_request
from broker.protocol.frame_guard import EMPTY_ELEMENTS, UnsafeFrame, check
from broker.protocol.samples import Sampler, Spot, encoded, request_frame, rewrite_length
from broker.replication.peer_client import decode_response

SEEDS = range(6)
REQUESTS = [
    (key, version)
    for key, name in api_key_map.items()
    for version, entities in schema_name_map[name].items()
    if EntityType.request in entities
]


def sample_frame(api_key: int, version: int, seed: int) -> tuple[bytes, list[Spot]]:
    sampler = Sampler(random.Random(seed), strings=("", "topic", "ü" * 40), records=b"\x01" * 70)
    return request_frame(sampler, api_key, version)


def past_the_end(_: int, left: int) -> int:
    return left + 2  # a compact length is the length + 1


def largest(_: int, __: int) -> int:
    return 1 << 40  # clamped to the most the spot's encoding holds


def one_less(old: int, _: int) -> int:
    return old - 1


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


@pytest.mark.parametrize(("api_key", "version"), REQUESTS)
def test_every_request_schema(api_key: int, version: int) -> None:
    for seed in SEEDS:
        frame, spots = sample_frame(api_key, version, seed)
        assert guard(frame, api_key, version) == len(frame)
        decode_request(frame, api_key, version)
        for cut in range(len(frame)):
            assert_refused(frame[:cut], api_key, version)
        for spot in spots:
            assert_refused(rewrite_length(frame, spot, past_the_end), api_key, version)
            assert_refused(rewrite_length(frame, spot, largest), api_key, version)
            # one less may still parse, read differently: DecodeError or a request
            with contextlib.suppress(DecodeError):
                decode_request(rewrite_length(frame, spot, one_less), api_key, version)


def test_a_metadata_array_count_of_billions_is_refused() -> None:
    body = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\0" * 10  # 2^32 - 2 topics
    head = encoded(
        entity_writer(HeaderV2),
        HeaderV2(request_api_key=3, request_api_version=12, correlation_id=1, client_id="c"),
    )
    with pytest.raises(UnsafeFrame, match="array of 4294967294"):
        check(load_request_schema(3, 12), body)
    with pytest.raises(DecodeError):
        decode_request(head + body, 3, 12)


def test_a_null_array_only_where_the_schema_allows_one() -> None:
    """A null array passes only where the schema makes it nullable, as in Kafka:
    kio reads any array as nullable, and handlers iterating a null one would raise
    TypeError."""
    all_topics = bytes([0, 0, 0, 0])  # Metadata v12: topics null (all), flags, no tags
    assert check(load_request_schema(3, 12), all_topics) == 4
    no_topic_data = struct.pack(">bhib", 0, -1, 1000, 0) + b"\0"  # Produce v9, topic_data null
    with pytest.raises(UnsafeFrame, match="null for a non-nullable array"):
        check(load_request_schema(0, 9), no_topic_data)


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
