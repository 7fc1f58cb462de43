"""Topic metadata of the cluster: names, ids, partition assignments, configs.

On one node this is a JSON file (``topics.json`` in the data dir, replaced
atomically and fsynced); a controller quorum can later become its source
without the rest of the broker noticing.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from broker.errors import ErrorCode, KafkaError
from broker.log.ledger import FsyncLedger

TOPICS_FILE = "topics.json"
LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


@dataclass
class PartitionAssignment:
    replicas: list[int]
    leader: int
    leader_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    #: bumped by the controller with every change of the partition (Kafka's
    #: partition epoch): a leader knows from it that its ISR change was decided
    partition_epoch: int = 0


@dataclass
class TopicInfo:
    name: str
    topic_id: str
    partitions: list[PartitionAssignment]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    @property
    def uuid(self) -> uuid.UUID:
        return uuid.UUID(self.topic_id)


def check_topic_name(name: str) -> None:
    if name in (".", "..") or not LEGAL_NAME.match(name or ""):
        raise KafkaError(ErrorCode.invalid_topic_exception, f"illegal topic name {name!r}")


class TopicStore:
    def __init__(self, data_dir: Path, ledger: FsyncLedger) -> None:
        self.path = data_dir / TOPICS_FILE
        self.ledger = ledger
        self.topics: dict[str, TopicInfo] = {}
        if self.path.exists():
            try:
                raw = json.loads(self.path.read_text())
                for t in raw["topics"]:
                    t["partitions"] = [PartitionAssignment(**p) for p in t["partitions"]]
                    self.topics[t["name"]] = TopicInfo(**t)
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{self.path}: unreadable topic metadata: {e}") from None

    def _save(self) -> None:
        data = {"topics": [asdict(t) for t in self.topics.values()]}
        self.ledger.write_atomically(self.path, json.dumps(data, indent=1).encode())

    def create(
        self, name: str, num_partitions: int, replicas: list[int], configs: dict[str, str]
    ) -> TopicInfo:
        check_topic_name(name)
        if name in self.topics:
            raise KafkaError(ErrorCode.topic_already_exists, f"topic {name!r} already exists")
        if num_partitions < 1:
            raise KafkaError(ErrorCode.invalid_partitions, f"{num_partitions} partitions")
        assignments = [
            PartitionAssignment(list(replicas), replicas[0], 0, list(replicas))
            for _ in range(num_partitions)
        ]
        topic = TopicInfo(name, str(uuid.uuid4()), assignments, dict(configs))
        self.topics[name] = topic
        self._save()
        return topic

    def add_partitions(self, name: str, count: int, replicas: list[int]) -> TopicInfo:
        """Grows a topic to ``count`` partitions on ``replicas``."""
        topic = self.topics[name]
        while len(topic.partitions) < count:
            topic.partitions.append(
                PartitionAssignment(list(replicas), replicas[0], 0, list(replicas))
            )
        self._save()
        return topic

    def set_configs(self, name: str, configs: dict[str, str]) -> None:
        self.topics[name].configs = dict(configs)
        self._save()

    def delete(self, name: str) -> TopicInfo:
        topic = self.topics.pop(name, None)
        if topic is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"no topic {name!r}")
        self._save()
        return topic

    def contains(self, topic: str, partition: int) -> bool:
        """Whether the partition exists in the cluster, wherever its replicas are."""
        info = self.topics.get(topic)
        return info is not None and 0 <= partition < len(info.partitions)

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return next((t for t in self.topics.values() if t.uuid == topic_id), None)
