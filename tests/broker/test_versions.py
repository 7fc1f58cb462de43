"""Every version ApiVersions advertises for the broker's own APIs answers a
well-formed request without error (flexible and legacy encodings alike)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from tests.broker.batches import make_batch
from tests.broker.wire import WireClient, create_topic

pytestmark = [pytest.mark.broker, pytest.mark.integration]

PARTITION_FETCH = {
    "partition": 0,
    "current_leader_epoch": -1,
    "fetch_offset": 0,
    "last_fetched_epoch": -1,
    "log_start_offset": -1,
    "partition_max_bytes": 1 << 20,
}


def request_for(api_key: int, version: int) -> dict[str, Any]:
    """A superset of every version's fields; ``build`` keeps what the version has."""
    name = f"v{api_key}-{version}"
    return {
        18: {"client_software_name": "t", "client_software_version": "1"},
        3: {
            "topics": [{"name": "v", "topic_id": uuid.UUID(int=0)}],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
        0: {
            "transactional_id": None,
            "acks": -1,
            "timeout": 1000,
            "topic_data": [
                {"name": "v", "partition_data": [{"index": 0, "records": make_batch([b"x"])}]}
            ],
        },
        1: {
            "replica_id": -1,
            "max_wait": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 1,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": "v", "partitions": [PARTITION_FETCH]}],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
        2: {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": "v",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "current_leader_epoch": -1,
                            "timestamp": -2,
                            "max_num_offsets": 1,
                        }
                    ],
                }
            ],
        },
        19: {
            "topics": [
                {
                    "name": name,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout": 1000,
            "validate_only": False,
        },
        20: {"topic_names": ["doomed"], "timeout": 1000},
        21: {
            "topics": [{"name": "v", "partitions": [{"partition_index": 0, "offset": -1}]}],
            "timeout": 1000,
        },
        32: {
            "resources": [{"resource_type": 2, "resource_name": "v", "configuration_keys": None}],
            "include_synonyms": False,
            "include_documentation": False,
        },
        60: {"include_cluster_authorized_operations": False, "endpoint_type": 1},
        61: {"topics": [{"name": "v", "partition_indexes": [0]}]},
    }[api_key]


def error_codes(entity: Any) -> list[ErrorCode]:
    """Every ``error_code`` anywhere in a response."""
    if isinstance(entity, tuple):
        return [code for item in entity for code in error_codes(item)]
    if not dataclasses.is_dataclass(entity):
        return []
    codes = []
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        if field.name == "error_code":
            codes.append(value)
        else:
            codes += error_codes(value)
    return codes


def test_every_advertised_version_round_trips(broker: BrokerProcess) -> None:
    client = WireClient(broker.bootstrap)
    try:
        assert create_topic(client, "v").error_code == ErrorCode.none
        advertised = client.request(18, 3, request_for(18, 3)).api_keys
        ours = [a for a in advertised if a.api_key in (0, 1, 2, 3, 18, 19, 20, 21, 32, 60, 61)]
        assert len(ours) == 11
        for entry in ours:
            for version in range(entry.min_version, entry.max_version + 1):
                if entry.api_key == 20:
                    create_topic(client, "doomed")
                response = client.request(
                    entry.api_key, version, request_for(entry.api_key, version)
                )
                codes = error_codes(response)
                assert codes and all(c == ErrorCode.none for c in codes), (
                    entry.api_key,
                    version,
                    codes,
                )
    finally:
        client.close()
