from __future__ import annotations

import itertools
import os

from broker.replication import local_cluster
from broker.replication.local_cluster import free_ports
from tests.ports import ALL_PORTS, worker_share


def test_workers_share_the_range_without_overlap() -> None:
    shares = [set(worker_share(ALL_PORTS, f"gw{i}", 3)) for i in range(3)]
    assert all(shares) and set().union(*shares) <= set(ALL_PORTS)
    assert not any(a & b for a, b in itertools.combinations(shares, 2))
    assert worker_share(ALL_PORTS, "gw0", 1) == ALL_PORTS
    # a worker replacing a crashed one is numbered after the last
    assert worker_share(ALL_PORTS, "gw3", 3) == worker_share(ALL_PORTS, "gw0", 3)


def test_this_worker_draws_from_its_share() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    mine = worker_share(ALL_PORTS, worker, count) if worker else ALL_PORTS
    assert mine == local_cluster.PORT_RANGE
    assert all(p in mine for p in free_ports(20))
