"""The quorum controller on a simulated 3- and 5-voter Raft quorum: one active
controller, brokers fenced and unfenced by their sessions, topics created across a
controller failover, and a stale controller fenced."""

from __future__ import annotations

import itertools

import pytest
from kio.schema.errors import ErrorCode

from broker.controller.quorum_controller import NotControllerError
from broker.controller.requests import (
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ControllerConfig,
    CreatableTopic,
    CreatableTopicResult,
    ProducerIdsResponse,
)
from tests.broker.controller.controller_cluster import ControllerCluster, not_controller


def ready_cluster(voters: int = 3, seed: int = 1) -> ControllerCluster:
    cluster = ControllerCluster(voters, seed)
    cluster.add_brokers(1, 2, 3)
    cluster.wait_active()
    cluster.run_for(2000)
    image = cluster.active().loader.image  # type: ignore[union-attr]
    assert image.unfenced_brokers() == [1, 2, 3]
    return cluster


def test_only_the_raft_leader_is_active_and_others_refuse() -> None:
    cluster = ready_cluster()
    active = cluster.wait_active()
    assert active.raft is not None and active.raft.is_ready_leader()
    for node_id, controller in cluster.controllers.items():
        if controller is active:
            continue
        future = controller.create_topics([CreatableTopic("x")])
        assert not_controller(future)
        error = future.exception()
        assert isinstance(error, NotControllerError) and error.leader_id == active.node_id
        assert error.code is ErrorCode.not_controller and node_id != active.node_id


def test_created_topics_reach_every_node() -> None:
    cluster = ready_cluster(5, seed=2)
    active = cluster.wait_active()
    results = cluster.wait(active.create_topics([CreatableTopic("orders", 6, 3)]))
    first: CreatableTopicResult = results[0]  # type: ignore[index]
    assert first.error_code is ErrorCode.none
    cluster.run_for(500)
    topics = {i: img.topic("orders") for i, img in cluster.images().items()}
    assert topics[active.node_id] is not None
    assert all(t == topics[active.node_id] for t in topics.values())


def test_session_expiry_fences_the_broker_and_moves_its_leaderships() -> None:
    cluster = ready_cluster()
    active = cluster.wait_active()
    cluster.wait(active.create_topics([CreatableTopic("t", 6, 3)]))
    before = active.loader.image.topic("t")
    assert before is not None
    led = {p for p, r in before.partitions.items() if r.leader == 2}
    assert led
    cluster.brokers[2].alive = False
    cluster.run_for(cluster.controller_config.session_timeout_ms + 1000)
    image = cluster.wait_active().loader.image
    assert image.brokers[2].fenced
    after = image.topic("t")
    assert after is not None
    for p, reg in after.partitions.items():
        assert 2 not in reg.isr and reg.leader != 2
        if p in led:
            assert reg.leader_epoch == before.partitions[p].leader_epoch + 1
    cluster.brokers[2].alive = True
    cluster.run_for(1500)
    assert not cluster.wait_active().loader.image.brokers[2].fenced


def test_heartbeat_with_stale_broker_epoch_is_refused() -> None:
    cluster = ready_cluster()
    active = cluster.wait_active()
    future = active.broker_heartbeat(BrokerHeartbeatRequest(1, -5, 0))
    assert future.result().error_code is ErrorCode.stale_broker_epoch  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_controller_failover_while_topics_are_created(seed: int) -> None:
    cluster = ready_cluster(3, seed)
    futures = {}
    crashed = None
    lost: set[str] = set()
    for i in range(40):
        controller = cluster.active()
        if controller is not None:
            futures[f"topic-{i}"] = controller.create_topics([CreatableTopic(f"topic-{i}", 2, 3)])
        if i == 15 and controller is not None:
            crashed = controller.node_id
            cluster.crash(crashed)  # the answers it still owed are lost with it
            lost = {n for n, f in futures.items() if not f.done()}
        cluster.run_for(100)
    assert crashed is not None
    cluster.start(crashed)
    cluster.run_for(3000)
    images = cluster.images()
    names = {i: sorted(img.topic_ids) for i, img in images.items()}
    assert len({tuple(v) for v in names.values()}) == 1, "nodes disagree on the topics"
    final = next(iter(images.values()))
    acked = [n for n, f in futures.items() if f.done() and f.exception() is None]
    refused = [n for n, f in futures.items() if not_controller(f)]
    assert len(acked) >= 20
    for name in acked:
        assert final.topic(name) is not None, f"acknowledged {name} was lost"
    assert set(acked) | set(refused) | lost == set(futures), "an operation never completed"


def test_stale_controller_is_fenced_and_its_writes_never_apply() -> None:
    cluster = ready_cluster(3, seed=6)
    old = cluster.wait_active()
    others = set(cluster.ids) - {old.node_id}
    cluster.network.partition([{old.node_id}, others])
    doomed = old.create_topics([CreatableTopic("split-brain", 1, 1)])
    cluster.run_for(3000)
    new = cluster.active()
    assert new is not None and new.node_id != old.node_id
    assert not_controller(doomed)
    assert not_controller(old.create_topics([CreatableTopic("late", 1, 1)]))
    cluster.network.heal()
    cluster.run_for(3000)
    for image in cluster.images().values():
        assert image.topic("split-brain") is None and image.topic("late") is None


def test_producer_id_blocks_never_overlap_across_failover() -> None:
    cluster = ready_cluster(3, seed=7)
    blocks = []
    for round_ in range(3):
        active = cluster.wait_active()
        epoch = cluster.brokers[1].epoch
        assert epoch is not None
        response = cluster.wait(active.allocate_producer_ids(1, epoch))
        assert isinstance(response, ProducerIdsResponse) and response.error_code is ErrorCode.none
        blocks.append(
            range(response.producer_id_start, response.producer_id_start + response.producer_id_len)
        )
        if round_ < 2:
            cluster.crash(active.node_id)
            cluster.wait_active()
            cluster.start(active.node_id)
            cluster.run_for(1000)
    starts = [b.start for b in blocks]
    assert starts == sorted(set(starts))
    assert all(a.stop <= b.start for a, b in itertools.pairwise(blocks))


def test_restarted_controller_rebuilds_the_same_image_from_snapshot_and_log() -> None:
    cluster = ready_cluster(3, seed=8)
    for i in range(12):
        active = cluster.wait_active()
        cluster.wait(active.create_topics([CreatableTopic(f"t{i}", 3, 2)]))
    follower = next(i for i in cluster.ids if i != cluster.wait_active().node_id)
    cluster.crash(follower)
    for i in range(12, 20):
        cluster.wait(cluster.wait_active().create_topics([CreatableTopic(f"t{i}", 3, 2)]))
    cluster.start(follower)
    cluster.run_for(2000)
    assert cluster.nodes[follower].log.start_offset > 0, "expected a snapshot to be used"
    images = cluster.images()
    reference = images[cluster.wait_active().node_id]
    assert dict(images[follower].topics) == dict(reference.topics)
    assert dict(images[follower].brokers) == dict(reference.brokers)


def test_reregistration_fences_the_old_epoch_and_moves_its_leaderships() -> None:
    cluster = ready_cluster(3, seed=9)
    active = cluster.wait_active()
    cluster.wait(active.create_topics([CreatableTopic("t", 6, 3)]))
    old_epoch = active.loader.image.brokers[2].broker_epoch
    again = cluster.wait(active.register_broker(BrokerRegistrationRequest(2, "inc-2", "h", 9092)))
    assert isinstance(again, BrokerRegistrationResponse) and again.broker_epoch > old_epoch
    image = active.loader.image
    assert image.brokers[2].fenced
    topic = image.topic("t")
    assert topic is not None
    assert all(r.leader != 2 and 2 not in r.isr for r in topic.partitions.values())
    stale = cluster.wait(active.broker_heartbeat(BrokerHeartbeatRequest(2, old_epoch, 10**6)))
    assert stale.error_code is ErrorCode.stale_broker_epoch  # type: ignore[attr-defined]
    cluster.brokers[2].epoch = again.broker_epoch
    cluster.run_for(1000)
    assert not cluster.wait_active().loader.image.brokers[2].fenced


@pytest.mark.parametrize("unclean", ["false", "true"])
def test_losing_the_whole_isr_honours_unclean_leader_election(unclean: str) -> None:
    cluster = ready_cluster(3, seed=10)
    active = cluster.wait_active()
    configs = {"unclean.leader.election.enable": unclean}
    cluster.wait(active.create_topics([CreatableTopic("t", 1, 3, configs)]))
    topic = active.loader.image.topic("t")
    assert topic is not None
    reg = topic.partitions[0]
    leader = reg.leader
    epoch = active.loader.image.brokers[leader].broker_epoch
    shrink = AlterPartitionRequest(leader, epoch, topic.topic_id, 0, 0, 0, (leader,))
    assert cluster.wait(active.alter_partition(shrink)).error_code is ErrorCode.none  # type: ignore[attr-defined]
    cluster.brokers[leader].alive = False
    cluster.run_for(cluster.controller_config.session_timeout_ms + 1000)
    after = cluster.wait_active().loader.image.partition(topic.topic_id, 0)
    assert after is not None
    if unclean == "false":
        assert (after.leader, after.isr) == (-1, (leader,)), "must stay offline, not lose data"
        cluster.brokers[leader].alive = True
        cluster.run_for(1500)
        back = cluster.wait_active().loader.image.partition(topic.topic_id, 0)
        assert back is not None and back.leader == leader
    else:
        assert after.leader not in (-1, leader) and after.isr == (after.leader,)


def grace_cluster() -> ControllerCluster:
    """Sessions of 6 s, cut to 0.5 s when a broker's connection closes."""
    config = ControllerConfig(session_timeout_ms=6000, disconnect_grace_ms=500)
    cluster = ControllerCluster(3, 11, config)
    cluster.add_brokers(1, 2, 3)
    cluster.wait_active()
    cluster.run_for(2000)
    assert cluster.wait_active().loader.image.unfenced_brokers() == [1, 2, 3]
    return cluster


def test_a_broker_whose_connection_closed_is_fenced_after_the_grace() -> None:
    cluster = grace_cluster()
    active = cluster.wait_active()
    dead = next(b for b in (1, 2, 3) if b != active.node_id)
    cluster.brokers[dead].alive = False
    active.broker_disconnected(dead)
    cluster.run_for(1000)  # far less than the 6 s session
    assert cluster.wait_active().loader.image.unfenced_brokers() == sorted({1, 2, 3} - {dead})
    cluster.brokers[dead].alive = True
    cluster.run_for(1000)
    assert cluster.wait_active().loader.image.unfenced_brokers() == [1, 2, 3]


def test_a_new_controller_gives_its_lost_predecessor_only_the_grace() -> None:
    cluster = grace_cluster()
    old = cluster.wait_active().node_id
    cluster.crash(old)
    cluster.brokers[old].alive = False  # the node's broker died with it
    cluster.wait_active()
    cluster.run_for(1500)
    assert cluster.wait_active().loader.image.unfenced_brokers() == sorted({1, 2, 3} - {old})


def test_a_new_controller_gives_a_silent_predecessor_its_whole_session() -> None:
    """A paused or cut-off controller node is still there: only a process that is
    gone gets the grace, so a pause fences the same whichever node it hits."""
    cluster = grace_cluster()
    old = cluster.wait_active().node_id
    cluster.network.partition([{old}, {1, 2, 3} - {old}])
    cluster.brokers[old].alive = False  # its broker is silent too
    cluster.run_for(1500)
    assert cluster.wait_active().node_id != old
    assert cluster.wait_active().loader.image.unfenced_brokers() == [1, 2, 3]
    cluster.run_for(6000)
    assert cluster.wait_active().loader.image.unfenced_brokers() == sorted({1, 2, 3} - {old})


def _back_in_sync(cluster: ControllerCluster, topic_id: str, broker_id: int) -> None:
    """Each partition's leader adds ``broker_id`` back to its ISR, as it does once
    the returned replica has caught up."""
    active = cluster.wait_active()
    image = active.loader.image
    for p, reg in image.topics[topic_id].partitions.items():
        if broker_id in reg.isr:
            continue
        epoch = image.brokers[reg.leader].broker_epoch
        grow = AlterPartitionRequest(
            reg.leader,
            epoch,
            topic_id,
            p,
            reg.leader_epoch,
            reg.partition_epoch,
            (*reg.isr, broker_id),
        )
        assert cluster.wait(active.alter_partition(grow)).error_code is ErrorCode.none  # type: ignore[attr-defined]


@pytest.mark.parametrize("rebalance", [True, False], ids=["auto-rebalance", "disabled"])
def test_preferred_replicas_take_their_leaderships_back_once_in_sync(rebalance: bool) -> None:
    """auto.leader.rebalance.enable: leaderships a fenced broker lost go back to it
    a check interval after it is in sync again, never while it is out of the ISR,
    and never with the rebalance disabled."""
    interval = 3000
    config = ControllerConfig(leader_imbalance_check_interval_ms=interval if rebalance else None)
    cluster = ControllerCluster(3, 12, config)
    cluster.add_brokers(1, 2, 3)
    cluster.wait_active()
    cluster.run_for(2000)
    active = cluster.wait_active()
    cluster.wait(active.create_topics([CreatableTopic("t", 6, 3)]))
    before = active.loader.image.topic("t")
    assert before is not None
    victim = next(b for b in (1, 2, 3) if b != active.node_id)
    preferred = {p for p, r in before.partitions.items() if r.replicas[0] == victim}
    assert preferred and all(before.partitions[p].leader == victim for p in preferred)
    cluster.brokers[victim].alive = False
    cluster.run_for(config.session_timeout_ms + 1000)
    cluster.brokers[victim].alive = True
    cluster.run_for(2 * interval)  # unfenced but not in sync: it must not lead
    moved = cluster.wait_active().loader.image.topic("t")
    assert moved is not None
    assert all(moved.partitions[p].leader not in (victim, -1) for p in preferred)
    _back_in_sync(cluster, before.topic_id, victim)
    cluster.run_for(2 * interval)
    after = cluster.wait_active().loader.image.topic("t")
    assert after is not None
    for p in preferred:
        reg = after.partitions[p]
        assert (reg.leader == victim) is rebalance, (p, reg)
        if rebalance:
            assert reg.leader_epoch == moved.partitions[p].leader_epoch + 1
    others = set(after.partitions) - preferred
    assert all(after.partitions[p].leader == moved.partitions[p].leader for p in others)


def test_without_a_grace_a_closed_connection_keeps_the_whole_session() -> None:
    """The broker's default, as Kafka: a killed broker is fenced once its
    session runs out, not when its connection closes."""
    cluster = ControllerCluster(3, 11, ControllerConfig(session_timeout_ms=6000))
    cluster.add_brokers(1, 2, 3)
    cluster.wait_active()
    cluster.run_for(2000)
    active = cluster.wait_active()
    dead = next(b for b in (1, 2, 3) if b != active.node_id)
    cluster.brokers[dead].alive = False
    active.broker_disconnected(dead)
    cluster.run_for(3000)
    assert dead in cluster.wait_active().loader.image.unfenced_brokers()
    cluster.run_for(4000)
    assert dead not in cluster.wait_active().loader.image.unfenced_brokers()
