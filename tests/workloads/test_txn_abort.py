"""An op drawn to abort waits for its sends, but not past the op timeout:
a send still out then is the abort's to wait for, and the op still ends
aborted, with nothing left open for the process's next op."""

from __future__ import annotations

from typing import Any

from workloads.client import QueueClient
from workloads.config import ClientConfig


class StuckProducer:
    """A transactional producer whose sends are never acknowledged."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def produce(self, topic: str, **kw: Any) -> None:
        self.calls.append("produce")

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        self.calls.append("flush")
        return 1  # still in flight

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append("abort")


def test_a_send_still_out_after_the_flush_is_left_to_the_abort() -> None:
    client = QueueClient(ClientConfig(bootstrap="127.0.0.1:9", keys=(0,), transactional=True))
    producer = client.producer = StuckProducer()  # type: ignore[assignment]
    op = {"type": "invoke", "process": 0, "f": "send", "value": [["send", 0, 1]], "abort": True}
    done = client._txn(op)
    assert producer.calls == ["begin", "produce", "flush", "abort"]
    assert (done["type"], done["error"]) == ("fail", "intentional-abort")
    assert done["value"] == [["send", 0, [None, 1]]]
