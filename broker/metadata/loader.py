"""Follows the committed metadata log and publishes each new image (KRaft's
``MetadataLoader``): the broker side registers publishers here to become leader or
follower of its partitions as the log says."""

from __future__ import annotations

import logging
from typing import Protocol

from broker.metadata.image import EMPTY_IMAGE, MetadataDelta, MetadataImage
from broker.metadata.records import MetadataRecord, decode_record, encode_record
from broker.raft.entries import LogEntry, Snapshot

log = logging.getLogger(__name__)


class MetadataPublisher(Protocol):
    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Called after every committed batch, in log order, with what changed."""


def encode_snapshot(image: MetadataImage) -> bytes:
    """One record per line; the image's offset comes from the snapshot id."""
    return b"\n".join(encode_record(r) for r in image.to_records())


def decode_snapshot(data: bytes, offset: int) -> MetadataDelta:
    delta = MetadataDelta(EMPTY_IMAGE)
    for line_no, line in enumerate(data.splitlines(), start=1):
        if line.strip():
            try:
                delta.replay(decode_record(line), offset - 1)
            except ValueError as exc:
                raise type(exc)(f"snapshot line {line_no}: {exc}") from exc
    delta.offset = offset
    return delta


class MetadataLoader:
    """A ``RaftListener`` that turns committed entries into images."""

    def __init__(self) -> None:
        self.image = EMPTY_IMAGE
        self.publishers: list[MetadataPublisher] = []
        self.leader: tuple[int | None, int] = (None, 0)
        #: a loaded snapshot not yet published: it goes out with the next commit
        self._unpublished: MetadataDelta | None = None

    def install_publisher(self, publisher: MetadataPublisher) -> None:
        self.publishers.append(publisher)
        publisher.on_metadata_update(MetadataDelta(self.image), self.image)

    def handle_commit(self, entries: list[LogEntry]) -> None:
        delta, self._unpublished = self._unpublished or MetadataDelta(self.image), None
        for entry in entries:
            delta.replay(decode_record(entry.data), entry.offset)
        self._publish(delta)

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        """The snapshot becomes the image, published with the entries committed
        after it and never alone: a node's own snapshot is older than the log
        it catches up to, and a broker that applied it would lead partitions in
        epochs long gone (KRaft's loader publishes nothing while it catches up)."""
        self._unpublished = decode_snapshot(snapshot.data, snapshot.snapshot_id.offset)
        self.image = self._unpublished.apply()

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.leader = (leader_id, epoch)

    def _publish(self, delta: MetadataDelta) -> None:
        self.image = delta.apply()
        for publisher in self.publishers:
            publisher.on_metadata_update(delta, self.image)


def replay_records(
    image: MetadataImage, records: list[tuple[int, MetadataRecord]]
) -> MetadataImage:
    """Apply (offset, record) pairs to ``image``: the active controller's speculative view."""
    delta = MetadataDelta(image)
    for offset, record in records:
        delta.replay(record, offset)
    return delta.apply()
