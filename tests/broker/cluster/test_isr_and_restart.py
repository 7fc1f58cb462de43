"""ISR shrink by lag and restarts under faults, on 3 broker processes with
confluent-kafka clients: a paused follower (alive, registered, its session not
yet expired) leaves the ISR after ``replica.lag.time.max.ms`` so acks=all writes
go on, and returns once it has caught up; a node restarted while its quorum is
cut off is up at once and serves as soon as the quorum is back; a restart reads
the leader-epoch and high-watermark checkpoints back."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from broker.log.hw_checkpoint import CHECKPOINT_NAME
from broker.log.leader_epoch_cache import CHECKPOINT_NAME as EPOCHS
from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import (
    create_topic,
    leader_of,
    metadata,
    produce,
    read_partition,
)
from tests.eventually import eventually

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]
#: fencing cannot explain an ISR shrink within this test: only the lag can
LAGGING = ("replica.lag.time.max.ms=1500", "broker.session.timeout.ms=60000")


def isr_of(bootstrap: str, topic: str) -> set[int]:
    return set(metadata(bootstrap, topic).topics[topic].partitions[0].isrs)


def test_a_paused_follower_leaves_the_isr_by_lag_and_returns_after_catching_up(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = start_cluster(settings=LAGGING)
    create_topic(cluster.bootstrap, "lag", 1, 3, **{"min.insync.replicas": "2"})
    assert produce(cluster.bootstrap, "lag", {0: ["before"]}) == [None]
    leader = leader_of(cluster.bootstrap, "lag")
    controller = metadata(cluster.bootstrap).controller_id
    followers = [n for n in cluster.nodes if n != leader]
    paused = next((n for n in followers if n != controller), followers[0])
    live = ",".join(n.address for i, n in cluster.nodes.items() if i != paused)
    cluster.nodes[paused].pause()
    try:
        # the HW waits for the paused follower until the leader drops it from the ISR
        outcome = produce(live, "lag", {0: ["during"]}, **{"message.timeout.ms": 30000})
        assert outcome == [None]
        # the leader's shrink is committed; the other live broker applies it a moment later
        eventually(
            lambda: paused not in isr_of(live, "lag"),
            5,
            interval=0.2,
            what="the ISR shrink is visible",
        )
        brokers = {b.id for b in metadata(live).brokers.values()}
        assert paused in brokers, "the follower was fenced, not shrunk out for lag"
    finally:
        cluster.nodes[paused].resume()
    eventually(
        lambda: isr_of(cluster.bootstrap, "lag") == {1, 2, 3},
        30,
        interval=0.2,
        what="the follower rejoins",
    )
    assert read_partition(cluster.bootstrap, "lag", 0, 2) == ["before", "during"]


def test_a_node_restarted_while_its_quorum_is_cut_off_is_up_and_serves_once_it_returns(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = start_cluster()
    create_topic(cluster.bootstrap, "cut", 1, 3, **{"min.insync.replicas": "2"})
    assert produce(cluster.bootstrap, "cut", {0: ["a"]}) == [None]
    cluster.kill(1)
    for other in (2, 3):
        cluster.nodes[other].pause()
    try:
        cluster.restart(1, timeout=30, ready=False)  # up without a quorum in reach
        assert cluster.nodes[1].alive()
    finally:
        for other in (2, 3):
            cluster.nodes[other].resume()
    cluster.wait_ready([1], timeout=60)
    own = cluster.nodes[1].address
    eventually(lambda: leader_of(own, "cut") >= 0, 30, interval=0.2, what="node 1 names a leader")
    assert produce(cluster.bootstrap, "cut", {0: ["b"]}, **{"message.timeout.ms": 30000}) == [None]
    assert read_partition(own, "cut", 0, 2) == ["a", "b"]


def test_a_restart_reads_the_epoch_and_hw_checkpoints_back(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    """After a clean restart of a follower its checkpoints name the leader's epoch and
    the HW it had, and it rejoins without losing or repeating a record."""
    cluster = start_cluster(settings=("replica.high.watermark.checkpoint.interval.ms=200",))
    create_topic(cluster.bootstrap, "ckpt", 1, 3, **{"min.insync.replicas": "2"})
    assert produce(cluster.bootstrap, "ckpt", {0: ["a", "b", "c"]}) == [None] * 3
    leader = leader_of(cluster.bootstrap, "ckpt")
    follower = next(n for n in cluster.nodes if n != leader)
    node = cluster.nodes[follower]
    epochs = node.data_dir / "ckpt-0" / EPOCHS
    hws = node.data_dir / CHECKPOINT_NAME
    eventually(
        lambda: hws.exists() and "ckpt 0 3" in hws.read_text(),
        30,
        interval=0.2,
        what="the HW is checkpointed",
    )
    assert epochs.read_text().splitlines()[:2] == ["0", "1"]  # one epoch, from offset 0
    assert epochs.read_text().splitlines()[2].split()[1] == "0"
    node.stop()
    assert "ckpt 0 3" in hws.read_text()  # written at clean shutdown too
    cluster.restart(follower)
    assert produce(cluster.bootstrap, "ckpt", {0: ["d"]}) == [None]
    assert read_partition(cluster.bootstrap, "ckpt", 0, 4) == ["a", "b", "c", "d"]
    eventually(
        lambda: "ckpt 0 4" in hws.read_text(),
        30,
        interval=0.2,
        what="the restarted follower's HW moves on",
    )
