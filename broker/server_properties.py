"""Apache Kafka's KRaft ``server.properties``, read as Kafka reads it.

``jepka broker --config server.properties`` alone starts a node, as
``kafka-server-start.sh server.properties`` starts Kafka: the file's layout
settings give what the command line would (``node.id``, the broker listener
of ``listeners`` — a controller-only node's controller listener —,
``advertised.listeners``, ``log.dirs``), ``process.roles`` says whether the
node is a broker, a controller or both, every other key of Kafka's own is
applied, and the
settings of Kafka's shipped template that have no counterpart here (thread
counts, socket buffers) are accepted and ignored by name. Anything else is
refused, naming the key and the line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from broker.config import (
    BrokerConfig,
    ConfigError,
    parse_assignments,
    parse_listen,
    read_properties,
)

#: settings that say how a node is laid out; consumed here
LAYOUT_KEYS = frozenset(
    {
        "process.roles",
        "node.id",
        "listeners",
        "advertised.listeners",
        "controller.listener.names",
        "listener.security.protocol.map",
        "inter.broker.listener.name",
        "log.dirs",
        "log.dir",
    }
)
#: settings of Kafka's shipped server.properties with no effect on this broker
IGNORED_KEYS = frozenset(
    {
        "num.network.threads",
        "num.io.threads",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
        "num.recovery.threads.per.data.dir",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
        "group.coordinator.rebalance.protocols",
    }
)
#: KIP-853's dynamic quorum, whose voters come from the log; the voter set here
#: is static
DYNAMIC_QUORUM_KEY = "controller.quorum.bootstrap.servers"
#: Kafka's coarser spellings of the retention time, finest first, with the
#: factor to milliseconds; the finest given wins, as in Kafka
MILLIS = {"log.retention.ms": 1, "log.retention.minutes": 60_000, "log.retention.hours": 3_600_000}


@dataclass
class Layout:
    """What a server.properties says of the node itself."""

    node_id: int | None = None
    listen: str | None = None
    advertised_host: str | None = None
    data_dir: str | None = None
    #: the remaining ``(where, key=value)`` items, for the broker's own keys
    settings: list[tuple[str, str]] = field(default_factory=list)


def read_layout(items: Iterable[tuple[str, str]]) -> Layout:
    """Splits a properties file's ``(where, key=value)`` items into the
    node's layout and its broker settings."""
    raw: dict[str, tuple[str, str]] = {}
    retention: dict[str, tuple[str, str]] = {}
    layout = Layout()
    for where, item in items:
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            layout.settings.append((where, item))  # refused with its location later
        elif key in LAYOUT_KEYS:
            raw[key] = (where, value)
        elif key in IGNORED_KEYS:
            continue
        elif key in MILLIS:
            retention[key] = (where, value)
        elif key == DYNAMIC_QUORUM_KEY:
            raise ConfigError(
                f"{where}: {key} (a dynamic quorum, KIP-853) is not supported: "
                "name the controllers in controller.quorum.voters"
            )
        else:
            layout.settings.append((where, item))
    finest = next((k for k in MILLIS if k in retention), None)
    if finest is not None:
        where, value = retention[finest]
        layout.settings.append((where, f"retention.ms={_millis(finest, value, where)}"))
    controller_only = False
    if "process.roles" in raw:
        where, value = raw["process.roles"]
        layout.settings.append((where, f"process.roles={value}"))
        controller_only = {r.strip() for r in value.split(",")} == {"controller"}
    if "node.id" in raw:
        where, value = raw["node.id"]
        if not value.isdigit():
            raise ConfigError(f"{where}: node.id must be a number, got {value!r}")
        layout.node_id = int(value)
    layout.listen = _broker_listener(raw, controller_only)
    if "advertised.listeners" in raw:
        advertised = _listeners(*raw["advertised.listeners"])
        name = _broker_listener_name(
            raw, _listeners(*raw["listeners"]) if "listeners" in raw else advertised
        )
        if name in advertised:
            layout.advertised_host = advertised[name][0]
    dirs = raw.get("log.dirs") or raw.get("log.dir")
    if dirs is not None:
        layout.data_dir = dirs[1].split(",")[0].strip()
    return layout


def _millis(key: str, value: str, where: str) -> int:
    """The retention in milliseconds; -1 (unlimited) stays -1."""
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{where}: {key} must be a number, got {value!r}") from None
    return -1 if number == -1 else number * MILLIS[key]


def _listeners(where: str, value: str) -> dict[str, tuple[str, int]]:
    """``NAME://host:port,...`` as ``{NAME: (host, port)}``."""
    out = {}
    for part in (p.strip() for p in value.split(",") if p.strip()):
        name, sep, address = part.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ConfigError(f"{where}: expected NAME://HOST:PORT, got {part!r}")
        out[name.upper()] = (host.strip("[]"), int(port))
    return out


def _broker_listener_name(
    raw: dict[str, tuple[str, str]],
    listeners: dict[str, tuple[str, int]],
    controller_only: bool = False,
) -> str:
    """The listener clients and replicas use: ``inter.broker.listener.name``,
    else the first that is not a controller listener; a controller-only node's
    is its (first) controller listener."""
    controllers = [
        n.strip().upper() for n in raw.get("controller.listener.names", ("", ""))[1].split(",")
    ]
    if controller_only:
        return controllers[0]
    if "inter.broker.listener.name" in raw:
        return raw["inter.broker.listener.name"][1].upper()
    names = [n for n in listeners if n not in controllers]
    return names[0] if names else ""


def _broker_listener(raw: dict[str, tuple[str, str]], controller_only: bool) -> str | None:
    if "listeners" not in raw:
        return None
    where, value = raw["listeners"]
    listeners = _listeners(where, value)
    protocols = _listeners_protocols(raw)
    for name in listeners:
        if protocols.get(name, name) != "PLAINTEXT":
            raise ConfigError(
                f"{where}: listener {name} speaks {protocols.get(name, name)}; "
                "this broker speaks PLAINTEXT only"
            )
    name = _broker_listener_name(raw, listeners, controller_only)
    if name not in listeners:
        kind = "controller" if controller_only else "broker"
        raise ConfigError(f"{where}: no {kind} listener among {', '.join(listeners)}")
    host, port = listeners[name]
    return f"{host}:{port}"


def _listeners_protocols(raw: dict[str, tuple[str, str]]) -> dict[str, str]:
    """``listener.security.protocol.map`` as ``{NAME: PROTOCOL}``."""
    if "listener.security.protocol.map" not in raw:
        return {}
    pairs = (
        p.split(":", 1) for p in raw["listener.security.protocol.map"][1].split(",") if ":" in p
    )
    return {name.strip().upper(): protocol.strip().upper() for name, protocol in pairs}


def load_config(
    node_id: int | None,
    listen: str | None,
    data_dir: Path | None,
    config_file: Path | None,
    overrides: Iterable[str],
) -> BrokerConfig:
    """The broker configuration from the command line and a properties file
    (the broker's own, or Kafka's server.properties); the command line wins."""
    layout = read_layout(read_properties(config_file) if config_file else [])
    node_id = layout.node_id if node_id is None else node_id
    listen = listen or layout.listen
    if data_dir is None and layout.data_dir:
        data_dir = Path(layout.data_dir)
    if node_id is None or listen is None or data_dir is None:
        missing = [
            flag
            for flag, value in (
                ("--node-id", node_id),
                ("--listen", listen),
                ("--data-dir", data_dir),
            )
            if value is None
        ]
        raise ConfigError(
            f"{', '.join(missing)} missing: give them, or a --config with node.id, "
            "listeners and log.dirs"
        )
    if node_id < 0:
        raise ConfigError(f"--node-id must be >= 0, got {node_id}")
    host, port = parse_listen(listen)
    items = list(layout.settings)
    if layout.advertised_host:
        items.insert(0, ("advertised.listeners", f"advertised.host={layout.advertised_host}"))
    items += [("--set", item) for item in overrides]
    config = BrokerConfig(node_id, host, port, data_dir, parse_assignments(items))
    if not (config.is_broker and config.is_controller) and not config["controller.quorum.voters"]:
        raise ConfigError(
            f"process.roles={config['process.roles']}: a broker-only or controller-only "
            "node needs the controller quorum (controller.quorum.voters, --voters)"
        )
    return config
