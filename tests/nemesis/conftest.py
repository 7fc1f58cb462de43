"""A real 3-node local cluster (network namespaces, reference brokers),
shared by the fault tests and healed after each one."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from harness.cluster import Cluster, ClusterSpec
from nemesis.base import NemesisContext
from tests.nemesis.probes import leftovers, netns_available


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    store = tmp_path_factory.mktemp("store")
    # Independent brokers: each fault is observed on the one node it hits
    # (the replicated cluster runs under faults in tests/harness/test_runner_cluster.py).
    spec = ClusterSpec(name=f"t{uuid.uuid4().hex[:8]}", backend="local", nodes=3, replicated=False)
    cluster = Cluster.up(spec, store)
    try:
        yield cluster
    finally:
        cluster.down()
        assert not leftovers(cluster.state["tag"])


@pytest.fixture
def cluster(local_cluster: Cluster) -> Iterator[Cluster]:
    """The shared cluster, healed after the test whatever happened."""
    try:
        yield local_cluster
    finally:
        local_cluster.heal()


@pytest.fixture
def nemesis_context(cluster: Cluster) -> Iterator[Callable[..., NemesisContext]]:
    """``cluster.nemesis_context``, each context closed after the test: one
    that asked who holds a role keeps an admin client until then."""
    with ExitStack() as stack:

        def context(**kwargs: Any) -> NemesisContext:
            return stack.enter_context(cluster.nemesis_context(**kwargs))

        yield context
