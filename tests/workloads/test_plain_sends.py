"""How a non-transactional op's sends end it: each is delivered or not on its
own, so a send refused beside one delivered leaves the op ``info`` and names
the refused one (the checker then knows that write certainly did not happen).

The delivery reports come from a producer double: which report librdkafka
gives when is its business; what the op records of each is the client's."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError

from workloads.client import QueueClient
from workloads.config import ClientConfig

REFUSED = KafkaError(KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, fatal=True)
TIMED_OUT = KafkaError(KafkaError._MSG_TIMED_OUT)


class Deliveries:
    """A producer that reports the n-th send's delivery as ``reports[n]``
    says: an error, or the offset it was written at."""

    def __init__(self, reports: list[KafkaError | int]) -> None:
        self.reports = reports
        self.sent = 0

    def produce(self, topic: str, value: bytes, partition: int, on_delivery: Any) -> None:
        report = self.reports[self.sent]
        self.sent += 1
        if isinstance(report, KafkaError):
            on_delivery(report, None)
        else:
            on_delivery(None, SimpleNamespace(offset=lambda: report))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        return 0


def send_op(reports: list[KafkaError | int]) -> dict[str, Any]:
    client = QueueClient(ClientConfig(bootstrap="127.0.0.1:9", keys=(0, 1, 2)))
    client.producer = Deliveries(reports)  # type: ignore[assignment]
    sends = [["send", k, 10 + k] for k in range(len(reports))]
    return client._plain({"type": "invoke", "process": 0, "f": "send", "value": sends})


@pytest.mark.parametrize(
    ("reports", "type_", "refused"),
    [
        ([5, REFUSED, 6], "info", [1]),  # the others may be in the log: info, naming #1
        ([REFUSED, REFUSED], "fail", None),  # nothing can have been written
        ([5, TIMED_OUT], "info", None),  # the timed-out one may be in the log
        ([TIMED_OUT, REFUSED], "info", [1]),
        ([5, 6], "ok", None),
    ],
)
def test_a_refused_send_is_named_where_the_op_is_info(
    reports: list[KafkaError | int], type_: str, refused: list[int] | None
) -> None:
    done = send_op(reports)
    assert done["type"] == type_, done
    assert done.get("refused") == refused, done
    delivered = [r if isinstance(r, int) else None for r in reports]
    assert [mop[2][0] for mop in done["value"]] == delivered
