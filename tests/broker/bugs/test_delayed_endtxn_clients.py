"""delayed-endtxn (KAFKA-17754) the way `jepka test` meets it: a real librdkafka
producer, the `clients` partition nemesis on a 3-node cluster, and TCP itself
delaying the write.

The producer sends to a partition whose leader is cut off from the clients,
then aborts on purpose. librdkafka waits out the message timeout and ends the
transaction through a coordinator on another broker, whose abort marker
reaches the partition at once. The heal comes 5 s after the send (the nightly
case's window is 3.5-6.6 s), so TCP's retransmission delivers the write after
the marker. With the bug the leader appends it as a new transaction that the
producer's next commit marker commits; without it the leader asks the
coordinator (KIP-890) and refuses it.

The producer runs in a process of its own, as `jepka test` runs each run
(`harness.isolated`): librdkafka can abort its process (SIGABRT) in this
abort, and there that ends the producer, not the pytest worker. A
producer that crashes is a client's failure, not the broker's: the
scenario is staged again, with values of its own, up to ``ATTEMPTS``
times, and the crash is reported as a warning.
"""

from __future__ import annotations

import threading
import time
import uuid
import warnings
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from control.backends.base import Node
from control.net import iptables
from harness.cluster import Cluster, ClusterSpec
from harness.isolated import NoAnswer, call_isolated
from nemesis.roles import KafkaRoles, RoleLookupError
from tests.eventually import eventually
from tests.nemesis.probes import netns_available
from workloads.config import ClientConfig
from workloads.handles import Clients
from workloads.keys import KeyMap
from workloads.topics import create_topics

pytestmark = [pytest.mark.slow, pytest.mark.netns, pytest.mark.integration, pytest.mark.broker]

KEYS = (0, 1, 2)
HEAL_AFTER_S = 5.0
ATTEMPTS = 3


def read_committed(config: ClientConfig, key: int) -> list[bytes]:
    """Every value a read_committed consumer sees on the key, to the end."""
    topic, partition = KeyMap().topic_partition(key)
    values: list[bytes] = []
    with Clients() as clients:
        consumer = clients.consumer({**config.consumer_conf(), "group.id": f"g-{uuid.uuid4().hex}"})
        consumer.assign([TopicPartition(topic, partition, 0)])
        quiet_until = time.monotonic() + 3
        while time.monotonic() < quiet_until:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                values.append(msg.value())
                quiet_until = time.monotonic() + 3
    return values


def staging_key(roles: KafkaRoles, txn_id: str, timeout: float = 30) -> tuple[int, str]:
    """A key led by a broker other than the transaction's coordinator, and that
    leader. Retried, as Kafka's own tests wait for metadata on every broker:
    CreateTopics returns once the controller has the topics, and the broker a
    Metadata request reaches may not have replayed them yet."""

    def lookup() -> tuple[int, str]:
        coordinator = roles.coordinator("transaction", txn_id)
        for key in KEYS:
            leader = roles.leader(*KeyMap().topic_partition(key))
            if leader != coordinator:
                return key, leader
        raise RoleLookupError(f"{coordinator} coordinates {txn_id} and leads every key")

    return eventually(
        lookup, timeout, interval=0.2, retry_on=(RoleLookupError,), what="a staging key"
    )


def abort_across_a_cut(
    config: ClientConfig, node: Node, client_address: str, key: int, tag: bytes
) -> None:
    """Commits "before", sends "aborted" while the key's leader (``node``) is
    cut off from the clients and aborts it (the heal comes HEAL_AFTER_S after
    the send), then commits "after"; each value ends with ``tag``."""
    topic, partition = KeyMap().topic_partition(key)
    with Clients() as clients:  # no client may reconnect once the cluster is gone
        producer = clients.producer(config.producer_conf("staged"))
        producer.init_transactions(config.op_timeout_s)
        producer.begin_transaction()  # connects to the leader before the cut
        producer.produce(topic, b"before" + tag, partition=partition)
        producer.commit_transaction(config.op_timeout_s)

        iptables.cut_address(node, client_address)
        healer = threading.Timer(HEAL_AFTER_S, iptables.heal, args=([node],))
        try:
            producer.begin_transaction()
            producer.produce(topic, b"aborted" + tag, partition=partition)
            producer.poll(0.3)  # in flight, so the abort cannot purge it
            healer.start()
            producer.abort_transaction(config.op_timeout_s)
        finally:
            healer.join()
            iptables.heal([node])
        time.sleep(3)  # the retransmission lands
        producer.begin_transaction()
        producer.produce(topic, b"after" + tag, partition=partition)
        producer.commit_transaction(config.op_timeout_s)


def staged(config: ClientConfig, node: Node, client_address: str, key: int) -> bytes:
    """Runs ``abort_across_a_cut`` in a process of its own until it completes,
    at most ``ATTEMPTS`` times; the tag of the values it wrote."""
    for attempt in range(1, ATTEMPTS + 1):
        tag = f"-{attempt}".encode()
        try:
            call_isolated(abort_across_a_cut, config, node, client_address, key, tag)
            return tag
        except NoAnswer as e:
            warnings.warn(f"the staging producer crashed (attempt {attempt}): {e}", stacklevel=1)
        finally:
            iptables.heal([node])
    pytest.fail(f"the staging producer crashed {ATTEMPTS} times")


@pytest.mark.parametrize("bug", [True, False], ids=["bug", "fixed"])
def test_a_write_delivered_after_its_abort_is_committed_only_with_the_bug(
    bug: bool, tmp_path: Path
) -> None:
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    spec = ClusterSpec(
        name=f"de{uuid.uuid4().hex[:8]}", nodes=3, bugs=("delayed-endtxn",) if bug else ()
    )
    cluster = Cluster.up(spec, tmp_path)
    ctx = cluster.nemesis_context(seed=1)
    try:
        config = ClientConfig(
            bootstrap=cluster.bootstrap, keys=KEYS, transactional=True, replication_factor=3
        )
        create_topics(config)
        key, leader = staging_key(ctx.roles, config.producer_conf("staged")["transactional.id"])
        tag = staged(config, ctx.node(leader), ctx.client_address, key)

        seen = read_committed(config, key)
        assert b"before" + tag in seen and b"after" + tag in seen, seen
        assert (b"aborted" + tag in seen) is bug, seen
    finally:
        ctx.close()
        cluster.down()
