"""Committed offsets of the groups in one ``__consumer_offsets`` partition, and
transactional offsets held pending until their transaction's marker lands."""

from __future__ import annotations

from dataclasses import dataclass

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    timestamp_ms: int


class OffsetStore:
    def __init__(self) -> None:
        self.committed: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        # producer id -> group -> partition -> offset, until COMMIT or ABORT
        self.pending: dict[int, dict[str, dict[TopicPartition, CommittedOffset]]] = {}
        self.producer_epochs: dict[int, int] = {}

    def commit(self, group: str, offsets: dict[TopicPartition, CommittedOffset]) -> None:
        self.committed.setdefault(group, {}).update(offsets)

    def delete(self, group: str, tp: TopicPartition) -> None:
        self.committed.get(group, {}).pop(tp, None)

    def is_fenced(self, producer_id: int, epoch: int) -> bool:
        """An older epoch than one already seen for this producer is a zombie."""
        return epoch < self.producer_epochs.get(producer_id, -1)

    def add_pending(
        self,
        producer_id: int,
        epoch: int,
        group: str,
        offsets: dict[TopicPartition, CommittedOffset],
    ) -> None:
        self.producer_epochs[producer_id] = max(epoch, self.producer_epochs.get(producer_id, -1))
        self.pending.setdefault(producer_id, {}).setdefault(group, {}).update(offsets)

    def complete(self, producer_id: int, epoch: int, commit: bool) -> None:
        """A marker for ``producer_id`` reached this partition."""
        self.producer_epochs[producer_id] = max(epoch, self.producer_epochs.get(producer_id, -1))
        for group, offsets in self.pending.pop(producer_id, {}).items():
            if commit:
                self.commit(group, offsets)

    def has_pending(self, group: str, tp: TopicPartition) -> bool:
        return any(tp in groups.get(group, {}) for groups in self.pending.values())

    def fetch(self, group: str) -> dict[TopicPartition, CommittedOffset]:
        return dict(self.committed.get(group, {}))

    def groups_with_offsets(self) -> set[str]:
        return {group for group, offsets in self.committed.items() if offsets}
