"""Each switchable bug breaks what it names, shown at the broker level: the same
steps with the bug off keep the guarantee (so these tests can fail both ways)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import create_topic, leader_of, produce, read_partition

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]
SETTINGS = ("broker.session.timeout.ms=3000",)
FETCH_MAX_WAIT_S = 0.5  # the replica fetcher's long-poll wait


def isolate_leader(cluster: LocalCluster, topic: str) -> tuple[int, str]:
    """Pauses (SIGSTOP) both followers of ``topic``-0; returns the leader and survivors.

    The leader still answers the followers' outstanding long-poll fetches (into their
    socket buffers, read on resume): waiting out the fetch max wait lets those answer
    empty, so no later write reaches a follower."""
    leader = leader_of(cluster.bootstrap, topic)
    for node_id, node in cluster.nodes.items():
        if node_id != leader:
            node.pause()
    time.sleep(FETCH_MAX_WAIT_S + 0.5)
    survivors = ",".join(n.address for n in cluster.nodes.values() if n.node_id != leader)
    return leader, survivors


def fail_over(cluster: LocalCluster, leader: int) -> None:
    """SIGKILLs the leader and resumes the followers, which elect one of themselves."""
    cluster.kill(leader)
    for node_id, node in cluster.nodes.items():
        if node_id != leader:
            node.resume()


@pytest.mark.parametrize("bug", [True, False], ids=["early-ack", "correct"])
def test_early_ack_acknowledges_writes_a_failover_loses(
    start_cluster: Callable[..., LocalCluster], bug: bool
) -> None:
    cluster = start_cluster(settings=SETTINGS, bugs=("early-ack",) if bug else ())
    create_topic(cluster.bootstrap, "acks", 1, 3, **{"min.insync.replicas": "2"})
    assert produce(cluster.bootstrap, "acks", {0: ["safe"]}) == [None]
    # Consumers read below the HW only: once "safe" is readable every follower has it
    # (with the bug its acknowledgement alone would not say so).
    assert read_partition(cluster.bootstrap, "acks", 0, 1) == ["safe"]
    leader, survivors = isolate_leader(cluster, "acks")
    outcome = produce(
        cluster.nodes[leader].address, "acks", {0: ["early"]}, **{"message.timeout.ms": 2000}
    )
    fail_over(cluster, leader)
    after = read_partition(survivors, "acks", 0, 2, timeout=20)
    if bug:
        assert outcome == [None]  # acknowledged while no follower had it...
        assert after == ["safe"]  # ...and gone after the failover: a lost write
    else:
        assert outcome[0] is not None  # never acknowledged
        assert after == ["safe"]


@pytest.mark.parametrize("bug", [True, False], ids=["read-above-hw", "correct"])
def test_read_above_hw_serves_records_a_failover_truncates(
    start_cluster: Callable[..., LocalCluster], bug: bool
) -> None:
    # Followers stay paused through the read: a session longer than that keeps them
    # in the ISR, so a follower (not an empty ISR) takes over.
    cluster = start_cluster(
        settings=("broker.session.timeout.ms=8000",), bugs=("read-above-hw",) if bug else ()
    )
    create_topic(cluster.bootstrap, "reads", 1, 3)
    assert produce(cluster.bootstrap, "reads", {0: ["committed"]}) == [None]
    leader, survivors = isolate_leader(cluster, "reads")
    assert produce(cluster.nodes[leader].address, "reads", {0: ["unreplicated"]}, acks=1) == [None]
    seen = read_partition(cluster.nodes[leader].address, "reads", 0, 2, timeout=3)
    fail_over(cluster, leader)
    time.sleep(1)
    after = read_partition(survivors, "reads", 0, 1, timeout=40)
    assert after == ["committed"]  # the new leader never had the unreplicated record
    if bug:
        assert seen == ["committed", "unreplicated"]  # a read of data that was then lost
    else:
        assert seen == ["committed"]
