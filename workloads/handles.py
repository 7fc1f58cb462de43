"""confluent-kafka clients that are closed on every path.

Each client is a librdkafka handle with its own threads, which keep
reconnecting until the handle is destroyed: a client never closed outlives
its brokers and its test. ``Clients`` makes producers, consumers and admin
clients and closes them all when its ``with`` block ends, however it ends.

Only closing is explicit here. A producer's ``close`` flushes with no time
limit, so with its brokers gone it would wait out ``message.timeout.ms``
(five minutes by default): ``close_producer`` drops what is unsent first.
An admin client has no ``close``; leaving its ``with`` block destroys it,
whoever else still holds a reference (a bound method, a future).
"""

from __future__ import annotations

import contextlib
from contextlib import ExitStack
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient


def close_producer(producer: Producer) -> None:
    """Drops every message not yet acknowledged, then destroys the producer.
    A fatal error (a fenced transactional producer) is raised once more from
    ``close``, after the handle is gone: it was already reported."""
    with contextlib.suppress(RuntimeError):  # already closed
        producer.purge(in_queue=True, in_flight=True)
    with contextlib.suppress(KafkaException):
        producer.close()


class Clients(ExitStack):
    """Clients closed, newest first, when the ``with`` block ends or on ``close()``."""

    def producer(self, conf: dict[str, Any]) -> Producer:
        producer = Producer(conf)
        self.callback(close_producer, producer)
        return producer

    def consumer(self, conf: dict[str, Any]) -> Consumer:
        """A consumer; ``close`` leaves its group, if it joined one."""
        return self.enter_context(Consumer(conf))

    def admin(self, conf: dict[str, Any]) -> AdminClient:
        return self.enter_context(AdminClient(conf))
