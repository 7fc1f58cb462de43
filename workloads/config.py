"""What a client needs to connect, from the test spec: ``ClientConfig``,
and where librdkafka's own log lines go."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workloads.keys import KeyMap

# librdkafka's own log lines go to logging, not straight to stderr. Under
# faults they are expected noise (refused connections...): what matters is in
# the history, so they are hidden unless JEPKA_LIBRDKAFKA_LOG names a level.
LIBRDKAFKA_LOG = logging.getLogger("librdkafka")
LIBRDKAFKA_LOG.setLevel(os.environ.get("JEPKA_LIBRDKAFKA_LOG", "CRITICAL"))


@dataclass(frozen=True)
class ClientConfig:
    """Everything a client needs to connect, from the test spec."""

    bootstrap: str
    keys: tuple[int, ...]
    acks: str = "all"
    idempotence: bool = True
    isolation_level: str = "read_committed"
    transactional: bool = False
    replication_factor: int = 1
    #: the topics' min.insync.replicas; None leaves it to the broker's default
    min_isr: int | None = None
    key_map: KeyMap = field(default_factory=KeyMap)
    group_id: str = "jepka"
    txn_id_prefix: str = "jepka-txn"
    op_timeout_s: float = 10.0
    poll_s: float = 0.1
    #: librdkafka properties for every producer, consumer and admin (SASL,
    #: TLS, timeouts), over jepka's own
    properties: Mapping[str, str] = field(default_factory=dict)

    @property
    def longest_op_s(self) -> float:
        """How long one client op may run before the harness records it as
        unknown: three client op timeouts, also the producers'
        ``transaction.timeout.ms``. A synchronous offset commit has no
        timeout of its own; one blocked that long waits for a coordinator
        the member's heartbeats cannot reach either, so its session
        (``session.timeout.ms`` below) has expired and a commit arriving later
        is refused (an old generation)."""
        return self.op_timeout_s * 3

    @property
    def request_timeout_s(self) -> float:
        """How long one request to the cluster is waited for (a produce, a
        topic's creation) before it counts as timed out."""
        return self.op_timeout_s * 0.3

    @property
    def txn_timeout_ms(self) -> int | None:
        """The producers' ``transaction.timeout.ms`` (jepka's, or the one the
        client properties set); None where they are not transactional."""
        if not self.transactional:
            return None
        return int(self.producer_conf(0)["transaction.timeout.ms"])

    def admin_conf(self) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, "logger": LIBRDKAFKA_LOG, **self.properties}

    def producer_conf(self, process: Any) -> dict[str, Any]:
        conf = {
            "bootstrap.servers": self.bootstrap,
            "acks": self.acks,
            "enable.idempotence": self.idempotence or self.transactional,
            "linger.ms": 0,
            "message.timeout.ms": int(self.op_timeout_s * 1000 * 0.6),
            "request.timeout.ms": round(self.request_timeout_s * 1000),
            "socket.timeout.ms": int(self.op_timeout_s * 1000 * 0.5),
            "max.in.flight.requests.per.connection": 5,
            # A coordinator answers CONCURRENT_TRANSACTIONS while the previous
            # commit's markers are written, a few ms on a LAN. librdkafka asks
            # again after a fixed 20 ms for AddPartitionsToTxn, but for
            # AddOffsetsToTxn, EndTxn and produce retries after this backoff
            # (100 ms by default), doubling with jitter up to
            # retry.backoff.max.ms (1 s); it also starts the fast metadata
            # refresh after a leader change at this interval.
            "retry.backoff.ms": 20,
            "logger": LIBRDKAFKA_LOG,
        }
        if self.transactional:
            conf["transactional.id"] = f"{self.txn_id_prefix}-{process}"
            conf["transaction.timeout.ms"] = int(self.longest_op_s * 1000)
        return {**conf, **self.properties}

    def consumer_conf(self) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": self.isolation_level,
            # the end of a partition is reported, so final reads know when
            # they are done (``ends`` of a completion)
            "enable.partition.eof": True,
            "socket.timeout.ms": int(self.op_timeout_s * 1000 * 0.5),
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1000,
            "logger": LIBRDKAFKA_LOG,
            **self.properties,
        }
