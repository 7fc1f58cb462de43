"""no-dedup: the same idempotent batch (same producer id, epoch and sequence) sent
twice over the wire is appended twice with the bug, once without it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from tests.broker.batches import make_batch, read_values
from tests.broker.wire import WireClient, create_topic, fetch, produce

pytestmark = [pytest.mark.broker, pytest.mark.integration]
PID = 777


@pytest.mark.parametrize("bug", [True, False], ids=["no-dedup", "correct"])
def test_retried_idempotent_batch(
    start_buggy: Callable[[list[str]], BrokerProcess], bug: bool
) -> None:
    broker = start_buggy(["no-dedup"] if bug else [])
    client = WireClient(broker.bootstrap)
    try:
        assert create_topic(client, "dedup").error_code == ErrorCode.none
        batch = make_batch([b"a", b"b"], PID, 0, 0)
        first = produce(client, "dedup", 0, batch)
        retry = produce(client, "dedup", 0, batch)  # a retry after a lost response
        assert (first.error_code, first.base_offset) == (ErrorCode.none, 0)
        values = [v for _, v in read_values(fetch(client, "dedup").records)]
        if bug:
            assert (retry.error_code, retry.base_offset) == (ErrorCode.none, 2)
            assert values == [b"a", b"b", b"a", b"b"]  # the duplicate a consumer reads
        else:
            assert (retry.error_code, retry.base_offset) == (ErrorCode.none, 0)
            assert values == [b"a", b"b"]
    finally:
        client.close()
