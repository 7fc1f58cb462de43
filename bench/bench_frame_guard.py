"""What the frame guard costs per request: ``decode_request`` with the guard (as the
broker runs it) against kio's reader alone, on a typical Produce v9 (one partition,
a batch of ``--records`` 100-byte values) and a typical Fetch v12 (one topic,
``--partitions`` partitions) as librdkafka sends them.
Prints microseconds per request and the command that made them.
"""

from __future__ import annotations

import argparse
import io
import sys
import timeit
from collections.abc import Callable
from functools import partial
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder
from kio.schema.request_header.v1.header import RequestHeader as HeaderV1
from kio.schema.request_header.v2.header import RequestHeader as HeaderV2
from kio.serial import entity_reader, entity_writer

from broker.protocol.codec import build, decode_request, request_type


def frame(api_key: int, version: int, data: dict[str, Any]) -> bytes:
    body_type = request_type(api_key, version)
    header_type = HeaderV2 if body_type.__flexible__ else HeaderV1
    buf = io.BytesIO()
    header = header_type(
        request_api_key=api_key, request_api_version=version, correlation_id=7, client_id="rdkafka"
    )
    entity_writer(header_type)(buf, header)
    entity_writer(body_type)(buf, build(body_type, data))
    return buf.getvalue()


def produce_frame(records: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, 1000, 0, 0, 1 << 24)
    for i in range(records):
        builder.append(i, 1_700_000_000_000 + i, None, b"v" * 100, [])
    partition = {"index": 0, "records": bytes(builder.build())}
    topic = {"name": "bench-topic", "partition_data": [partition]}
    return frame(0, 9, {"acks": -1, "timeout": 30_000, "topic_data": [topic]})


def fetch_frame(partitions: int) -> bytes:
    parts = [
        {
            "partition": p,
            "current_leader_epoch": 0,
            "fetch_offset": 12345,
            "last_fetched_epoch": -1,
            "log_start_offset": -1,
            "partition_max_bytes": 1 << 20,
        }
        for p in range(partitions)
    ]
    data = {
        "replica_id": -1,
        "max_wait": 500,
        "min_bytes": 1,
        "max_bytes": 50 << 20,
        "isolation_level": 1,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": "bench-topic", "partitions": parts}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return frame(1, 12, data)


def kio_only(data: bytes, api_key: int, version: int) -> None:
    """The decode as it was before the guard."""
    body_type = request_type(api_key, version)
    header_type = HeaderV2 if body_type.__flexible__ else HeaderV1
    _, offset = entity_reader(header_type)(data, 0)
    entity_reader(body_type)(data, offset)


def per_call_us(fn: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--number", type=int, default=20_000)
    args = parser.parse_args()
    for name, data, key, version in (
        ("Produce v9", produce_frame(args.records), 0, 9),
        ("Fetch v12", fetch_frame(args.partitions), 1, 12),
    ):
        guarded = per_call_us(partial(decode_request, data, key, version), args.number)
        bare = per_call_us(partial(kio_only, data, key, version), args.number)
        print(
            f"{name} ({len(data)} bytes): decode_request {guarded:.2f} us, "
            f"kio alone {bare:.2f} us, guard {guarded - bare:+.2f} us per request"
        )
    print("command: .venv/bin/python bench/bench_frame_guard.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
