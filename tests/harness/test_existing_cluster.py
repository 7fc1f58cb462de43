"""`jepka test` against a cluster it did not start (``--bootstrap-server``):
each run keeps to topics, a group and transactional ids of its own, so a
second run never meets the first one's records, and its topics get the
test's min.insync.replicas whatever the cluster's default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka.admin import ConfigResource

from broker.launcher import BrokerProcess
from harness.cli import main
from workloads.handles import Clients

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.broker, pytest.mark.spark]


def test_two_runs_in_a_row_are_valid_on_topics_of_their_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a cluster whose default min.insync.replicas (2) is not the test's (1):
    # the test's topics carry the test's own setting
    broker = BrokerProcess(tmp_path / "data", ["min.insync.replicas=2"]).start(60)
    properties = tmp_path / "client.properties"
    properties.write_text("# for every producer, consumer and admin\nclient.id=jepka-test\n")
    store = tmp_path / "store"
    runs = []
    try:
        for _ in range(2):
            code = main(
                [
                    "test",
                    *("--workload", "queue", "--time-limit", "4", "--rate", "40"),
                    *("--concurrency", "3", "--seed", "1", "--key-count", "4"),
                    *("--recovery-time", "0.5", "--final-time-limit", "20"),
                    *("--bootstrap-server", broker.bootstrap),
                    *("--client-config", str(properties), "--store", str(store)),
                ]
            )
            out, err = capsys.readouterr()
            assert code == 0 and "valid: True" in out, out + err
            runs.append(json.loads(((store / "latest").resolve() / "test.json").read_text()))
        first, second = ({topic for topic, _ in run["keys"].values()} for run in runs)
        assert len(first) == 2 and len(second) == 2 and not first & second
        assert runs[0]["namespace"] != runs[1]["namespace"]
        with Clients() as clients:
            admin = clients.admin({"bootstrap.servers": broker.bootstrap})
            assert first | second <= set(admin.list_topics(timeout=10).topics)
            resource = ConfigResource(ConfigResource.Type.TOPIC, sorted(second)[0])
            configs = admin.describe_configs([resource])[resource].result(10)
        assert configs["min.insync.replicas"].value == "1"
    finally:
        broker.kill()
