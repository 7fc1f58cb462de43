"""Producer ids on a cluster come from blocks the active controller grants and records
in the metadata log: idempotent producers initialised through every node get distinct
ids, each node draws from its own block, and after the active controller is SIGKILLed
and restarted no id is handed out twice."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from kio.schema.errors import ErrorCode

from broker.controller.requests import ControllerConfig
from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import admin
from tests.broker.coordinator.wire_calls import init_producer_id
from tests.broker.wire import WireClient

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]

BLOCK = ControllerConfig().producer_id_block_size
PER_NODE = 5


def new_ids(address: str, count: int = PER_NODE) -> list[int]:
    """InitProducerId without a transactional id, retried while no block is granted."""
    client = WireClient(address)
    ids: list[int] = []
    deadline = time.monotonic() + 30
    try:
        while len(ids) < count:
            answer = init_producer_id(client, None)
            if answer.error_code == ErrorCode.none:
                ids.append(answer.producer_id)
            else:
                assert time.monotonic() < deadline, f"{address}: {answer.error_code!r}"
                time.sleep(0.2)
    finally:
        client.close()
    return ids


def active_controller(bootstrap: str) -> int:
    with admin(bootstrap) as client:
        return client.describe_cluster(request_timeout=10).result(30).controller.id


def test_no_two_nodes_hand_out_the_same_producer_id(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = start_cluster(settings=("broker.session.timeout.ms=2000",))
    before = {n: new_ids(node.address) for n, node in cluster.nodes.items()}
    blocks = {n: {pid // BLOCK for pid in ids} for n, ids in before.items()}
    assert all(len(b) == 1 for b in blocks.values()), blocks  # one block per node so far
    assert len(set.union(*blocks.values())) == len(cluster.nodes), blocks  # none shared

    controller = active_controller(cluster.bootstrap)
    cluster.kill(controller)
    cluster.restart(controller)
    after = {n: new_ids(node.address) for n, node in cluster.nodes.items()}
    every = [pid for ids in (*before.values(), *after.values()) for pid in ids]
    assert len(every) == len(set(every)), "a producer id was handed out twice"
    # The restarted node lost its block in memory: it asks for a new one, never reuses.
    assert {pid // BLOCK for pid in after[controller]}.isdisjoint(blocks[controller])
