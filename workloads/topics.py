"""The run's topics: every key's topic, two partitions each
(``workloads.keys``), with the test's replication factor and
min.insync.replicas, made before the run by ``create_topics``.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from workloads.config import ClientConfig
from workloads.handles import Clients
from workloads.keys import PARTITIONS_PER_TOPIC


def _topic_config(config: ClientConfig) -> dict[str, str]:
    return {"min.insync.replicas": str(config.min_isr)} if config.min_isr else {}


def create_topics(config: ClientConfig, timeout_s: float = 30.0) -> dict[str, str]:
    """Creates the topics for ``config.keys`` with the test's replication
    factor and min.insync.replicas and waits until every partition has a
    leader. Returns, for each topic that existed already with other
    settings, how it differs."""
    wanted = config.key_map.topics(config.keys)
    topic_config = _topic_config(config)
    existed = []
    with Clients() as clients:
        admin = clients.admin(config.admin_conf())
        futures = admin.create_topics(
            [
                NewTopic(t, PARTITIONS_PER_TOPIC, config.replication_factor, config=topic_config)
                for t in wanted
            ],
            request_timeout=timeout_s,
        )
        for topic, fut in futures.items():
            try:
                fut.result(timeout_s)
            except KafkaException as e:
                if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
                existed.append(topic)
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
