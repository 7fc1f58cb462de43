"""The cluster metadata as an immutable image, and the delta that turns one image into
the next by replaying records (KRaft's ``MetadataImage`` / ``MetadataDelta``).

Images share unchanged parts with their predecessor, so holding the last committed
image next to a speculative one costs little, and a publisher can compare the two.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from broker.metadata.records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    ConfigRecord,
    FenceBrokerRecord,
    MetadataRecord,
    MetadataRecordError,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    broker_epoch: int
    incarnation_id: str
    host: str
    port: int
    rack: str | None
    fenced: bool


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        leader_changed = change.leader != NO_LEADER_CHANGE and change.leader != self.leader
        return PartitionRegistration(
            replicas=self.replicas,
            isr=self.isr if change.isr is None else change.isr,
            leader=change.leader if leader_changed else self.leader,
            leader_epoch=self.leader_epoch + 1 if leader_changed else self.leader_epoch,
            partition_epoch=self.partition_epoch + 1,
        )


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: str
    partitions: Mapping[int, PartitionRegistration]


def _frozen(d: dict) -> Mapping:  # type: ignore[type-arg]
    return MappingProxyType(d)


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """``offset`` is the end (exclusive) of the log prefix this image reflects."""

    offset: int
    brokers: Mapping[int, BrokerRegistration]
    topics: Mapping[str, TopicImage]
    topic_ids: Mapping[str, str]
    configs: Mapping[tuple[str, str], Mapping[str, str]]
    next_producer_id: int

    def topic(self, name: str) -> TopicImage | None:
        topic_id = self.topic_ids.get(name)
        return None if topic_id is None else self.topics[topic_id]

    def partition(self, topic_id: str, partition_id: int) -> PartitionRegistration | None:
        topic = self.topics.get(topic_id)
        return None if topic is None else topic.partitions.get(partition_id)

    def partitions(self) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
        for topic in self.topics.values():
            for partition_id, registration in topic.partitions.items():
                yield topic, partition_id, registration

    def unfenced_brokers(self) -> list[int]:
        return sorted(b for b, reg in self.brokers.items() if not reg.fenced)

    def topic_config(self, name: str, key: str) -> str | None:
        return self.configs.get(("topic", name), {}).get(key)

    def to_records(self) -> list[MetadataRecord]:
        """Records that rebuild this image from empty: the content of a snapshot."""
        out: list[MetadataRecord] = []
        for b in self.brokers.values():
            out.append(
                RegisterBrokerRecord(
                    b.broker_id, b.broker_epoch, b.incarnation_id, b.host, b.port, b.rack
                )
            )
            if not b.fenced:
                out.append(UnfenceBrokerRecord(b.broker_id, b.broker_epoch))
        for (rtype, rname), values in self.configs.items():
            out.extend(ConfigRecord(rtype, rname, k, v) for k, v in values.items())
        for topic in self.topics.values():
            out.append(TopicRecord(topic.name, topic.topic_id))
            out.extend(
                PartitionRecord(
                    topic.topic_id,
                    p,
                    r.replicas,
                    r.isr,
                    r.leader,
                    r.leader_epoch,
                    r.partition_epoch,
                )
                for p, r in topic.partitions.items()
            )
        if self.next_producer_id:
            out.append(ProducerIdsRecord(-1, -1, self.next_producer_id))
        return out


EMPTY_IMAGE = MetadataImage(0, _frozen({}), _frozen({}), _frozen({}), _frozen({}), 0)


class MetadataDelta:
    """Accumulates replayed records on top of ``base``; ``apply`` yields the new image.

    Replay checks references (a partition of an unknown topic, a change to a broker
    that is not registered) so a bad log is reported, not silently absorbed."""

    def __init__(self, base: MetadataImage) -> None:
        self.base = base
        self.brokers: dict[int, BrokerRegistration | None] = {}
        self.topics: dict[str, TopicImage | None] = {}
        self.configs: dict[tuple[str, str], dict[str, str]] = {}
        self.next_producer_id: int | None = None
        self.offset = base.offset

    # -- reading through the delta -------------------------------------------------------
    def broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self.brokers:
            return self.brokers[broker_id]
        return self.base.brokers.get(broker_id)

    def topic(self, topic_id: str) -> TopicImage | None:
        if topic_id in self.topics:
            return self.topics[topic_id]
        return self.base.topics.get(topic_id)

    # -- replay --------------------------------------------------------------------------
    def replay(self, record: MetadataRecord, offset: int) -> None:
        self.offset = max(self.offset, offset + 1)
        if isinstance(record, RegisterBrokerRecord):
            self.brokers[record.broker_id] = BrokerRegistration(
                record.broker_id,
                record.broker_epoch,
                record.incarnation_id,
                record.host,
                record.port,
                record.rack,
                True,
            )
        elif isinstance(record, UnregisterBrokerRecord):
            self._require_broker(record.broker_id, record.broker_epoch, record)
            self.brokers[record.broker_id] = None
        elif isinstance(record, FenceBrokerRecord | UnfenceBrokerRecord):
            reg = self._require_broker(record.broker_id, record.broker_epoch, record)
            self.brokers[record.broker_id] = replace(
                reg, fenced=isinstance(record, FenceBrokerRecord)
            )
        elif isinstance(record, TopicRecord):
            self.topics[record.topic_id] = TopicImage(record.name, record.topic_id, _frozen({}))
        elif isinstance(record, RemoveTopicRecord):
            self._require_topic(record.topic_id, record)
            self.topics[record.topic_id] = None
        elif isinstance(record, ConfigRecord):
            self._replay_config(record)
        elif isinstance(record, PartitionRecord):
            registration = PartitionRegistration(
                record.replicas,
                record.isr,
                record.leader,
                record.leader_epoch,
                record.partition_epoch,
            )
            self._set_partition(record.topic_id, record.partition_id, registration, record)
        elif isinstance(record, PartitionChangeRecord):
            topic = self._require_topic(record.topic_id, record)
            current = topic.partitions.get(record.partition_id)
            if current is None:
                raise MetadataRecordError(f"{record}: no such partition")
            self._set_partition(record.topic_id, record.partition_id, current.merge(record), record)
        elif isinstance(record, ProducerIdsRecord):
            self.next_producer_id = record.next_producer_id

    def _require_broker(self, broker_id: int, epoch: int, record: object) -> BrokerRegistration:
        reg = self.broker(broker_id)
        if reg is None or reg.broker_epoch != epoch:
            raise MetadataRecordError(
                f"{record}: broker {broker_id} epoch {epoch} is not registered"
            )
        return reg

    def _require_topic(self, topic_id: str, record: object) -> TopicImage:
        topic = self.topic(topic_id)
        if topic is None:
            raise MetadataRecordError(f"{record}: unknown topic id {topic_id}")
        return topic

    def _set_partition(
        self, topic_id: str, partition_id: int, registration: PartitionRegistration, record: object
    ) -> None:
        if registration.leader != NO_LEADER and registration.leader not in registration.replicas:
            raise MetadataRecordError(f"{record}: leader {registration.leader} is not a replica")
        topic = self._require_topic(topic_id, record)
        partitions = dict(topic.partitions)
        partitions[partition_id] = registration
        self.topics[topic_id] = replace(topic, partitions=_frozen(partitions))

    def _replay_config(self, record: ConfigRecord) -> None:
        key = (record.resource_type, record.resource_name)
        if key not in self.configs:
            self.configs[key] = dict(self.base.configs.get(key, {}))
        if record.value is None:
            self.configs[key].pop(record.name, None)
        else:
            self.configs[key][record.name] = record.value

    # -- result --------------------------------------------------------------------------
    def changed_partitions(
        self,
    ) -> Iterator[tuple[str, int, PartitionRegistration | None, PartitionRegistration | None]]:
        """(topic name, partition, before, after) for every partition this delta touched;
        ``after`` is None when the topic was removed."""
        for topic_id, topic in self.topics.items():
            old = self.base.topics.get(topic_id)
            name = topic.name if topic is not None else old.name if old is not None else topic_id
            ids = set(topic.partitions if topic else ()) | set(old.partitions if old else ())
            for p in sorted(ids):
                before = old.partitions.get(p) if old else None
                after = topic.partitions.get(p) if topic else None
                if before != after:
                    yield name, p, before, after

    def apply(self) -> MetadataImage:
        base = self.base
        brokers = dict(base.brokers)
        for broker_id, reg in self.brokers.items():
            if reg is None:
                brokers.pop(broker_id, None)
            else:
                brokers[broker_id] = reg
        topics = dict(base.topics)
        topic_ids = dict(base.topic_ids)
        for topic_id, topic in self.topics.items():
            old = topics.pop(topic_id, None)
            if old is not None:
                topic_ids.pop(old.name, None)
            if topic is not None:
                topics[topic_id] = topic
                topic_ids[topic.name] = topic_id
        configs = dict(base.configs)
        for key, values in self.configs.items():
            if values:
                configs[key] = _frozen(dict(values))
            else:
                configs.pop(key, None)
        return MetadataImage(
            offset=self.offset,
            brokers=_frozen(brokers),
            topics=_frozen(topics),
            topic_ids=_frozen(topic_ids),
            configs=_frozen(configs),
            next_producer_id=base.next_producer_id
            if self.next_producer_id is None
            else self.next_producer_id,
        )
