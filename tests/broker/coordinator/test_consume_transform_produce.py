"""Exactly-once consume-transform-produce across a crash of the worker process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from broker.launcher import BrokerProcess
from tests.broker.coordinator.kafka_helpers import create_topic, read_all, values_of
from workloads.handles import Clients

pytestmark = [pytest.mark.broker, pytest.mark.integration, pytest.mark.slow]
WORKER = Path(__file__).with_name("ctp_worker.py")
ROOT = Path(__file__).resolve().parents[3]
INPUTS = [f"v{i}" for i in range(40)]


def run_worker(bootstrap: str, *args: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the worker imports jepka's packages
    cmd = [sys.executable, str(WORKER), bootstrap, *args]
    return subprocess.run(cmd, env=env, timeout=120).returncode


def test_crash_mid_transaction_leaves_no_duplicate(
    coord_broker: BrokerProcess, kafka_clients: Clients
) -> None:
    bs = coord_broker.bootstrap
    create_topic(bs, "in", 2)
    create_topic(bs, "out", 2)
    producer = kafka_clients.producer({"bootstrap.servers": bs})
    for i, value in enumerate(INPUTS):
        producer.produce("in", value=value.encode(), partition=i % 2)
    assert producer.flush(30) == 0

    assert run_worker(bs, "3") == -9  # killed inside its third transaction
    assert run_worker(bs) == 0  # the restart fences the old epoch and finishes the copy

    committed = values_of(read_all(bs, "out", 2, "read_committed"))
    assert sorted(committed) == sorted(INPUTS)  # nothing lost, nothing twice
    everything = values_of(read_all(bs, "out", 2, "read_uncommitted"))
    assert len(everything) > len(committed)  # the crashed transaction did write (then aborted)
