"""Deciding a partition's next leader and ISR (KRaft's ``PartitionChangeBuilder``).

Leaders come from the ISR, in replica order so the preferred replica (the first)
wins when it can; only fenced-off brokers are skipped. With unclean election off a
partition whose whole ISR is gone stays offline (leader -1) and keeps its last ISR
member, so that broker can lead again when it returns without losing a write. With it
on, any live replica may lead, and the ISR restarts from that replica alone.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from broker.metadata.image import PartitionRegistration
from broker.metadata.records import NO_LEADER, NO_LEADER_CHANGE, PartitionChangeRecord

log = logging.getLogger(__name__)


def isr_without(isr: tuple[int, ...], broker_id: int) -> tuple[int, ...]:
    """The ISR minus ``broker_id``, but never empty: the last member stays."""
    rest = tuple(b for b in isr if b != broker_id)
    return rest or isr


def elect_leader(
    registration: PartitionRegistration,
    isr: tuple[int, ...],
    eligible: Collection[int],
    unclean: bool,
    prefer_preferred: bool = False,
) -> tuple[int, tuple[int, ...]]:
    """Return (leader, isr) for the partition; the leader is NO_LEADER when none may lead."""
    current = registration.leader
    if not prefer_preferred and current in isr and current in eligible:
        return current, isr
    for replica in registration.replicas:
        if replica in isr and replica in eligible:
            return replica, isr
    if unclean:
        for replica in registration.replicas:
            if replica in eligible:
                return replica, (replica,)
    return NO_LEADER, isr


def build_change(
    topic_id: str,
    partition_id: int,
    registration: PartitionRegistration,
    eligible: Collection[int],
    unclean: bool,
    target_isr: tuple[int, ...] | None = None,
    prefer_preferred: bool = False,
) -> PartitionChangeRecord | None:
    """The change record taking the partition to its elected state, or None if none."""
    in_sync = registration.isr if target_isr is None else target_isr
    leader, isr = elect_leader(registration, in_sync, eligible, unclean, prefer_preferred)
    if leader == registration.leader and isr == registration.isr:
        return None
    if leader != NO_LEADER and leader not in in_sync:  # Kafka logs this one too, at info
        log.info(
            "setting new leader for topic %s partition %d to %d using an unclean election",
            topic_id, partition_id, leader,
        )  # fmt: skip
    return PartitionChangeRecord(
        topic_id,
        partition_id,
        leader=leader if leader != registration.leader else NO_LEADER_CHANGE,
        isr=isr if isr != registration.isr else None,
    )
