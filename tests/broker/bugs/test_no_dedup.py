"""no-dedup: the same idempotent batch (same producer id, epoch and sequence) sent
twice over the wire is deduplicated without the bug; with it the retry is
refused as out of sequence, and the producer's resend under a bumped epoch
(what librdkafka does on OUT_OF_ORDER_SEQUENCE_NUMBER) is appended again."""

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
        if bug:
            assert retry.error_code == ErrorCode.out_of_order_sequence_number
            resent = produce(client, "dedup", 0, make_batch([b"a", b"b"], PID, 1, 0))
            assert (resent.error_code, resent.base_offset) == (ErrorCode.none, 2)
        values = [v for _, v in read_values(fetch(client, "dedup").records)]
        if bug:
            assert values == [b"a", b"b", b"a", b"b"]  # the duplicate a consumer reads
        else:
            assert (retry.error_code, retry.base_offset) == (ErrorCode.none, 0)
            assert values == [b"a", b"b"]
    finally:
        client.close()
