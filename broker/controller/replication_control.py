"""Topics, partitions, leaders and ISRs (KRaft's ``ReplicationControlManager``).

Every decision is a pure function of the current image that returns records: topic
creation with replica assignment, deletion, AlterPartition from partition leaders
(fenced by leader epoch and partition epoch), and the re-elections that follow a
broker being fenced or unfenced.
"""

from __future__ import annotations

import random
import re
import uuid

from kio.schema.errors import ErrorCode

from broker.controller import topic_configs
from broker.controller.partition_change import build_change, isr_without
from broker.controller.requests import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    ControllerConfig,
    ControllerResult,
    CreatableTopic,
    CreatableTopicResult,
)
from broker.errors import KafkaError
from broker.metadata.image import MetadataImage
from broker.metadata.records import (
    ConfigRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
# Kafka's controller refuses an operation that would write more records than this
# (QuorumController's MAX_RECORDS_PER_USER_OP) with POLICY_VIOLATION: a CreateTopics
# asking for 2^31 - 1 partitions would otherwise build that many assignments first and
# exhaust the memory of the process.
MAX_RECORDS_PER_USER_OP = 10_000
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."


def excessive_batch(partition_counts: list[int]) -> bool:
    """Whether creating topics of these partition counts takes too many records
    (a topic record and one per partition)."""
    return sum(1 + n for n in partition_counts) > MAX_RECORDS_PER_USER_OP


def assign_replicas(
    num_partitions: int, replication_factor: int, brokers: list[int], rng: random.Random
) -> list[list[int]]:
    """Kafka's rack-unaware assignment: leaders go round the brokers from a random
    start, followers at a shifting distance, so leaders spread evenly and no partition
    has two replicas on one broker."""
    n = len(brokers)
    if not 0 < replication_factor <= n:
        raise ValueError(f"replication factor {replication_factor} with {n} brokers")
    start, shift = rng.randrange(n), rng.randrange(n)
    assignment = []
    for p in range(num_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
        assignment.append(replicas)
    return assignment


class ReplicationControlManager:
    def __init__(self, config: ControllerConfig, rng: random.Random) -> None:
        self.config = config
        self.rng = rng

    def unclean_allowed(self, image: MetadataImage, topic_name: str) -> bool:
        value = image.topic_config(topic_name, topic_configs.UNCLEAN)
        return self.config.unclean_leader_election if value is None else value == "true"

    # -- topics --------------------------------------------------------------------------
    def create_topics(self, image: MetadataImage, topics: list[CreatableTopic]) -> ControllerResult:
        records: list[MetadataRecord] = []
        results = []
        brokers = image.unfenced_brokers()
        seen: set[str] = set()
        errors = []
        for topic in topics:
            errors.append(self._validate_topic(image, topic, brokers, seen))
            seen.add(topic.name)
        valid = [t for t, error in zip(topics, errors, strict=True) if error is None]
        if excessive_batch([self._partitions(t) for t in valid]):  # all refused, as in Kafka
            policy = ErrorCode.policy_violation
            refused = [CreatableTopicResult(t.name, policy, EXCESSIVE_BATCH) for t in topics]
            return ControllerResult([], refused)
        for topic, error in zip(topics, errors, strict=True):
            if error is not None:
                results.append(CreatableTopicResult(topic.name, error[0], error[1]))
                continue
            partitions = self._partitions(topic)
            rf = self._replication_factor(topic, brokers)
            topic_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            records.append(TopicRecord(topic.name, topic_id))
            records.extend(
                ConfigRecord("topic", topic.name, k, v) for k, v in sorted(topic.configs.items())
            )
            placement = self._placement_rng(topic.name)
            for p, replicas in enumerate(assign_replicas(partitions, rf, brokers, placement)):
                records.append(
                    PartitionRecord(topic_id, p, tuple(replicas), tuple(replicas), replicas[0])
                )
            results.append(
                CreatableTopicResult(topic.name, ErrorCode.none, None, topic_id, partitions, rf)
            )
        return ControllerResult(records, results)

    def _partitions(self, topic: CreatableTopic) -> int:
        return topic.num_partitions if topic.num_partitions > 0 else self.config.default_partitions

    def _placement_rng(self, topic_name: str) -> random.Random:
        seed = self.config.placement_seed
        return self.rng if seed is None else random.Random(f"{seed}:{topic_name}")

    def _replication_factor(self, topic: CreatableTopic, brokers: list[int]) -> int:
        if topic.replication_factor > 0:
            return topic.replication_factor
        return min(self.config.default_replication_factor, max(1, len(brokers)))

    def _validate_topic(
        self, image: MetadataImage, topic: CreatableTopic, brokers: list[int], seen: set[str]
    ) -> tuple[ErrorCode, str] | None:
        if not _LEGAL_TOPIC.match(topic.name) or topic.name in (".", ".."):
            return ErrorCode.invalid_topic_exception, f"illegal topic name {topic.name!r}"
        if image.topic(topic.name) is not None or topic.name in seen:
            return ErrorCode.topic_already_exists, f"topic {topic.name!r} already exists"
        if topic.num_partitions == 0 or topic.num_partitions < -1:
            return ErrorCode.invalid_partitions, "the number of partitions must be positive"
        rf = self._replication_factor(topic, brokers)
        if topic.replication_factor == 0 or topic.replication_factor < -1 or rf > len(brokers):
            return (
                ErrorCode.invalid_replication_factor,
                f"replication factor {rf} but {len(brokers)} unfenced brokers",
            )
        try:
            topic_configs.check(topic.configs, rf)
        except KafkaError as e:
            return e.code, e.message
        return None

    def create_partitions(self, image: MetadataImage, counts: dict[str, int]) -> ControllerResult:
        """CreatePartitions: each topic grows to its new partition count, the new
        partitions placed as a new topic's are, with the topic's replication
        factor; results are ``{name: (error, message)}``."""
        records: list[MetadataRecord] = []
        results: dict[str, tuple[ErrorCode, str | None]] = {}
        brokers = image.unfenced_brokers()
        for name, count in counts.items():
            topic = image.topic(name)
            if topic is None:
                results[name] = (ErrorCode.unknown_topic_or_partition, f"no topic {name!r}")
                continue
            current = len(topic.partitions)
            rf = len(topic.partitions[0].replicas)
            if count <= current:
                why = f"topic {name!r} has {current} partitions; {count} adds none"
                results[name] = (ErrorCode.invalid_partitions, why)
            elif excessive_batch([count - current]):
                results[name] = (ErrorCode.policy_violation, EXCESSIVE_BATCH)
            elif rf > len(brokers):
                why = f"replication factor {rf} but {len(brokers)} unfenced brokers"
                results[name] = (ErrorCode.invalid_replication_factor, why)
            else:
                placed = assign_replicas(count - current, rf, brokers, self._placement_rng(name))
                for p, replicas in enumerate(placed, start=current):
                    records.append(
                        PartitionRecord(topic.topic_id, p, tuple(replicas), tuple(replicas),
                                        replicas[0])
                    )  # fmt: skip
                results[name] = (ErrorCode.none, None)
        return ControllerResult(records, results)

    def alter_configs(
        self,
        image: MetadataImage,
        changes: dict[str, list[topic_configs.Op]],
        incremental: bool,
    ) -> ControllerResult:
        """IncrementalAlterConfigs (``incremental``) or AlterConfigs of topics: a
        ConfigRecord per override set or removed; results ``{name: (error, message)}``."""
        records: list[MetadataRecord] = []
        results: dict[str, tuple[ErrorCode, str | None]] = {}
        for name, ops in changes.items():
            topic = image.topic(name)
            if topic is None:
                results[name] = (ErrorCode.unknown_topic_or_partition, f"no topic {name!r}")
                continue
            current = dict(image.configs.get(("topic", name), {}))
            try:
                new = topic_configs.altered(current, ops, incremental)
                topic_configs.check(new, len(topic.partitions[0].replicas))
            except KafkaError as e:
                results[name] = (e.code, e.message)
                continue
            records.extend(
                ConfigRecord("topic", name, k, v)
                for k, v in sorted(new.items())
                if current.get(k) != v
            )
            records.extend(
                ConfigRecord("topic", name, k, None) for k in sorted(current.keys() - new.keys())
            )
            results[name] = (ErrorCode.none, None)
        return ControllerResult(records, results)

    def delete_topics(self, image: MetadataImage, names: list[str]) -> ControllerResult:
        records: list[MetadataRecord] = []
        results: dict[str, ErrorCode] = {}
        for name in names:
            topic = image.topic(name)
            if topic is None:
                results[name] = ErrorCode.unknown_topic_or_partition
                continue
            records.append(RemoveTopicRecord(topic.topic_id))
            config = image.configs.get(("topic", name), {})
            records.extend(ConfigRecord("topic", name, k, None) for k in sorted(config))
            results[name] = ErrorCode.none
        return ControllerResult(records, results)

    # -- leadership after broker changes -------------------------------------------------
    def handle_broker_fenced(self, image: MetadataImage, broker_id: int) -> list[MetadataRecord]:
        """Take the fenced broker out of every ISR and re-elect where it led."""
        eligible = set(image.unfenced_brokers()) - {broker_id}
        changes: list[MetadataRecord] = []
        for topic, p, reg in image.partitions():
            if broker_id not in reg.isr and reg.leader != broker_id:
                continue
            change = build_change(
                topic.topic_id,
                p,
                reg,
                eligible,
                self.unclean_allowed(image, topic.name),
                target_isr=isr_without(reg.isr, broker_id),
            )
            if change is not None:
                changes.append(change)
        return changes

    def handle_broker_unfenced(self, image: MetadataImage, broker_id: int) -> list[MetadataRecord]:
        """Give leaderless partitions a leader now that ``broker_id`` is back."""
        eligible = set(image.unfenced_brokers()) | {broker_id}
        changes: list[MetadataRecord] = []
        for topic, p, reg in image.partitions():
            if reg.leader != -1 or broker_id not in reg.replicas:
                continue
            change = build_change(
                topic.topic_id, p, reg, eligible, self.unclean_allowed(image, topic.name)
            )
            if change is not None:
                changes.append(change)
        return changes

    def imbalanced(self, image: MetadataImage) -> bool:
        """Whether some partition is led by another replica than its preferred one."""
        return any(reg.leader != reg.replicas[0] for _, _, reg in image.partitions())

    def elect_preferred_leaders(self, image: MetadataImage) -> list[MetadataRecord]:
        """Move leadership back to each partition's preferred (first) replica where that
        replica is in sync and unfenced; elsewhere nothing changes (Kafka's PREFERRED
        election, which never hands leadership to a third replica)."""
        eligible = set(image.unfenced_brokers())
        changes: list[MetadataRecord] = []
        for topic, p, reg in image.partitions():
            preferred = reg.replicas[0]
            if preferred != reg.leader and preferred in reg.isr and preferred in eligible:
                change = build_change(
                    topic.topic_id, p, reg, eligible, False, prefer_preferred=True
                )
                if change is not None:
                    changes.append(change)
        return changes

    # -- AlterPartition ------------------------------------------------------------------
    def alter_partition(
        self, image: MetadataImage, request: AlterPartitionRequest
    ) -> ControllerResult:
        """Apply an ISR change asked by the partition's leader, fenced by epochs: a leader
        that is not current gets FENCED_LEADER_EPOCH, a request based on an older
        partition state INVALID_UPDATE_VERSION."""
        broker = image.brokers.get(request.broker_id)
        if broker is None or broker.broker_epoch != request.broker_epoch:
            return ControllerResult([], AlterPartitionResponse(ErrorCode.stale_broker_epoch))
        reg = image.partition(request.topic_id, request.partition_id)
        if reg is None:
            return ControllerResult(
                [], AlterPartitionResponse(ErrorCode.unknown_topic_or_partition)
            )
        if request.leader_epoch != reg.leader_epoch:
            return ControllerResult([], AlterPartitionResponse(ErrorCode.fenced_leader_epoch))
        if reg.leader != request.broker_id:
            return ControllerResult([], AlterPartitionResponse(ErrorCode.invalid_request))
        if request.partition_epoch != reg.partition_epoch:
            return ControllerResult([], AlterPartitionResponse(ErrorCode.invalid_update_version))
        isr = tuple(request.new_isr)
        if request.broker_id not in isr or len(set(isr)) != len(isr):
            return ControllerResult([], AlterPartitionResponse(ErrorCode.invalid_request))
        fenced = {b for b, r in image.brokers.items() if r.fenced}
        if any(b not in reg.replicas or b in fenced or b not in image.brokers for b in isr):
            return ControllerResult([], AlterPartitionResponse(ErrorCode.ineligible_replica))
        if isr == reg.isr:
            return ControllerResult(
                [],
                self._state(ErrorCode.none, reg.leader, reg.leader_epoch, isr, reg.partition_epoch),
            )
        record = PartitionChangeRecord(request.topic_id, request.partition_id, isr=isr)
        response = self._state(
            ErrorCode.none, reg.leader, reg.leader_epoch, isr, reg.partition_epoch + 1
        )
        return ControllerResult([record], response)

    @staticmethod
    def _state(
        code: ErrorCode, leader: int, leader_epoch: int, isr: tuple[int, ...], partition_epoch: int
    ) -> AlterPartitionResponse:
        return AlterPartitionResponse(code, leader, leader_epoch, isr, partition_epoch)
