"""Fixtures for multi-node tests: clusters of broker processes on 127.0.0.1, every
process killed by PID at teardown.

A failing test's report ends with the tail of each of its nodes' logs: a
cluster test that fails once in many runs leaves nothing else behind (its
temporary directories are gone by the time CI's output is read)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
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
#: how many lines of each node's broker.log and stderr a failing test's report shows
LOG_TAIL_LINES = 40
CLUSTERS = pytest.StashKey[list[LocalCluster]]()


@pytest.fixture
def start_cluster(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., LocalCluster]]:
    started: list[LocalCluster] = []
    request.node.stash[CLUSTERS] = started

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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Adds the tail of each node's broker.log and stderr to a failed test's report."""
    report = yield
    if report.when != "call" or not report.failed:
        return report
    clusters: list[LocalCluster] = item.stash.get(CLUSTERS, [])
    for index, cluster in enumerate(clusters):
        for node_id, node in cluster.nodes.items():
            for name, path in (
                ("broker.log", node.data_dir / "broker.log"),
                ("stderr", node.stderr_path),
            ):
                tail = _tail(path, LOG_TAIL_LINES)
                if tail:
                    report.sections.append((f"cluster{index} n{node_id} {name}", tail))
    return report


def _tail(path: Path, lines: int) -> str:
    try:
        return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])
    except FileNotFoundError:
        return ""
    except OSError as error:
        return f"(unreadable: {error})"
