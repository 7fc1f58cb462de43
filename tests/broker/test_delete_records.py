"""DeleteRecords on a single node, on the wire: the log start offset moves up to
the requested offset (-1: the HW) and never back, the answer carries the low
watermark, offsets past the HW, compacted and internal topics are refused, reads below the
new start are out of range, ListOffsets EARLIEST answers it, and a restart keeps
it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from tests.broker.batches import make_batch
from tests.broker.wire import WireClient, create_topic, fetch, produce

pytestmark = [pytest.mark.broker, pytest.mark.integration]


def delete_records(client: WireClient, topic: str, offset: int, version: int = 2) -> Any:
    """One DeleteRecords for ``topic``-0; returns its partition result."""
    response = client.request(
        21,
        version,
        {
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": offset}]}],
            "timeout": 5000,
        },
    )
    return response.topics[0].partitions[0]


def earliest(client: WireClient, topic: str) -> int:
    response = client.request(
        2,
        7,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2}
                    ],
                }
            ],
        },
    )
    return response.topics[0].partitions[0].offset


def test_delete_records_moves_the_log_start_and_a_restart_keeps_it(
    start_broker: Callable[..., BrokerProcess],
) -> None:
    broker = start_broker()
    client = WireClient(broker.bootstrap)
    assert create_topic(client, "d").error_code == ErrorCode.none
    for i in range(10):
        produce(client, "d", 0, make_batch([b"r%d" % i]))
    too_far = delete_records(client, "d", 11)
    assert too_far.error_code == ErrorCode.offset_out_of_range
    done = delete_records(client, "d", 4, version=0)
    assert (done.error_code, done.low_watermark) == (ErrorCode.none, 4)
    lower = delete_records(client, "d", 2, version=1)  # never moves it back
    assert (lower.error_code, lower.low_watermark) == (ErrorCode.none, 4)
    assert earliest(client, "d") == 4
    assert fetch(client, "d", 3).error_code == ErrorCode.offset_out_of_range
    assert fetch(client, "d", 4).error_code == ErrorCode.none
    missing = delete_records(client, "nope", 0)
    assert missing.error_code == ErrorCode.unknown_topic_or_partition
    internal = delete_records(client, "__consumer_offsets", 0)
    assert internal.error_code == ErrorCode.invalid_topic_exception
    assert create_topic(client, "c", cleanup_policy="compact").error_code == ErrorCode.none
    assert delete_records(client, "c", 0).error_code == ErrorCode.policy_violation
    client.close()
    assert broker.stop() == 0
    broker.start()
    client = WireClient(broker.bootstrap)
    assert earliest(client, "d") == 4
    to_hw = delete_records(client, "d", -1)
    assert (to_hw.error_code, to_hw.low_watermark) == (ErrorCode.none, 10)
    assert fetch(client, "d", 9).error_code == ErrorCode.offset_out_of_range
    client.close()
