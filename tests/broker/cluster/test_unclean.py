"""Unclean leader election off (the default): when every in-sync replica is gone, a
partition stays offline rather than electing an out-of-sync replica and losing
acknowledged records; it comes back with its last in-sync replica, data intact.
Five nodes and RF 2, so the controller quorum survives both replicas being down."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import (
    create_topic,
    metadata,
    partition_state,
    produce,
    read_partition,
    wait_state,
)

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]


@pytest.mark.parametrize("bug", [False, True], ids=["correct", "unclean-election"])
def test_partition_stays_offline_without_an_in_sync_replica(
    start_cluster: Callable[..., LocalCluster], bug: bool
) -> None:
    cluster = start_cluster(
        size=5,
        settings=("broker.session.timeout.ms=2000",),
        bugs=("unclean-election",) if bug else (),
    )
    create_topic(cluster.bootstrap, "precious", 1, 2)
    assert produce(cluster.bootstrap, "precious", {0: ["a"]}) == [None]
    partition = metadata(cluster.bootstrap).topics["precious"].partitions[0]
    leader = partition.leader
    (follower,) = [r for r in partition.replicas if r != leader]
    bystanders = [n for n in cluster.nodes if n not in partition.replicas]
    live = ",".join(cluster.nodes[n].address for n in bystanders)

    cluster.kill(follower)
    wait_state(live, "precious", lambda _leader, isr: isr == [leader])
    assert produce(cluster.nodes[leader].address, "precious", {0: ["only-on-leader"]}) == [None]
    cluster.kill(leader)
    wait_state(live, "precious", lambda new_leader, _isr: new_leader == -1)

    cluster.restart(follower)  # alive, but it never had "only-on-leader"
    if bug:  # the out-of-sync follower leads: the acknowledged record is lost
        wait_state(live, "precious", lambda new_leader, _isr: new_leader == follower)
        assert read_partition(live, "precious", 0, 2, timeout=5) == ["a"]
        return
    time.sleep(5)
    assert partition_state(live, "precious") == (-1, [leader])

    cluster.restart(leader)
    wait_state(live, "precious", lambda new_leader, _isr: new_leader == leader)
    assert read_partition(live, "precious", 0, 2) == ["a", "only-on-leader"]
