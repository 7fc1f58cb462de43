"""Shared pytest setup: package-specific fixtures live in tests/<package>/conftest.py.

Every test must close the Kafka clients it makes. A client left open keeps
its threads reconnecting to brokers that are gone; hundreds of them once
held a finished run for ten more minutes at exit. So each test fails its
teardown if it leaves client threads behind, and a session that still has
some at its end exits at once, after its summary, with a failing status.

``make test`` runs the tests on a few pytest-xdist workers: most of their
time is spent waiting on brokers and timers, not computing. Tests that build
clusters of network namespaces or containers (``netns``, ``docker``) share
one worker and run one after another, so no two fault schedules compete.

Each worker draws the loopback ports of its local brokers from a share of
``PORT_RANGE`` of its own: a port is checked free when drawn and bound by
the broker a moment later, and two workers drawing the same port in that
moment collided ("address already in use").

Property and fuzz tests draw the same examples on every run (hypothesis
derandomized, no example database), so they cannot fail at random; the
long randomized fuzzing is `make acceptance`'s broker campaign.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from hypothesis import settings

from broker.replication import local_cluster
from tests.client_threads import Snapshot, client_threads, describe, left_after
from tests.ports import ALL_PORTS, worker_share
from workloads.handles import Clients

settings.register_profile("deterministic", derandomize=True, database=None)
settings.load_profile("deterministic")

GRACE_S = 2.0  # for handles still being destroyed when the test returns
EXIT_STATUS = pytest.StashKey[int]()
SERIAL_MARKERS = ("netns", "docker")


def pytest_configure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return
    workers = int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    local_cluster.PORT_RANGE = worker_share(ALL_PORTS, worker, workers)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Puts every cluster-building test in one xdist group (``--dist loadgroup``)."""
    for item in items:
        if any(item.get_closest_marker(m) for m in SERIAL_MARKERS):
            item.add_marker(pytest.mark.xdist_group("clusters"))


@pytest.fixture(autouse=True)
def no_client_thread_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails the test's teardown if client threads it started are still alive
    (set up before and torn down after the test's other function fixtures)."""
    before = Snapshot.take()
    yield
    left = left_after(before, GRACE_S)
    if left:
        pytest.fail(
            f"{request.node.nodeid} left {describe(left)} running {GRACE_S:g} s "
            "after its teardown: close every client it makes "
            "(the kafka_clients fixture, workloads.handles.Clients)",
            pytrace=False,
        )


@pytest.fixture
def kafka_clients() -> Iterator[Clients]:
    """Makes confluent-kafka clients and closes them all after the test,
    however it ended."""
    with Clients() as clients:
        yield clients


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[EXIT_STATUS] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """After the summary: with client threads still alive, the interpreter's
    exit would destroy their handles one by one for minutes, so it is skipped
    (and the run fails)."""
    left = client_threads()
    if not left or hasattr(config, "workerinput"):
        return  # an xdist worker: its controller ends it 10 s after its results
    status = config.stash.get(EXIT_STATUS, 0) or pytest.ExitCode.TESTS_FAILED
    print(
        f"\nFAILED: {describe(left)} still alive at the end of the session (a test or "
        f"fixture did not close its clients); exiting now with status {status} instead "
        "of waiting for them",
        file=sys.stderr,
        flush=True,
    )
    sys.stdout.flush()
    os._exit(status)
