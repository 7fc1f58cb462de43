"""Crash recovery of a real broker process: SIGKILL under load, optionally
followed by the loss of everything not fsynced (as the lose-unfsynced fault
does), then restart: acknowledged data and producer state must be intact."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from broker.log.ledger import LEDGER_NAME, read_ledger
from tests.broker.batches import make_batch, read_values
from tests.broker.test_clients import consume, create
from tests.broker.wire import WireClient, create_topic, fetch, produce
from tests.eventually import eventually
from workloads.handles import Clients

pytestmark = [pytest.mark.broker, pytest.mark.integration, pytest.mark.slow]


def lose_unfsynced(data_dir: Path) -> None:
    """What the lose-unfsynced fault does: every file but the ledger and the
    broker's log is cut to its last fsynced size (unrecorded files to 0 bytes)."""
    synced = read_ledger(data_dir)
    for path in data_dir.rglob("*"):
        rel = path.relative_to(data_dir).as_posix()
        if path.is_file() and rel not in (LEDGER_NAME, "broker.log"):
            os.truncate(path, min(path.stat().st_size, synced.get(rel, 0)))


@pytest.mark.parametrize("power_loss", [False, True])
def test_sigkill_under_idempotent_load_loses_and_duplicates_nothing(
    start_broker, kafka_clients: Clients, power_loss: bool
) -> None:
    broker: BrokerProcess = start_broker("flush.messages=1", "segment.bytes=65536")
    create(broker.bootstrap, "crash", 2)
    acked: list[tuple[int, int, bytes]] = []
    failed: list[object] = []
    producer = kafka_clients.producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 2,
        }
    )

    def report(err: object, msg: object) -> None:
        if err is None:
            acked.append((msg.partition(), msg.offset(), msg.value()))
        else:
            failed.append(err)

    total = 6000
    done = threading.Event()

    def load() -> None:
        for i in range(total):
            while True:
                try:
                    producer.produce("crash", b"c%05d" % i, partition=i % 2, on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
            if i % 200 == 0:
                time.sleep(0.02)
        done.set()

    thread = threading.Thread(target=load)
    thread.start()
    deadline = time.monotonic() + 30
    while len(acked) < 1500 and time.monotonic() < deadline:
        producer.poll(0.05)
    broker.kill()
    if power_loss:
        lose_unfsynced(broker.data_dir)
    broker.start()
    thread.join(60)
    assert done.is_set()
    assert producer.flush(60) == 0
    assert failed == []
    assert len(acked) == total
    for partition in (0, 1):
        offsets = sorted(o for p, o, _ in acked if p == partition)
        assert offsets == list(range(len(offsets)))  # dense: nothing lost, nothing duplicated
    got = consume(broker.bootstrap, "crash", 2, total)
    assert sorted(got) == sorted(v for _, _, v in acked)


def test_retried_batch_after_crash_and_power_loss_is_a_duplicate(start_broker) -> None:
    broker: BrokerProcess = start_broker("flush.messages=1")
    client = WireClient(broker.bootstrap)
    assert create_topic(client, "dedup").error_code == ErrorCode.none
    batches = [
        make_batch([b"d%d-%d" % (seq, j) for j in range(3)], 99, 0, seq) for seq in range(0, 30, 3)
    ]
    offsets = [produce(client, "dedup", 0, batch).base_offset for batch in batches]
    client.close()
    broker.kill()
    lose_unfsynced(broker.data_dir)
    broker.start()
    client = WireClient(broker.bootstrap)
    retry = produce(client, "dedup", 0, batches[-1])
    assert (retry.error_code, retry.base_offset) == (ErrorCode.none, offsets[-1])
    data = fetch(client, "dedup")
    assert data.high_watermark == 30
    assert [v for _, v in read_values(data.records)][-1] == b"d27-2"
    client.close()


def test_sigterm_is_a_clean_shutdown_and_restart_keeps_everything(start_broker) -> None:
    broker: BrokerProcess = start_broker()
    client = WireClient(broker.bootstrap)
    assert create_topic(client, "calm").error_code == ErrorCode.none
    produce(client, "calm", 0, make_batch([b"a", b"b"], 5, 0, 0))
    client.close()
    assert broker.stop() == 0
    assert (broker.data_dir / ".clean_shutdown").exists()
    log_text = (broker.data_dir / "broker.log").read_text()
    assert "stopped" in log_text and "request times produce: n=1 " in log_text
    broker.start()
    assert not (broker.data_dir / ".clean_shutdown").exists()
    client = WireClient(broker.bootstrap)
    retry = produce(client, "calm", 0, make_batch([b"a", b"b"], 5, 0, 0))
    assert (retry.error_code, retry.base_offset) == (ErrorCode.none, 0)
    assert produce(client, "calm", 0, make_batch([b"c"])).base_offset == 2
    client.close()


def test_garbage_after_the_last_batch_is_cut_at_restart(start_broker) -> None:
    broker: BrokerProcess = start_broker()
    client = WireClient(broker.bootstrap)
    assert create_topic(client, "torn").error_code == ErrorCode.none
    for i in range(5):
        produce(client, "torn", 0, make_batch([b"t%d" % i]))
    client.close()
    broker.kill()
    segment = broker.data_dir / "torn-0" / "00000000000000000000.log"
    with open(segment, "ab") as f:
        f.write(make_batch([b"half-written"])[:40])
    broker.start()
    client = WireClient(broker.bootstrap)
    assert produce(client, "torn", 0, make_batch([b"after"])).base_offset == 5
    client.close()
    assert "truncated a damaged tail" in (broker.data_dir / "broker.log").read_text()


def test_retention_runs_in_the_broker_and_moves_the_log_start(start_broker) -> None:
    broker: BrokerProcess = start_broker(
        "segment.bytes=1024", "retention.bytes=2048", "log.retention.check.interval.ms=100"
    )
    client = WireClient(broker.bootstrap)
    assert create_topic(client, "ret").error_code == ErrorCode.none
    for i in range(60):
        produce(client, "ret", 0, make_batch([b"%03d" % i + b"r" * 100]))

    def earliest_offset() -> int:
        response = client.request(
            2,
            7,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": "ret",
                        "partitions": [
                            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2}
                        ],
                    }
                ],
            },
        )
        return response.topics[0].partitions[0].offset

    time.sleep(0.1)  # a retention pass after the last produce before the first look
    earliest = eventually(earliest_offset, 30, interval=0.1, what="retention moved the log start")
    client.close()
    assert 0 < earliest < 60
    sizes = sum(p.stat().st_size for p in (broker.data_dir / "ret-0").glob("*.log"))
    assert sizes < 2048 + 1024
