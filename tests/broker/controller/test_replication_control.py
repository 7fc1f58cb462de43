"""ReplicationControlManager and the partition-change rules, on real images."""

from __future__ import annotations

import logging
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from broker.controller.partition_change import build_change, elect_leader
from broker.controller.replication_control import ReplicationControlManager, assign_replicas
from broker.controller.requests import (
    AlterPartitionRequest,
    ControllerConfig,
    CreatableTopic,
    CreatableTopicResult,
)
from broker.metadata.records import NO_LEADER, NO_LEADER_CHANGE, FenceBrokerRecord
from tests.broker.controller.images import cluster_image, with_partition, with_records


def manager(**config: object) -> ReplicationControlManager:
    return ReplicationControlManager(ControllerConfig(**config), random.Random(5))  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    brokers=st.integers(1, 7),
    partitions=st.integers(1, 40),
    rf=st.integers(1, 7),
    seed=st.integers(0, 1000),
)
def test_assignment_never_colocates_and_spreads_leaders(
    brokers: int, partitions: int, rf: int, seed: int
) -> None:
    rf = min(rf, brokers)
    ids = [10 * (i + 1) for i in range(brokers)]
    assignment = assign_replicas(partitions, rf, ids, random.Random(seed))
    assert len(assignment) == partitions
    for replicas in assignment:
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert set(replicas) <= set(ids)
    leaders = Counter(r[0] for r in assignment)
    assert max(leaders.values()) - min(leaders.get(b, 0) for b in ids) <= 1


def test_create_topics_assigns_and_reports_errors() -> None:
    image = cluster_image([1, 2, 3])
    result = manager().create_topics(
        image,
        [
            CreatableTopic("orders", 6, 3, {"min.insync.replicas": "2"}),
            CreatableTopic("orders", 1, 1),
            CreatableTopic("too-wide", 1, 4),
            CreatableTopic("bad name!", 1, 1),
            CreatableTopic("zero", 0, 1),
            CreatableTopic("unclean-typo", 1, 1, {"unclean.leader.election.enable": "yes"}),
        ],
    )
    codes = [r.error_code for r in result.response]  # type: ignore[attr-defined]
    assert codes == [
        ErrorCode.none,
        ErrorCode.topic_already_exists,
        ErrorCode.invalid_replication_factor,
        ErrorCode.invalid_topic_exception,
        ErrorCode.invalid_partitions,
        ErrorCode.invalid_config,
    ]
    after = with_records(image, result.records)
    topic = after.topic("orders")
    assert topic is not None and len(topic.partitions) == 6
    assert after.topic_config("orders", "min.insync.replicas") == "2"
    leaders = Counter(p.leader for p in topic.partitions.values())
    assert sorted(leaders.values()) == [2, 2, 2]
    for p in topic.partitions.values():
        assert p.isr == p.replicas and p.leader == p.replicas[0] and p.leader_epoch == 0
    again = manager().create_topics(after, [CreatableTopic("orders")])
    assert again.response[0].error_code is ErrorCode.topic_already_exists  # type: ignore[index]


def test_a_request_for_too_many_partitions_is_refused_whole() -> None:
    """2^31 - 1 partitions would be built one assignment at a time until memory ran
    out; Kafka's controller refuses more than 10,000 records an operation."""
    image = cluster_image([1, 2, 3])
    result = manager().create_topics(
        image, [CreatableTopic("fine", 3, 1), CreatableTopic("huge", 2**31 - 1, 1)]
    )
    assert result.records == []
    assert [(r.error_code, r.error_message) for r in result.response] == [  # type: ignore[attr-defined]
        (ErrorCode.policy_violation, "Unable to perform excessively large batch operation.")
    ] * 2
    fits = manager().create_topics(image, [CreatableTopic("fits", 9_999, 1)])
    assert fits.response[0].error_code is ErrorCode.none  # type: ignore[index]


def test_a_placement_seed_places_a_topic_the_same_on_any_controller() -> None:
    def placement(rng_seed: int, name: str, **config: object) -> list[tuple[int, ...]]:
        mgr = ReplicationControlManager(ControllerConfig(**config), random.Random(rng_seed))  # type: ignore[arg-type]
        result = mgr.create_topics(cluster_image([1, 2, 3, 4, 5]), [CreatableTopic(name, 8, 2)])
        after = with_records(cluster_image([1, 2, 3, 4, 5]), result.records)
        topic = after.topic(name)
        assert topic is not None
        return [topic.partitions[p].replicas for p in range(8)]

    seeded = {
        placement(r, "t", placement_seed=7) == placement(0, "t", placement_seed=7) for r in range(5)
    }
    assert seeded == {True}
    assert len({tuple(placement(0, f"t{i}", placement_seed=7)) for i in range(10)}) > 1
    assert len({tuple(placement(r, "t")) for r in range(10)}) > 1  # unseeded: random


def test_fenced_brokers_get_no_replicas() -> None:
    image = cluster_image([1, 2, 3], fenced=(2,))
    result = manager().create_topics(image, [CreatableTopic("t", 4, 2)])
    first: CreatableTopicResult = result.response[0]  # type: ignore[index]
    assert first.error_code is ErrorCode.none
    after = with_records(image, result.records)
    assert all(2 not in p.replicas for p in after.topic("t").partitions.values())  # type: ignore[union-attr]


def test_election_prefers_the_preferred_replica() -> None:
    image = with_partition(cluster_image([1, 2, 3]), (2, 3, 1), (3, 1, 2), NO_LEADER)
    reg = image.partition("id-t", 0)
    assert reg is not None
    assert elect_leader(reg, reg.isr, {1, 2, 3}, unclean=False) == (2, (3, 1, 2))
    assert elect_leader(reg, reg.isr, {1, 3}, unclean=False)[0] == 3
    led_by_3 = with_partition(cluster_image([1, 2, 3]), (2, 3, 1), (3, 1, 2), 3, name="u")
    reg3 = led_by_3.partition("id-u", 0)
    assert reg3 is not None
    assert build_change("id-u", 0, reg3, {1, 2, 3}, False) is None  # a live leader stays
    change = build_change("id-u", 0, reg3, {1, 2, 3}, False, prefer_preferred=True)
    assert change is not None and change.leader == 2


def test_fencing_the_leader_moves_leadership_and_bumps_epochs() -> None:
    image = with_partition(cluster_image([1, 2, 3]), (1, 2, 3), (1, 2, 3), 1)
    changes = manager().handle_broker_fenced(image, 1)
    after = with_records(image, [FenceBrokerRecord(1, 101), *changes])
    reg = after.partition("id-t", 0)
    assert reg is not None
    assert (reg.leader, reg.isr, reg.leader_epoch, reg.partition_epoch) == (2, (2, 3), 1, 1)


def test_unclean_off_leaves_partition_offline_and_keeps_last_isr_member() -> None:
    image = with_partition(cluster_image([1, 2, 3]), (1, 2, 3), (1,), 1)
    changes = manager().handle_broker_fenced(image, 1)
    after = with_records(image, [FenceBrokerRecord(1, 101), *changes])
    reg = after.partition("id-t", 0)
    assert reg is not None and reg.leader == NO_LEADER and reg.isr == (1,)
    # broker 1 coming back leads again, with nothing lost
    back = manager().handle_broker_unfenced(after, 1)
    assert len(back) == 1 and back[0].leader == 1  # type: ignore[union-attr]


def test_unclean_on_elects_an_out_of_sync_replica(caplog: pytest.LogCaptureFixture) -> None:
    image = with_partition(cluster_image([1, 2, 3]), (1, 2, 3), (1,), 1)
    with caplog.at_level(logging.INFO, "broker.controller.partition_change"):
        changes = manager(unclean_leader_election=True).handle_broker_fenced(image, 1)
    after = with_records(image, [FenceBrokerRecord(1, 101), *changes])
    reg = after.partition("id-t", 0)
    assert reg is not None and reg.leader == 2 and reg.isr == (2,)
    assert caplog.messages == [
        "setting new leader for topic id-t partition 0 to 2 using an unclean election"
    ]
    caplog.clear()
    in_sync = with_partition(cluster_image([1, 2, 3]), (1, 2, 3), (1, 2), 1)
    with caplog.at_level(logging.INFO, "broker.controller.partition_change"):
        manager().handle_broker_fenced(in_sync, 1)
    assert caplog.messages == []  # a clean election says nothing


def test_topic_config_overrides_the_unclean_default() -> None:
    m = manager(unclean_leader_election=True)
    image = with_partition(cluster_image([1, 2, 3]), (1, 2, 3), (1,), 1)
    created = m.create_topics(
        image, [CreatableTopic("safe", 1, 3, {"unclean.leader.election.enable": "false"})]
    )
    image = with_records(image, created.records)
    assert m.unclean_allowed(image, "t") and not m.unclean_allowed(image, "safe")


def alter(epochs: tuple[int, int], isr: tuple[int, ...], broker: int = 1) -> ErrorCode:
    """AlterPartition against partition (1,2,3) led by 1 at leader epoch 2, partition
    epoch 4, with broker 3 fenced."""
    image = cluster_image([1, 2, 3], fenced=(3,))
    image = with_partition(image, (1, 2, 3), (1, 2), 1, epochs=(2, 4))
    request = AlterPartitionRequest(broker, 100 + broker, "id-t", 0, *epochs, isr)
    response = manager().alter_partition(image, request).response
    return response.error_code  # type: ignore[attr-defined,no-any-return]


def test_alter_partition_fencing() -> None:
    assert alter((2, 4), (1,)) is ErrorCode.none
    assert alter((2, 3), (1,)) is ErrorCode.invalid_update_version  # stale partition epoch
    assert alter((1, 4), (1,)) is ErrorCode.fenced_leader_epoch  # stale leader epoch
    assert alter((2, 4), (1, 3)) is ErrorCode.ineligible_replica  # 3 is fenced
    assert alter((2, 4), (2,)) is ErrorCode.invalid_request  # the leader must stay in the ISR
    assert alter((2, 4), (1,), broker=2) is ErrorCode.invalid_request  # not the leader


def test_alter_partition_from_a_deposed_leader_is_fenced() -> None:
    image = with_partition(cluster_image([1, 2, 3]), (1, 2, 3), (1, 2, 3), 1)
    image = with_records(image, manager().handle_broker_fenced(image, 1))
    reg = image.partition("id-t", 0)
    assert reg is not None and reg.leader == 2 and reg.leader_epoch == 1
    stale = AlterPartitionRequest(1, 101, "id-t", 0, 0, 0, (1,))
    response = manager().alter_partition(image, stale).response
    assert response.error_code is ErrorCode.fenced_leader_epoch  # type: ignore[attr-defined]
    fresh = AlterPartitionRequest(2, 102, "id-t", 0, 1, 1, (2,))
    result = manager().alter_partition(image, fresh)
    assert result.response.error_code is ErrorCode.none  # type: ignore[attr-defined]
    after = with_records(image, result.records)
    assert after.partition("id-t", 0).isr == (2,)  # type: ignore[union-attr]
    assert after.partition("id-t", 0).partition_epoch == 2  # type: ignore[union-attr]
    assert result.records[0].leader == NO_LEADER_CHANGE  # type: ignore[attr-defined]
