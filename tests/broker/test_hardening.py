"""Bad input never crashes or hangs the broker: hypothesis-generated and
mutated frames, oversize frames and unknown APIs; a normal client still works
afterwards. Bad configuration exits 254."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from tests.broker.batches import make_batch
from tests.broker.wire import WireClient, create_topic, produce
from workloads.handles import Clients

pytestmark = [pytest.mark.broker, pytest.mark.integration]


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    broker = BrokerProcess(
        tmp_path_factory.mktemp("fuzz"), ["socket.request.max.bytes=65536"]
    ).start()
    try:
        client = WireClient(broker.bootstrap)
        create_topic(client, "fuzz", 2)
        client.close()
        yield broker
    finally:
        broker.kill()


NO_AUTO_CREATE = {
    "allow_auto_topic_creation": False,
    "include_cluster_authorized_operations": False,
    "include_topic_authorized_operations": False,
}


def valid_frames(bootstrap: str) -> list[bytes]:
    client = WireClient(bootstrap)
    try:
        return [
            client.encode(18, 3, {"client_software_name": "f", "client_software_version": "1"}),
            client.encode(
                3,
                12,
                {
                    "topics": None,
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            ),
            client.encode(
                0,
                9,
                {
                    "acks": -1,
                    "timeout": 1000,
                    "topic_data": [
                        {
                            "name": "fuzz",
                            "partition_data": [{"index": 0, "records": make_batch([b"ok"])}],
                        }
                    ],
                },
            ),
            client.encode(
                2,
                7,
                {
                    "replica_id": -1,
                    "isolation_level": 1,
                    "topics": [
                        {
                            "name": "fuzz",
                            "partitions": [
                                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
                            ],
                        }
                    ],
                },
            ),
        ]
    finally:
        client.close()


def exchange(bootstrap: str, payload: bytes) -> None:
    """Sends raw bytes and drains whatever comes back until the broker answers,
    closes, or stays quiet for a moment."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.settimeout(0.3)
        try:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
        except (TimeoutError, ConnectionError):
            pass


def assert_healthy(broker: BrokerProcess) -> None:
    assert broker.alive()
    client = WireClient(broker.bootstrap)
    try:
        assert produce(client, "fuzz", 1, make_batch([b"still-fine"])).error_code == ErrorCode.none
    finally:
        client.close()


def framed(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


# derandomized, like every fuzz test in `make test`: the same examples each run, so a
# red CI means a change broke something, not that a new seed found an old defect
# (the open-ended search is bench/fuzz_broker.py)
FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@settings(FUZZ, max_examples=120)
@given(body=st.binary(max_size=300), api_key=st.integers(-2, 70), version=st.integers(-1, 20))
def test_random_frames(
    shared_broker: BrokerProcess, body: bytes, api_key: int, version: int
) -> None:
    header = struct.pack(">hhi", api_key, version, 1)
    exchange(shared_broker.bootstrap, framed(header + body))
    assert shared_broker.alive()


@settings(FUZZ, max_examples=150)
@given(data=st.data())
def test_mutated_valid_frames(shared_broker: BrokerProcess, data: st.DataObject) -> None:
    frames = valid_frames(shared_broker.bootstrap)
    frame = bytearray(data.draw(st.sampled_from(frames)))
    for _ in range(data.draw(st.integers(1, 6))):
        action = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        at = data.draw(st.integers(0, max(len(frame) - 1, 0)))
        if action == "flip" and frame:
            frame[at] ^= data.draw(st.integers(1, 255))
        elif action == "insert":
            frame[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        elif action == "delete" and frame:
            del frame[at : at + data.draw(st.integers(1, 8))]
        elif action == "truncate":
            del frame[at:]
    exchange(shared_broker.bootstrap, framed(bytes(frame)))
    assert shared_broker.alive()


def test_oversize_negative_and_unknown_frames_close_the_connection(
    shared_broker: BrokerProcess,
) -> None:
    for payload in (
        struct.pack(">i", 10_000_000) + b"x" * 100,  # over socket.request.max.bytes
        struct.pack(">i", -5),
        framed(struct.pack(">hhi", 999, 0, 7) + b"\0\0"),  # unknown API
        framed(struct.pack(">hhi", 3, 99, 7) + b"\0\0"),  # unsupported version
    ):
        client = WireClient(shared_broker.bootstrap)
        client.sock.sendall(payload)
        with pytest.raises(ConnectionError):
            client.recv_frame()
        client.close()
    assert_healthy(shared_broker)


def test_unsupported_api_versions_version_gets_error_and_ranges(
    shared_broker: BrokerProcess,
) -> None:
    client = WireClient(shared_broker.bootstrap)
    client.send_raw(struct.pack(">hhi", 18, 77, 5) + b"\0\x01x")
    frame = client.recv_frame()
    client.close()
    correlation, error = struct.unpack_from(">ih", frame)
    assert (correlation, error) == (5, ErrorCode.unsupported_version)


def test_client_works_after_fuzzing(shared_broker: BrokerProcess, kafka_clients: Clients) -> None:
    assert_healthy(shared_broker)
    admin = kafka_clients.admin({"bootstrap.servers": shared_broker.bootstrap})
    assert "fuzz" in admin.list_topics(timeout=10).topics


@pytest.mark.parametrize(
    ("api_key", "version", "count"),
    [
        (3, 12, bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F])),  # compact: 2^32 - 2 topics
        (3, 4, struct.pack(">i", 2**31 - 1)),  # legacy: 2^31 - 1 topics
    ],
)
def test_an_array_count_asking_for_tens_of_gb_is_refused(
    start_broker, api_key: int, version: int, count: bytes
) -> None:
    """A count of billions of elements is refused like any malformed frame: kio's
    native reader reserves room for the count before reading any element (34 GB
    for the compact array) and would abort the broker on the failed allocation,
    so the frame never reaches it. The broker logs why and keeps serving."""
    broker = start_broker()
    client = WireClient(broker.bootstrap)
    create_topic(client, "fuzz", 2)
    flexible = version >= 9
    header = struct.pack(">hhih", api_key, version, 1, -1) + (b"\0" if flexible else b"")
    client.send_raw(header + count + b"\0" * 10)
    with pytest.raises(ConnectionError):
        client.recv_frame()
    client.close()
    assert_healthy(broker)
    log = (broker.data_dir / "broker.log").read_text()
    assert f"cannot decode MetadataRequest v{version}: UnsafeFrame: array of" in log


def test_a_topic_of_two_billion_partitions_is_refused_not_built(
    shared_broker: BrokerProcess,
) -> None:
    """A CreateTopics asking for 2^31 - 1 partitions is refused at once with
    POLICY_VIOLATION by Kafka's limit of 10,000 records an operation, before any
    assignment is built (one per partition would take the whole machine's memory).
    The broker keeps serving."""
    client = WireClient(shared_broker.bootstrap)
    try:
        topic = create_topic(client, "huge", 2**31 - 1)
    finally:
        client.close()
    assert topic.error_code == ErrorCode.policy_violation
    assert_healthy(shared_broker)


def test_a_null_topic_name_before_metadata_v12_is_an_invalid_request(
    shared_broker: BrokerProcess,
) -> None:
    """v10 and v11 let a requested topic's name be null but not the answer's, which
    would echo it. The broker refuses such a request as invalid, as Kafka does: it
    logs why, closes the connection and keeps serving."""
    client = WireClient(shared_broker.bootstrap)
    try:
        unnamed = {"topic_id": uuid.uuid4(), "name": None}
        client.send_raw(client.encode(3, 10, {"topics": [unnamed], **NO_AUTO_CREATE}))
        with pytest.raises(ConnectionError):
            client.recv_frame()
    finally:
        client.close()
    log = (shared_broker.data_dir / "broker.log").read_text()
    assert "topic name can not be null for version 10" in log
    assert_healthy(shared_broker)


def test_a_compression_bomb_is_not_inflated_for_a_timestamp_lookup(
    shared_broker: BrokerProcess,
) -> None:
    """A timestamp lookup inflates a batch's records only up to 64 times the topic's
    max.message.bytes (8 kB of zstd can hold 256 MB, a 1 MB batch 32 GB); past that
    the partition answers CORRUPT_MESSAGE and the broker keeps serving."""
    client = WireClient(shared_broker.bootstrap)
    try:
        create_topic(client, "bomb", 1, max_message_bytes="1000")
        bomb = make_batch([bytes(1 << 20)], compression=4)  # 1 MiB of zeros, ~100 bytes
        assert produce(client, "bomb", 0, bomb).error_code == ErrorCode.none
        query = {"partition_index": 0, "current_leader_epoch": -1, "timestamp": 0}
        topics = [{"name": "bomb", "partitions": [query]}]
        response = client.request(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": topics})
    finally:
        client.close()
    assert response.topics[0].partitions[0].error_code == ErrorCode.corrupt_message
    assert_healthy(shared_broker)


def run_broker(
    node_id: str, listen: str, data_dir: Path, *extra: str, via: tuple[str, ...] = ("broker",)
) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m broker`` (or ``-m`` ``via``) until it exits, for the tests
    of a broker that must refuse to start."""
    args = ["--node-id", node_id, "--listen", listen, "--data-dir", str(data_dir), *extra]
    return subprocess.run(
        [sys.executable, "-m", *via, *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "extra",
    [
        ["--set", "segment.bytes=abc"],
        ["--set", "no.such.key=1"],
        ["--set", "min.insync.replicas=0"],
        ["--set", "novalue"],
        ["--config", "/nonexistent/broker.properties"],
    ],
)
def test_bad_config_exits_254(tmp_path: Path, extra: list[str]) -> None:
    result = run_broker("1", "127.0.0.1:0", tmp_path, *extra)
    assert result.returncode == 254
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_bad_config_file_names_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "broker.properties"
    config.write_text("# comment\nnum.partitions=3\nretention.ms=soon\n")
    result = run_broker(
        "1", "127.0.0.1:0", tmp_path / "d", "--config", str(config), via=("harness", "broker")
    )
    assert result.returncode == 254
    assert f"{config}:3" in result.stderr and "retention.ms" in result.stderr


def test_port_in_use_exits_254(shared_broker: BrokerProcess, tmp_path: Path) -> None:
    result = run_broker("2", shared_broker.bootstrap, tmp_path)
    assert result.returncode == 254 and "cannot listen" in result.stderr


def test_trailing_bytes_after_a_request_are_tolerated(shared_broker: BrokerProcess) -> None:
    client = WireClient(shared_broker.bootstrap)
    try:
        frame = client.encode(
            3,
            12,
            {
                "topics": None,
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        client.send_raw(frame + b"\x00\x00\x00")  # as librdkafka sends in an all-topics Metadata
        response = client.recv_frame()
        assert struct.unpack_from(">i", response)[0] == client.correlation
    finally:
        client.close()


def test_unreadable_topic_metadata_exits_254(tmp_path: Path) -> None:
    (tmp_path / "topics.json").write_text("{not json")
    result = run_broker("1", "127.0.0.1:0", tmp_path)
    assert result.returncode == 254 and "topics.json" in result.stderr


def test_idle_connections_are_closed(start_broker) -> None:
    broker = start_broker("connections.max.idle.ms=200")
    client = WireClient(broker.bootstrap, timeout=30)
    try:
        with pytest.raises(ConnectionError):
            client.recv_frame()  # nothing sent: the broker hangs up, not the 30 s timeout
    finally:
        client.close()
    assert_healthy_broker_answers(broker)


def assert_healthy_broker_answers(broker: BrokerProcess) -> None:
    client = WireClient(broker.bootstrap)
    try:
        response = client.request(
            18, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
        assert response.error_code == ErrorCode.none
    finally:
        client.close()
