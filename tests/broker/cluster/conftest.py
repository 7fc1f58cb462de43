"""Fixtures for multi-node tests: clusters of broker processes on 127.0.0.1, every
process killed by PID at teardown."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.replication.local_cluster import LocalCluster

SMALL_INTERNAL_TOPICS = [
    "offsets.topic.num.partitions=3",
    "transaction.state.log.num.partitions=3",
    "group.initial.rebalance.delay.ms=0",
]
#: a killed node's partitions move 1.5 s after its connections close, not
#: after its whole session (the broker's default, as Kafka)
FAST_FAILOVER = ["broker.session.disconnect.grace.ms=1500"]


@pytest.fixture
def start_cluster(tmp_path: Path) -> Iterator[Callable[..., LocalCluster]]:
    started: list[LocalCluster] = []

    def start(
        size: int = 3,
        settings: tuple[str, ...] = (),
        bugs: tuple[str, ...] = (),
        controllers: int = 0,
    ) -> LocalCluster:
        cluster = LocalCluster(
            tmp_path / f"cluster{len(started)}",
            size,
            [*SMALL_INTERNAL_TOPICS, *FAST_FAILOVER, *settings],
            list(bugs),
            controllers=controllers,
        )
        started.append(cluster)
        return cluster.start()

    yield start
    for cluster in started:
        cluster.kill_all()
