"""The loopback ports each pytest-xdist worker's local brokers draw from."""

from __future__ import annotations

from broker.replication import local_cluster

#: every port a local broker may draw, before a worker takes its share
ALL_PORTS = local_cluster.PORT_RANGE


def worker_share(ports: range, worker: str, workers: int) -> range:
    """Worker ``gwN``'s share of ``ports``: disjoint from every other
    worker's, so that no two workers draw the same port. pytest-xdist
    numbers a worker that replaces a crashed one after the last (``gw3`` of
    three); it draws from the share of its number modulo ``workers``, which
    a live worker may draw from too (``free_ports`` skips a bound port)."""
    index = int(worker.removeprefix("gw")) % workers
    size = len(ports) // workers
    return ports[index * size : (index + 1) * size]
