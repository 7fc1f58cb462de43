"""A minimal blocking Kafka wire client built on kio, for tests that need exact
control over requests (sequence numbers, raw frames)."""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.request_header.v1.header import RequestHeader as HeaderV1
from kio.schema.request_header.v2.header import RequestHeader as HeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseV1
from kio.serial import entity_reader, entity_writer

from broker.protocol.codec import build


class WireClient:
    def __init__(self, bootstrap: str, timeout: float = 10) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, frame: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._recv_exactly(4))[0]
        return self._recv_exactly(size)

    def _recv_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("closed by broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def encode(self, api_key: int, version: int, data: dict[str, Any]) -> bytes:
        request_type = load_request_schema(api_key, version)
        header_type = HeaderV2 if request_type.__flexible__ else HeaderV1
        self.correlation += 1
        buf = io.BytesIO()
        header = header_type(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=self.correlation,
            client_id="wire",
        )
        entity_writer(header_type)(buf, header)
        entity_writer(request_type)(buf, build(request_type, data))
        return buf.getvalue()

    def request(self, api_key: int, version: int, data: dict[str, Any]) -> Any:
        self.send_raw(self.encode(api_key, version, data))
        frame = self.recv_frame()
        response_type = load_response_schema(api_key, version)
        header_type = ResponseV1 if response_type.__flexible__ and api_key != 18 else ResponseV0
        header, offset = entity_reader(header_type)(frame, 0)
        assert header.correlation_id == self.correlation
        return entity_reader(response_type)(frame, offset)[0]


def produce(client: WireClient, topic: str, partition: int, records: bytes, acks: int = -1) -> Any:
    """One Produce v9 request for one partition; returns its partition response."""
    response = client.request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": acks,
            "timeout": 10_000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": records}]}
            ],
        },
    )
    return response.responses[0].partition_responses[0]


def create_topic(client: WireClient, name: str, partitions: int = 1, **configs: str) -> Any:
    response = client.request(
        19,
        5,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [
                        {"name": k.replace("_", "."), "value": v} for k, v in configs.items()
                    ],
                }
            ],
            "timeout": 10_000,
            "validate_only": False,
        },
    )
    return response.topics[0]


def fetch(
    client: WireClient,
    topic: str,
    offset: int = 0,
    read_committed: bool = False,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    leader_epoch: int = -1,
) -> Any:
    """One Fetch v12 of ``topic``-0 from ``offset``; returns its partition response,
    so tests see exactly the bytes served."""
    partition = {
        "partition": 0,
        "current_leader_epoch": leader_epoch,
        "fetch_offset": offset,
        "last_fetched_epoch": -1,
        "log_start_offset": -1,
        "partition_max_bytes": 1 << 20,
    }
    response = client.request(
        1,
        12,
        {
            "replica_id": -1,
            "max_wait": max_wait_ms,
            "min_bytes": min_bytes,
            "max_bytes": 1 << 20,
            "isolation_level": int(read_committed),
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [partition]}],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    return response.responses[0].partitions[0]
