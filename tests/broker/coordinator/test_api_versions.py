"""Every version the broker advertises for the coordinator APIs answers a
well-formed request with a well-formed response (legacy and flexible)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.api.table import API_TABLE
from broker.launcher import BrokerProcess
from tests.broker.coordinator.conftest import COORDINATOR_SETTINGS
from tests.broker.wire import WireClient, create_topic

pytestmark = [pytest.mark.broker, pytest.mark.integration]

COORDINATOR_APIS = (8, 9, 10, 11, 12, 13, 14, 15, 16, 22, 24, 25, 26, 27, 28, 65, 66)
OFFSETS = [
    {
        "partition_index": 0,
        "committed_offset": 1,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
]


def request_for(api_key: int, name: str) -> dict[str, Any]:
    """A superset of every version's fields; the codec keeps what a version has."""
    member = {"group_id": name, "generation_id": 1, "member_id": "m", "group_instance_id": None}
    txn = {"transactional_id": name, "producer_id": 1, "producer_epoch": 0}
    return {
        10: {"key": name, "key_type": 0, "coordinator_keys": [name]},
        11: {
            "group_id": name,
            "session_timeout": 10_000,
            "rebalance_timeout": 10_000,
            "member_id": "",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}],
            "reason": None,
        },
        14: {**member, "protocol_type": "consumer", "protocol_name": "range", "assignments": []},
        12: member,
        13: {**member, "members": [{"member_id": "m", "group_instance_id": None, "reason": None}]},
        8: {
            "group_id": name,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "retention_time": -1,
            "topics": [{"name": "v", "partitions": OFFSETS}],
        },
        9: {
            "group_id": name,
            "topics": [{"name": "v", "partition_indexes": [0]}],
            "require_stable": True,
            "groups": [{"group_id": name, "topics": [{"name": "v", "partition_indexes": [0]}]}],
        },
        15: {"groups": [name], "include_authorized_operations": False},
        16: {"states_filter": []},
        22: {
            "transactional_id": name,
            "transaction_timeout": 1000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
        24: {
            "v3_and_below_transactional_id": name,
            "v3_and_below_producer_id": 1,
            "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": [{"name": "v", "partitions": [0]}],
            "transactions": [
                {**txn, "verify_only": False, "topics": [{"name": "v", "partitions": [0]}]}
            ],
        },
        25: {**txn, "group_id": name},
        26: {**txn, "committed": True},
        28: {
            **txn,
            "group_id": name,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": "v", "partitions": OFFSETS}],
        },
        27: {
            "markers": [
                {
                    "producer_id": 77,
                    "producer_epoch": 0,
                    "transaction_result": False,
                    "topics": [{"name": "v", "partition_indexes": [0]}],
                    "coordinator_epoch": 0,
                }
            ]
        },
        65: {"transactional_ids": [name]},
        66: {"state_filters": [], "producer_id_filters": [], "duration_filter": -1},
    }[api_key]


def error_codes(entity: Any) -> Iterator[ErrorCode]:
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        if isinstance(value, ErrorCode):
            yield value
        elif dataclasses.is_dataclass(value):
            yield from error_codes(value)
        elif isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    yield from error_codes(item)


def test_every_advertised_version_answers(tmp_path_factory: pytest.TempPathFactory) -> None:
    handlers = API_TABLE
    broker = BrokerProcess(
        tmp_path_factory.mktemp("versions") / "node1", list(COORDINATOR_SETTINGS)
    ).start()
    try:
        client = WireClient(broker.bootstrap)
        assert create_topic(client, "v").error_code == ErrorCode.none
        answered = 0
        for api_key in COORDINATOR_APIS:
            spec = handlers[api_key]
            for version in range(spec.min_version, spec.max_version + 1):
                response = client.request(
                    api_key, version, request_for(api_key, f"v{api_key}-{version}")
                )
                codes = set(error_codes(response))
                assert ErrorCode.unknown_server_error not in codes, (api_key, version, response)
                answered += 1
        assert answered == sum(
            handlers[k].max_version - handlers[k].min_version + 1 for k in COORDINATOR_APIS
        )
        client.close()
    finally:
        broker.kill()
