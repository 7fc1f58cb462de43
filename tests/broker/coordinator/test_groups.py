"""Consumer groups with two independent clients: confluent-kafka (librdkafka)
and kafka-python, unmodified settings."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupState
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

from broker.launcher import BrokerProcess
from tests.broker.coordinator.kafka_helpers import create_topic, poll_until
from workloads.handles import Clients

pytestmark = [pytest.mark.broker, pytest.mark.integration, pytest.mark.slow]
TOPIC, PARTITIONS, GROUP = "work", 6, "workers"


def produce(bootstrap: str, values: list[str]) -> None:
    with Clients() as clients:
        producer = clients.producer({"bootstrap.servers": bootstrap})
        for i, value in enumerate(values):
            producer.produce(TOPIC, value=value.encode(), partition=i % PARTITIONS)
        assert producer.flush(30) == 0


def owned(consumers: list[Consumer]) -> list[set[int]]:
    return [{tp.partition for tp in c.assignment()} for c in consumers]


def covers_all(consumers: list[Consumer]) -> bool:
    parts = owned(consumers)
    union = set().union(*parts)
    return union == set(range(PARTITIONS)) and sum(len(p) for p in parts) == PARTITIONS


def test_group_of_three_rebalances_when_one_leaves_and_resumes_from_commits(
    coord_broker: BrokerProcess, kafka_clients: Clients
) -> None:
    bs = coord_broker.bootstrap
    create_topic(bs, TOPIC, PARTITIONS)
    config = {
        "bootstrap.servers": bs,
        "group.id": GROUP,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    consumers = [kafka_clients.consumer(config) for _ in range(3)]
    for c in consumers:
        c.subscribe([TOPIC])
    # Produce only once the group is settled, so no record is read before a rebalance.
    poll_until(consumers, lambda: all(len(p) == 2 for p in owned(consumers)), [])
    first = [f"a{i}" for i in range(30)]
    produce(bs, first)
    seen: list[str] = []
    poll_until(consumers, lambda: len(seen) >= 30, seen)
    assert sorted(seen) == sorted(first)
    for c in consumers:
        c.commit(asynchronous=False)

    leaving = consumers.pop()
    leaving.close()  # LeaveGroup: the other two take over its partitions
    poll_until(
        consumers,
        lambda: covers_all(consumers) and all(len(p) == 3 for p in owned(consumers)),
        [],
    )

    second = [f"b{i}" for i in range(30)]
    produce(bs, second)
    resumed: list[str] = []
    poll_until(consumers, lambda: len(resumed) >= 30, resumed)
    time_to_settle = time.monotonic() + 1
    while time.monotonic() < time_to_settle:  # anything re-delivered would show up here
        poll_until(consumers, lambda: True, resumed)
    assert sorted(resumed) == sorted(second)  # from the committed offsets: no a* again

    admin = kafka_clients.admin({"bootstrap.servers": bs})
    description = admin.describe_consumer_groups([GROUP])[GROUP].result(30)
    assert description.state == ConsumerGroupState.STABLE
    assert len(description.members) == 2
    listed = admin.list_consumer_groups().result(30).valid
    assert GROUP in {g.group_id for g in listed}


def test_kafka_python_group_commits_and_resumes(coord_broker: BrokerProcess) -> None:
    bs = coord_broker.bootstrap
    create_topic(bs, "kp", 2)

    def consume_all(count: int) -> list[str]:
        got: list[str] = []
        deadline = time.monotonic() + 60
        with KafkaConsumer(
            "kp",
            bootstrap_servers=bs,
            group_id="kp-group",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        ) as consumer:
            while len(got) < count and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=500).values():
                    got.extend(r.value.decode() for r in records)
            consumer.commit()
        return got

    with KafkaProducer(bootstrap_servers=bs) as producer:
        for i in range(20):
            producer.send("kp", f"k{i}".encode(), partition=i % 2)
        producer.flush(30)
        assert sorted(consume_all(20)) == sorted(f"k{i}" for i in range(20))
        for i in range(20, 26):
            producer.send("kp", f"k{i}".encode(), partition=i % 2)
        producer.flush(30)
    assert sorted(consume_all(6)) == sorted(f"k{i}" for i in range(20, 26))

    with KafkaAdminClient(bootstrap_servers=bs) as admin:
        assert {"group_id": "kp-group", "protocol_type": "consumer", "group_state": "Empty"} in (
            admin.list_groups()
        )
        offsets = admin.list_group_offsets({"kp-group": None})["kp-group"]
        assert {tp.partition: meta.offset for tp, meta in offsets.items()} == {0: 13, 1: 13}
        described = admin.describe_groups(["kp-group"])["kp-group"]
        assert (described["group_state"], described["members"]) == ("Empty", [])


def test_static_member_restart_keeps_its_assignment_without_a_rebalance(
    coord_broker: BrokerProcess, kafka_clients: Clients
) -> None:
    bs = coord_broker.bootstrap
    create_topic(bs, "st", 4)

    def static(instance: str) -> Consumer:
        return kafka_clients.consumer(
            {"bootstrap.servers": bs, "group.id": "static", "group.instance.id": instance}
        )

    revocations: list[list[int]] = []
    stay = static("stay")
    stay.subscribe(
        ["st"], on_revoke=lambda _c, parts: revocations.append([p.partition for p in parts])
    )
    restarting = static("restarting")
    restarting.subscribe(["st"])
    pair = [stay, restarting]
    poll_until(pair, lambda: [len(p) for p in owned(pair)] == [2, 2], [])
    before = owned(pair)
    revocations.clear()
    restarting.close()  # a static member sends no LeaveGroup
    restarting = static("restarting")
    restarting.subscribe(["st"])
    pair = [stay, restarting]
    poll_until(pair, lambda: len(owned([restarting])[0]) == 2, [])
    assert owned(pair) == before
    assert revocations == []  # the member that stayed was never asked to rebalance
