"""How a topic's overrides change: IncrementalAlterConfigs applies each
operation in turn, AlterConfigs replaces the whole set, and the result is
checked as a new topic's configuration."""

from __future__ import annotations

import pytest

from broker.controller.topic_configs import APPEND, DELETE, SET, SUBTRACT, altered, check
from broker.errors import ErrorCode, KafkaError

CURRENT = {"retention.ms": "60000", "cleanup.policy": "compact"}


def test_incremental_operations_apply_in_turn() -> None:
    ops = [
        ("min.insync.replicas", SET, "2"),
        ("retention.ms", DELETE, None),
        ("cleanup.policy", APPEND, "delete"),
        ("cleanup.policy", SUBTRACT, "compact"),
    ]
    assert altered(CURRENT, ops, incremental=True) == {
        "min.insync.replicas": "2",
        "cleanup.policy": "delete",
    }
    assert altered({}, [("cleanup.policy", APPEND, "compact")], True) == {
        "cleanup.policy": "delete,compact"  # appended to the default
    }


def test_alter_configs_replaces_the_whole_set() -> None:
    assert altered(CURRENT, [("segment.bytes", SET, "1048576")], incremental=False) == {
        "segment.bytes": "1048576"
    }


@pytest.mark.parametrize(
    ("configs", "wrong"),
    [
        ({"no.such.key": "1"}, "unknown config key"),
        ({"segment.bytes": "many"}, "bad value"),
        ({"min.insync.replicas": "4"}, "between 1 and 3"),
        ({"unclean.leader.election.enable": "maybe"}, "unclean"),
    ],
)
def test_a_config_the_topic_cannot_take_is_invalid(configs: dict[str, str], wrong: str) -> None:
    with pytest.raises(KafkaError, match=wrong) as refused:
        check(configs, replication_factor=3)
    assert refused.value.code is ErrorCode.invalid_config


def test_append_only_applies_to_lists() -> None:
    with pytest.raises(KafkaError, match="not a list"):
        altered({}, [("retention.ms", APPEND, "1")], incremental=True)
