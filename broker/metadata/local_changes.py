"""What a metadata delta means for one broker's replicas (KRaft's
``TopicsDelta.localChanges``): the partitions it must now lead, those it must follow
(a new leader or leader epoch to fetch from), and the replicas it must drop. The
broker's replica manager applies these from a ``MetadataPublisher``."""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.metadata.image import MetadataDelta, PartitionRegistration

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class LocalReplicaChanges:
    leaders: dict[TopicPartition, PartitionRegistration] = field(default_factory=dict)
    followers: dict[TopicPartition, PartitionRegistration] = field(default_factory=dict)
    deletes: set[TopicPartition] = field(default_factory=set)


def local_changes(delta: MetadataDelta, broker_id: int) -> LocalReplicaChanges:
    changes = LocalReplicaChanges()
    for topic, partition, before, after in delta.changed_partitions():
        tp = (topic, partition)
        if after is None or broker_id not in after.replicas:
            if before is not None and broker_id in before.replicas:
                changes.deletes.add(tp)
        elif after.leader == broker_id:
            changes.leaders[tp] = after
        else:
            changes.followers[tp] = after
    return changes
