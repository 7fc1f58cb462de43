"""min.insync.replicas at work, and the bug that ignores it (Jepsen's 2013 Kafka
finding): once the ISR has shrunk to the leader alone, an acks=all write is
refused; with ``min-isr-ignored`` the lone leader acknowledges it, and when it
fails an out-of-sync replica takes over without it. Five nodes and RF 2, so
the controller quorum survives both replicas being down."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import (
    create_topic,
    metadata,
    produce,
    read_partition,
    wait_state,
)

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]


@pytest.mark.parametrize("bug", [False, True], ids=["correct", "min-isr-ignored"])
def test_a_lone_leader_acknowledges_acks_all_only_with_the_bug(
    start_cluster: Callable[..., LocalCluster], bug: bool
) -> None:
    cluster = start_cluster(
        size=5,
        settings=("broker.session.timeout.ms=2000",),
        bugs=("min-isr-ignored",) if bug else (),
    )
    create_topic(cluster.bootstrap, "guarded", 1, 2, **{"min.insync.replicas": "2"})
    assert produce(cluster.bootstrap, "guarded", {0: ["a"]}) == [None]
    partition = metadata(cluster.bootstrap).topics["guarded"].partitions[0]
    leader = partition.leader
    (follower,) = [r for r in partition.replicas if r != leader]
    live = ",".join(cluster.nodes[n].address for n in cluster.nodes if n not in partition.replicas)

    cluster.kill(follower)
    wait_state(live, "guarded", lambda _leader, isr: isr == [leader])
    (alone,) = produce(
        cluster.nodes[leader].address, "guarded", {0: ["alone"]}, **{"message.timeout.ms": 3000}
    )
    if not bug:  # refused: the ISR is below min.insync.replicas
        assert alone is not None
        assert read_partition(cluster.nodes[leader].address, "guarded", 0, 2, timeout=3) == ["a"]
        return
    assert alone is None  # acknowledged by the leader alone...
    cluster.kill(leader)
    cluster.restart(follower)
    wait_state(live, "guarded", lambda new_leader, _isr: new_leader == follower)
    assert read_partition(live, "guarded", 0, 2, timeout=5) == ["a"]  # ...and lost
