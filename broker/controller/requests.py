"""What the controller is asked and what it answers, independent of the wire codec
(the fields mirror Kafka's BrokerRegistration, BrokerHeartbeat, CreateTopics,
DeleteTopics, AlterPartition and AllocateProducerIds)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from broker.metadata.records import MetadataRecord


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    session_timeout_ms: int = 9000
    #: a broker whose heartbeat connection closed is fenced after this, unless it
    #: heartbeats again (a killed process's sockets close at once; a paused or cut
    #: off one's do not, and it keeps the whole session); -1: off, every broker
    #: keeps its whole session, as in Kafka
    disconnect_grace_ms: int = -1
    default_replication_factor: int = 3
    default_partitions: int = 1
    unclean_leader_election: bool = False
    producer_id_block_size: int = 1000
    snapshot_every_records: int = 1000
    #: a new topic's replicas are placed from a random start and shift drawn from
    #: this seed and the topic's name, so a seeded test run gets the same placement
    #: whichever node is the active controller (None: from the controller's random
    #: generator, as Kafka)
    placement_seed: int | None = None
    #: ``auto.leader.rebalance.enable``: this long after leaderships are found
    #: away from their preferred replicas, they are moved back (None: never)
    leader_imbalance_check_interval_ms: int | None = 300_000


@dataclass(frozen=True, slots=True)
class ControllerResult:
    """Records to append (possibly none) and the answer to give once they commit."""

    records: list[MetadataRecord]
    response: object


@dataclass(frozen=True, slots=True)
class BrokerRegistrationRequest:
    broker_id: int
    incarnation_id: str
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class BrokerRegistrationResponse:
    error_code: ErrorCode
    broker_epoch: int = -1


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatRequest:
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool = False


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatResponse:
    error_code: ErrorCode
    is_fenced: bool = True


@dataclass(frozen=True, slots=True)
class CreatableTopic:
    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CreatableTopicResult:
    name: str
    error_code: ErrorCode
    error_message: str | None = None
    topic_id: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1


@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    broker_id: int
    broker_epoch: int
    topic_id: str
    partition_id: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AlterPartitionResponse:
    error_code: ErrorCode
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ProducerIdsResponse:
    error_code: ErrorCode
    producer_id_start: int = -1
    producer_id_len: int = 0
