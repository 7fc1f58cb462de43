"""Build metadata images for controller tests by replaying real records."""

from __future__ import annotations

from broker.metadata.image import EMPTY_IMAGE, MetadataImage
from broker.metadata.loader import replay_records
from broker.metadata.records import (
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)


def with_records(image: MetadataImage, records: list[MetadataRecord]) -> MetadataImage:
    return replay_records(image, list(enumerate(records, start=image.offset)))


def cluster_image(brokers: list[int], fenced: tuple[int, ...] = ()) -> MetadataImage:
    records: list[MetadataRecord] = []
    for b in brokers:
        records.append(RegisterBrokerRecord(b, 100 + b, f"inc-{b}", "127.0.0.1", 9000 + b))
        if b not in fenced:
            records.append(UnfenceBrokerRecord(b, 100 + b))
    return with_records(EMPTY_IMAGE, records)


def with_partition(
    image: MetadataImage,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    leader: int,
    name: str = "t",
    epochs: tuple[int, int] = (0, 0),
) -> MetadataImage:
    """Add topic ``name`` (id ``id-<name>``) with one partition in the given state."""
    partition = PartitionRecord(f"id-{name}", 0, replicas, isr, leader, *epochs)
    return with_records(image, [TopicRecord(name, f"id-{name}"), partition])
