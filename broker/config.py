"""Typed broker configuration under Kafka's own names and defaults.

A broker is configured by a Java-style properties file plus ``key=value``
overrides. Every key is declared once in ``BROKER_KEYS`` with its type and
default; anything else is refused with a message naming the key and where it
came from, because a misspelt fault-injection setting must not pass silently.
Topic-level keys (``segment.bytes``, ``retention.ms``...) are also accepted
under Kafka's broker-level names (``log.segment.bytes``...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LONG_MAX = 2**63 - 1


class ConfigError(ValueError):
    """A configuration value or file that cannot be used; the CLI exits 254."""


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError("expected true or false")


def _int(text: str) -> int:
    return int(text.strip())


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return value

    return parse


def _str(text: str) -> str:
    return text.strip()


BROKER_ROLE, CONTROLLER_ROLE = "broker", "controller"


def _roles(text: str) -> str:
    """``process.roles`` in one spelling (sorted), so comparisons need no parsing."""
    roles = {r.strip() for r in text.split(",") if r.strip()}
    if not roles or not roles <= {BROKER_ROLE, CONTROLLER_ROLE}:
        raise ValueError("expected broker, controller or broker,controller")
    return ",".join(sorted(roles))


@dataclass(frozen=True)
class Key:
    parse: Callable[[str], Any]
    default: Any
    minimum: int | None = None
    topic_level: bool = False


# Topic-level keys: a topic may override them with CreateTopics configs.
TOPIC_KEYS: dict[str, Key] = {
    "segment.bytes": Key(_int, 1024**3, 14, True),
    "segment.ms": Key(_int, 7 * 24 * 3600 * 1000, 1, True),
    "segment.index.bytes": Key(_int, 10 * 1024 * 1024, 4, True),
    "index.interval.bytes": Key(_int, 4096, 0, True),
    "retention.ms": Key(_int, 7 * 24 * 3600 * 1000, -1, True),
    "retention.bytes": Key(_int, -1, -1, True),
    "delete.retention.ms": Key(_int, 24 * 3600 * 1000, 0, True),
    "flush.messages": Key(_int, LONG_MAX, 1, True),
    "flush.ms": Key(_int, LONG_MAX, 0, True),
    "cleanup.policy": Key(
        _choice("delete", "compact", "compact,delete", "delete,compact"), "delete", None, True
    ),
    "min.insync.replicas": Key(_int, 1, 1, True),
    "unclean.leader.election.enable": Key(_bool, False, None, True),
    "max.message.bytes": Key(_int, 1048588, 0, True),
}

# Kafka spells some topic-level keys differently at broker level.
BROKER_ALIASES: dict[str, str] = {
    "log.segment.bytes": "segment.bytes",
    "log.roll.ms": "segment.ms",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.retention.ms": "retention.ms",
    "log.retention.bytes": "retention.bytes",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.cleanup.policy": "cleanup.policy",
    "message.max.bytes": "max.message.bytes",
}

BROKER_KEYS: dict[str, Key] = {
    **TOPIC_KEYS,
    "num.partitions": Key(_int, 1, 1),
    "default.replication.factor": Key(_int, 1, 1),
    "auto.create.topics.enable": Key(_bool, False),
    "advertised.host": Key(_str, ""),
    "cluster.id": Key(_str, "jepka-reference-cluster"),
    "socket.request.max.bytes": Key(_int, 100 * 1024 * 1024, 1024),
    "connections.max.idle.ms": Key(_int, 600_000, 1),
    "log.retention.check.interval.ms": Key(_int, 300_000, 1),
    "log.flush.scheduler.interval.ms": Key(_int, 1000, 1),
    "log.cleaner.backoff.ms": Key(_int, 15_000, 1),
    "log.flush.start.offset.checkpoint.interval.ms": Key(_int, 60_000, 1),
    "offsets.topic.num.partitions": Key(_int, 50, 1),
    "offsets.topic.replication.factor": Key(_int, 3, 1),
    "transaction.state.log.num.partitions": Key(_int, 50, 1),
    "transaction.state.log.replication.factor": Key(_int, 3, 1),
    "transaction.state.log.min.isr": Key(_int, 2, 1),
    "transaction.max.timeout.ms": Key(_int, 900_000, 1),
    "transactional.id.expiration.ms": Key(_int, 604_800_000, 1),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": Key(_int, 10_000, 1),
    "producer.id.expiration.ms": Key(_int, 86_400_000, 1),
    "group.min.session.timeout.ms": Key(_int, 6000, 0),
    "group.max.session.timeout.ms": Key(_int, 1_800_000, 0),
    "group.initial.rebalance.delay.ms": Key(_int, 3000, 0),
    "group.max.size": Key(_int, 2**31 - 1, 1),
    "offsets.retention.minutes": Key(_int, 10080, 1),
    # A cluster (``--voters``); empty: a single node, no controller quorum.
    "controller.quorum.voters": Key(_str, ""),
    # What a cluster node runs: a broker, a controller (a voter of the quorum), or both.
    "process.roles": Key(_roles, "broker,controller"),
    "controller.quorum.election.timeout.ms": Key(_int, 1000, 1),
    "controller.quorum.fetch.timeout.ms": Key(_int, 2000, 1),
    "controller.quorum.request.timeout.ms": Key(_int, 500, 1),
    "broker.heartbeat.interval.ms": Key(_int, 500, 1),
    "broker.session.timeout.ms": Key(_int, 9000, 1),
    # Not in Kafka: what is left of the session of a broker whose heartbeat
    # connection closed (-1: nothing changes, as in Kafka).
    "broker.session.disconnect.grace.ms": Key(_int, -1, -1),
    "replica.lag.time.max.ms": Key(_int, 30_000, 1),
    "auto.leader.rebalance.enable": Key(_bool, True),
    "leader.imbalance.check.interval.seconds": Key(_int, 300, 1),
    "replica.high.watermark.checkpoint.interval.ms": Key(_int, 5000, 1),
    # Not in Kafka: a seed for the controller's replica placement (-1: random, as Kafka).
    "replica.placement.seed": Key(_int, -1, -1),
}


@dataclass(frozen=True)
class BrokerConfig:
    """The resolved configuration of one broker process."""

    node_id: int
    host: str
    port: int
    data_dir: Path
    values: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        key = BROKER_ALIASES.get(key, key)
        if key in self.values:
            return self.values[key]
        return BROKER_KEYS[key].default

    def topic_defaults(self) -> dict[str, Any]:
        """Broker-level values of every topic-level key: what a topic inherits."""
        return {name: self[name] for name in TOPIC_KEYS}

    @property
    def is_broker(self) -> bool:
        return BROKER_ROLE in self["process.roles"].split(",")

    @property
    def is_controller(self) -> bool:
        return CONTROLLER_ROLE in self["process.roles"].split(",")

    @property
    def advertised_host(self) -> str:
        return self["advertised.host"] or (
            self.host if self.host not in ("", "0.0.0.0") else "127.0.0.1"
        )


def parse_value(
    key: str, text: str, where: str, keys: Mapping[str, Key] = BROKER_KEYS
) -> tuple[str, Any]:
    """Parses one ``key=value``; raises ``ConfigError`` naming the key and ``where``."""
    name = BROKER_ALIASES.get(key.strip(), key.strip())
    spec = keys.get(name)
    if spec is None:
        raise ConfigError(f"{where}: unknown config key {key.strip()!r}")
    try:
        value = spec.parse(text)
    except ValueError as e:
        raise ConfigError(f"{where}: bad value {text.strip()!r} for {name}: {e}") from None
    if spec.minimum is not None and value < spec.minimum:
        raise ConfigError(f"{where}: {name}={value} is below the minimum {spec.minimum}")
    return name, value


def parse_assignments(
    items: Iterable[tuple[str, str]], keys: Mapping[str, Key] = BROKER_KEYS
) -> dict[str, Any]:
    """Parses ``(where, "key=value")`` pairs in order; later ones win."""
    values: dict[str, Any] = {}
    for where, item in items:
        if "=" not in item:
            raise ConfigError(f"{where}: expected key=value, got {item!r}")
        key, text = item.split("=", 1)
        name, value = parse_value(key, text, where, keys)
        values[name] = value
    return values


def read_properties(path: Path) -> list[tuple[str, str]]:
    """The ``key=value`` lines of a properties file, each tagged with its location."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read config file {path}: {e}") from None
    items = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "!")):
            items.append((f"{path}:{number}", stripped))
    return items


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"--listen: expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def topic_config(broker: BrokerConfig, overrides: Mapping[str, str]) -> dict[str, Any]:
    """A topic's effective configuration: broker defaults plus its own overrides."""
    values = broker.topic_defaults()
    values.update(
        parse_assignments(
            ((f"topic config {k}", f"{k}={v}") for k, v in overrides.items()), TOPIC_KEYS
        )
    )
    return values
