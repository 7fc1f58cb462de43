"""DeleteGroups, as Kafka's classic group coordinator answers it, through two
independent clients (kafka-python's admin and librdkafka's): an empty group
goes with its committed offsets, a group with members stays
(NON_EMPTY_GROUP), an unknown one is GROUP_ID_NOT_FOUND; the deletion is
written to ``__consumer_offsets``, so a restarted broker does not bring the
group back."""

from __future__ import annotations

import pytest
from confluent_kafka import TopicPartition
from kafka import KafkaAdminClient
from kafka.errors import GroupIdNotFoundError, NonEmptyGroupError

from broker.launcher import BrokerProcess
from tests.broker.coordinator.kafka_helpers import create_topic, poll_until
from workloads.handles import Clients

pytestmark = [pytest.mark.broker, pytest.mark.integration]
TOPIC = "kept"


def commit_offset(clients: Clients, bootstrap: str, group: str) -> None:
    """A group with a committed offset and no members (an assign-only consumer)."""
    consumer = clients.consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    consumer.commit(offsets=[TopicPartition(TOPIC, 0, 5)], asynchronous=False)
    consumer.close()


def delete(bootstrap: str, groups: list[str]) -> dict[str, str]:
    """kafka-python's answer per group: "OK" or the error's class name."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return dict(admin.delete_groups(groups))
    finally:
        admin.close()


def test_only_empty_groups_are_deleted_and_stay_deleted(coord_broker: BrokerProcess) -> None:
    bootstrap = coord_broker.bootstrap
    create_topic(bootstrap, TOPIC, 1)
    with Clients() as clients:
        commit_offset(clients, bootstrap, "idle")
        member = clients.consumer({"bootstrap.servers": bootstrap, "group.id": "busy"})
        member.subscribe([TOPIC])
        poll_until([member], lambda: bool(member.assignment()), [])
        assert delete(bootstrap, ["idle", "busy", "never"]) == {
            "idle": "OK",
            "busy": NonEmptyGroupError.__name__,
            "never": GroupIdNotFoundError.__name__,
        }
        admin = clients.admin({"bootstrap.servers": bootstrap})
        listed = admin.list_consumer_groups().result(10)
        assert {g.group_id for g in listed.valid} == {"busy"}
    coord_broker.kill()
    coord_broker.start()
    assert delete(bootstrap, ["idle"]) == {"idle": GroupIdNotFoundError.__name__}  # stays gone
