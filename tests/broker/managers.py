"""A node's ReplicaManager on a temporary data dir, for tests that drive the
broker's internals directly."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from broker.log.ledger import FsyncLedger
from broker.server.replica_manager import ReplicaManager
from broker.server.topics import TopicStore
from broker.server_properties import load_config


@contextmanager
def replica_manager(
    data_dir: Path, topic: str = "t", partitions: int = 1
) -> Iterator[ReplicaManager]:
    """Node 1's ReplicaManager holding ``topic``, closed afterwards."""
    config = load_config(1, "127.0.0.1:0", data_dir, None, [])
    ledger = FsyncLedger(data_dir)
    manager = ReplicaManager(config, ledger, TopicStore(data_dir, ledger))
    manager.create_topic(topic, partitions, 1, {})
    try:
        yield manager
    finally:
        manager.close()
        ledger.close()
