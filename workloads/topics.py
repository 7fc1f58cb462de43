"""The run's topics: every key's topic, two partitions each
(``workloads.keys``), with the test's replication factor and
min.insync.replicas.

``create_topics`` makes the first keys' topics before the run and waits for
their leaders. ``KeyTopics`` knows which topics exist and makes those of keys
that come later (keys that rotate in, ``--max-writes-per-key``) when an op
first names them, as Jepsen's Kafka client creates a topic on its first
send; it is shared by every process's client.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from workloads.config import ClientConfig
from workloads.handles import Clients
from workloads.keys import PARTITIONS_PER_TOPIC
from workloads.outcomes import error_name

log = logging.getLogger(__name__)


class TopicsNotCreated(Exception):
    """Topics an op sends to could not be created; nothing of the op was done."""


class KeyTopics:
    """Which of the run's topics exist; creates the missing ones of keys an
    op names (two processes naming a fresh key at once may both ask, which
    the cluster answers TOPIC_ALREADY_EXISTS). Thread-safe: processes share
    one."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._created: set[str] = set()

    def setup(self) -> dict[str, str]:
        """Creates the first keys' topics (``create_topics``)."""
        differing = create_topics(self.config)
        self._mark(self.config.key_map.topics(self.config.keys))
        return differing

    def create(self, keys: list[int]) -> dict[str, KafkaError]:
        """Creates the topics of ``keys`` not known to exist, waiting as long
        as for a produce request; the error of each topic not created (none
        when every key's topic exists), also logged with its reason."""
        with self._lock:
            missing = [t for t in self.config.key_map.topics(keys) if t not in self._created]
        if not missing:
            return {}
        with Clients() as clients:
            admin = clients.admin(self.config.admin_conf())
            errors = _ask(admin, missing, self.config, self.config.request_timeout_s)
        refused = {t: e for t, e in errors.items() if e is not None and not _existed(e)}
        self._mark(t for t in missing if t not in refused)
        for topic, error in sorted(refused.items()):
            log.info("topic %s not created: %s", topic, error.str())
        return refused

    def require(self, keys: list[int]) -> None:
        """``create``, or TopicsNotCreated naming each topic not created."""
        if refused := self.create(keys):
            raise TopicsNotCreated(named(refused))

    def _mark(self, topics: Iterable[str]) -> None:
        with self._lock:
            self._created.update(topics)


def named(refused: dict[str, KafkaError]) -> str:
    """``topic: error-name, ...`` of topics not created."""
    return ", ".join(f"{t}: {error_name(e.code())}" for t, e in sorted(refused.items()))


def _existed(error: KafkaError) -> bool:
    return error.code() == KafkaError.TOPIC_ALREADY_EXISTS


def _ask(
    admin: Any, topics: list[str], config: ClientConfig, timeout_s: float
) -> dict[str, KafkaError | None]:
    """Asks the cluster to create ``topics``; each one's error, None where
    it was created."""
    topic_config = {"min.insync.replicas": str(config.min_isr)} if config.min_isr else {}
    futures = admin.create_topics(
        [
            NewTopic(t, PARTITIONS_PER_TOPIC, config.replication_factor, config=topic_config)
            for t in topics
        ],
        request_timeout=timeout_s,
    )
    return {t: _error(t, future, timeout_s) for t, future in futures.items()}


def _error(topic: str, future: Any, timeout_s: float) -> KafkaError | None:
    try:
        future.result(timeout_s)
    except KafkaException as e:
        return e.args[0]
    except TimeoutError:
        return KafkaError(KafkaError._TIMED_OUT, f"topic {topic}: no answer in {timeout_s:g} s")
    return None


def create_topics(config: ClientConfig, timeout_s: float = 30.0) -> dict[str, str]:
    """Creates the topics for ``config.keys`` with the test's replication
    factor and min.insync.replicas and waits until every partition has a
    leader. Returns, for each topic that existed already with other
    settings, how it differs."""
    wanted = config.key_map.topics(config.keys)
    with Clients() as clients:
        admin = clients.admin(config.admin_conf())
        errors = _ask(admin, wanted, config, timeout_s)
        for error in errors.values():
            if error is not None and not _existed(error):
                raise KafkaException(error)
        existed = [t for t, error in errors.items() if error is not None]
        deadline = time.monotonic() + timeout_s
        while True:
            md = admin.list_topics(timeout=timeout_s)
            ready = all(
                t in md.topics
                and md.topics[t].error is None
                and len(md.topics[t].partitions) == PARTITIONS_PER_TOPIC
                and all(p.leader >= 0 for p in md.topics[t].partitions.values())
                for t in wanted
            )
            if ready:
                return _differences(admin, md, existed, config, timeout_s)
            if time.monotonic() > deadline:
                raise TimeoutError(f"topics {wanted} have no leaders after {timeout_s}s")
            time.sleep(0.2)


def _differences(
    admin: Any, md: Any, topics: list[str], config: ClientConfig, timeout_s: float
) -> dict[str, str]:
    """How each existing topic differs from the test's settings."""
    from confluent_kafka.admin import ConfigResource

    out = {}
    for topic in topics:
        found = []
        rf = min(len(p.replicas) for p in md.topics[topic].partitions.values())
        if rf != config.replication_factor:
            found.append(f"replication factor {rf}, not {config.replication_factor}")
        if config.min_isr:
            resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
            try:  # only reported: a cluster may refuse DescribeConfigs (ACLs)
                entries = admin.describe_configs([resource])[resource].result(timeout_s)
            except KafkaException as e:
                found.append(f"min.insync.replicas unknown ({e.args[0].str()})")
            else:
                entry = entries.get("min.insync.replicas")
                value = entry.value if entry is not None else None
                if value != str(config.min_isr):
                    found.append(f"min.insync.replicas {value}, not {config.min_isr}")
        if found:
            out[topic] = "; ".join(found)
    return out
