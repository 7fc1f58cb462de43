"""A poll as the Java consumer's: back as soon as records have come, never on
end-of-partition events alone (a stand-in consumer, no broker)."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError

from workloads.consuming import consume_ready


class Msg:
    def __init__(self, partition: int, eof: bool = False) -> None:
        self.partition, self.eof = partition, eof

    def error(self) -> KafkaError | None:
        return KafkaError(KafkaError._PARTITION_EOF) if self.eof else None


class Scripted:
    """Answers each ``consume`` call with the next scripted batch."""

    def __init__(self, *batches: list[Msg]) -> None:
        self.batches = list(batches)
        self.calls: list[tuple[int, float]] = []

    def consume(self, n: int, timeout: float) -> list[Any]:
        self.calls.append((n, timeout))
        return self.batches.pop(0) if self.batches else []


def test_records_already_fetched_come_back_without_waiting() -> None:
    consumer = Scripted([Msg(0), Msg(1)])
    assert [m.partition for m in consume_ready(consumer, 5.0)] == [0, 1]
    assert consumer.calls == [(500, 0)]


def test_the_first_record_ends_the_wait_with_what_came_beside_it() -> None:
    consumer = Scripted([], [Msg(2)], [Msg(2), Msg(3)])
    assert [m.partition for m in consume_ready(consumer, 5.0)] == [2, 2, 3]
    assert [n for n, _ in consumer.calls] == [500, 1, 499]


def test_an_end_of_partition_alone_does_not_end_the_wait() -> None:
    consumer = Scripted([], [Msg(0, eof=True)], [], [Msg(1)], [])
    got = consume_ready(consumer, 5.0)
    assert [(m.partition, m.eof) for m in got] == [(0, True), (1, False)]
    assert [n for n, _ in consumer.calls] == [500, 1, 499, 1, 499]


def test_nothing_but_ends_within_the_timeout_is_what_comes_back() -> None:
    consumer = Scripted([Msg(0, eof=True)])
    assert [m.eof for m in consume_ready(consumer, 0.01)] == [True]
    assert consumer.calls[-1][0] == 1  # waited for a record, none came
