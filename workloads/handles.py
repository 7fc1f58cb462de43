"""confluent-kafka clients that are closed on every path.

Each client is a librdkafka handle with its own threads, which keep
reconnecting until the handle is destroyed: a client never closed outlives
its brokers and its test. ``Clients`` makes producers, consumers and admin
clients and closes them all when its ``with`` block ends, however it ends.

Only closing is explicit here. A producer's ``close`` flushes with no time
limit, so with its brokers gone it would wait out ``message.timeout.ms``
(five minutes by default), and since confluent-kafka 2.16 it first aborts an
open transaction with no time limit either, hanging for good while the
coordinator is out of reach. So ``close_producer`` drops what is unsent and
aborts within ``ABORT_S`` before closing; a transaction that cannot be
aborted in time is left to the broker's transaction timeout, and the handle
is destroyed without ``close`` once its last reference goes (its destructor
neither flushes nor aborts). An admin client has no ``close``; leaving its
``with`` block destroys it, whoever else still holds a reference (a bound
method, a future).

A confluent-kafka call (2.16) that raises while an exception is being handled
keeps that exception alive for good, and with it its traceback's frames and
every client they hold, whose threads then never end. So client calls that
may raise are not made inside ``except`` blocks, and ``close_producer``, which
runs from ``finally`` and exit stacks, aborts on a thread of its own then.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from contextlib import ExitStack
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

log = logging.getLogger(__name__)

ABORT_S = 2.0  # a reachable coordinator aborts in milliseconds
NO_TRANSACTION = (KafkaError._NOT_CONFIGURED, KafkaError._STATE)


def close_producer(producer: Producer) -> None:
    """Drops every message not yet acknowledged, aborts an open transaction,
    then destroys the producer; if the abort does not finish in time, the
    producer is left to its last reference (see above)."""
    if sys.exc_info()[1] is None:
        _close_producer(producer)
        return
    closer = threading.Thread(target=_close_producer, args=(producer,), name="jepka-close")
    closer.start()
    closer.join()


def _close_producer(producer: Producer) -> None:
    try:
        producer.purge(in_queue=True, in_flight=True)
        producer.abort_transaction(ABORT_S)
    except RuntimeError:  # already closed
        return
    except KafkaException as e:
        error = e.args[0]
        if not (error.fatal() or error.code() in NO_TRANSACTION):
            log.warning("producer not closed: its transaction could not be aborted: %s", error)
            return
    with contextlib.suppress(KafkaException):  # a fatal error (fenced), already reported
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
