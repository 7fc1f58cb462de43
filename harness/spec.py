"""A test's full configuration: defaults, then a YAML file, then the command line.

``OPTIONS`` is the single table of every setting: its type, default, allowed
values and help. ``jepka test`` builds its flags from it and ``resolve``
merges the three sources and checks every value, naming the file or flag at
fault, so a bad setting stops the run before anything starts. The resolved
:class:`TestSpec` is frozen and is saved whole (with the seed) in the run's
``test.json``; that file alone replays the run.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.bugs import BUGS
from harness.cluster import BACKENDS, DBS, ClusterError, ClusterSpec, Registry
from nemesis.package import KINDS as FAULT_KINDS
from nemesis.package import MODES as NEMESIS_MODES
from nemesis.package import NAMES as NEMESIS_NAMES
from nemesis.plan import FaultPlan, PlanError, load, read_yaml
from workloads.workload import WorkloadOptions

WORKLOADS = ("queue", "txn", "eos", "idempotence", "group")
ACKS = ("all", "1", "0")
ISOLATION = ("read_committed", "read_uncommitted")
SUB_VIA = ("assign", "subscribe")
NEMESES = ("none", *NEMESIS_NAMES)


class SpecError(ValueError):
    """A setting is missing, unknown or out of range; the message names it and where."""


@dataclass(frozen=True, slots=True)
class Option:
    name: str
    kind: Callable[[Any], Any]
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    is_list: bool = False
    #: how a default of None is derived from other settings (shown in help)
    derived: str = ""
    #: other names accepted for it, in files and as flags (Kafka's spellings)
    aliases: tuple[str, ...] = ()

    @property
    def flags(self) -> list[str]:
        """Its command-line spellings, the aliases (Kafka's) first."""
        return ["--" + name.replace("_", "-") for name in (*self.aliases, self.name)]

    @property
    def is_switch(self) -> bool:
        """On or off: a flag and its ``--no-`` form on the command line."""
        return self.kind is _bool


def _bool(x: Any) -> bool:
    if isinstance(x, bool):
        return x
    if isinstance(x, str) and x.lower() in ("true", "yes", "on", "1", "false", "no", "off", "0"):
        return x.lower() in ("true", "yes", "on", "1")
    raise ValueError(f"expected true or false, got {x!r}")


def _setting(x: Any) -> str:
    """A broker setting written ``key=value``."""
    key, eq, value = str(x).partition("=")
    if not eq or not key.strip() or not value.strip():
        raise ValueError(f"expected key=value, got {x!r}")
    return f"{key.strip()}={value.strip()}"


def _acks(x: Any) -> str:
    """Producer acks, with Kafka's spelling ``-1`` for ``all``."""
    text = str(x).strip().lower()
    return "all" if text == "-1" else text


def _fraction(x: Any) -> float:
    """A probability, also written as ``1/32`` as in Jepsen."""
    if isinstance(x, str) and "/" in x:
        num, den = x.split("/", 1)
        return float(num) / float(den)
    return float(x)


OPTIONS: tuple[Option, ...] = (
    Option("workload", str, "queue", "what the clients do", WORKLOADS),
    Option("nemesis", str, ["none"], "faults, comma-separated", NEMESES, is_list=True),
    Option(
        "nemesis_interval",
        float,
        10.0,
        "mean seconds a fault waits before it starts again (with episodes: the longest quiet gap)",
        minimum=0.01,
    ),
    Option(
        "fault_length",
        float,
        None,
        "mean seconds a fault lasts before it is healed",
        minimum=0.01,
        derived="nemesis-interval",
    ),
    Option(
        "nemesis_mode",
        str,
        "alternate",
        "how random faults are scheduled: each on its own clock (alternate), random "
        "subsets per window (rotate), or one at a time with quiet gaps (episodes)",
        NEMESIS_MODES,
    ),
    Option(
        "schedule",
        str,
        "",
        "YAML file of the faults to run, at set times and on set targets, instead of "
        "random ones (a run's faults.yml is one)",
    ),
    Option("time_limit", float, 30.0, "seconds of workload", minimum=0.1),
    Option("final_time_limit", float, 60.0, "max seconds of final polls", minimum=0.1),
    Option("recovery_time", float, 5.0, "seconds to wait after healing", minimum=0),
    Option("rate", float, 100.0, "total client ops per second", minimum=0.01),
    Option("concurrency", int, 5, "client threads", minimum=1, maximum=1024),
    Option("nodes", int, 3, "broker nodes", minimum=1, maximum=64),
    Option(
        "controllers",
        int,
        0,
        "controller-only nodes besides the broker nodes (0: every node is both; "
        "cluster local, db reference)",
        minimum=0,
        maximum=9,
    ),
    Option("cluster", str, "local", "where nodes run", BACKENDS),
    Option("db", str, "reference", "which broker", DBS),
    Option("bug", str, [], "historical broker bugs to switch on", tuple(BUGS), is_list=True),
    Option(
        "broker_config",
        _setting,
        [],
        "broker settings key=value, comma-separated (over jepka's own)",
        is_list=True,
    ),
    Option("acks", _acks, "all", "producer acks (-1 is all)", ACKS),
    Option("idempotence", _bool, True, "idempotent producers"),
    Option("isolation_level", str, "read_committed", "consumer isolation", ISOLATION),
    Option(
        "replication_factor",
        int,
        None,
        "replicas per partition",
        minimum=1,
        maximum=64,
        derived="min(3, nodes); 1 with --bootstrap",
    ),
    Option(
        "min_isr",
        int,
        None,
        "min.insync.replicas",
        minimum=1,
        maximum=64,
        derived="min(2, replication-factor)",
    ),
    Option("key_count", int, 8, "distinct keys (topic-partitions)", minimum=1, maximum=10_000),
    Option(
        "max_writes_per_key",
        int,
        0,
        "writes a key gets before a fresh key replaces it (0: keys never retire)",
        minimum=0,
        maximum=1_000_000,
    ),
    Option("max_txn_length", int, 4, "micro-ops per transaction", minimum=1, maximum=64),
    Option(
        "abort_p", _fraction, 1 / 32, "chance a txn is aborted on purpose", minimum=0, maximum=1
    ),
    Option("sub_via", str, ["assign"], "how consumers pick partitions", SUB_VIA, is_list=True),
    Option(
        "sub_p",
        _fraction,
        1 / 64,
        "chance an op is replaced by a re-(sub/as)sign",
        minimum=0,
        maximum=1,
    ),
    Option("crash_clients", _bool, False, "crash clients now and then"),
    Option("seed", int, 0, "random seed: same seed, same schedule", minimum=0),
    Option("test_count", int, 1, "how many runs", minimum=1, maximum=10_000),
    Option("name", str, "", "test name", derived="workload-nemesis"),
    Option("store", str, "store", "run directory root"),
    Option(
        "bootstrap",
        str,
        "",
        "host:port,... of an existing cluster to test instead of starting one",
        aliases=("bootstrap_server",),
    ),
    Option(
        "use_cluster",
        str,
        "",
        "test on the cluster `jepka cluster up --name NAME` made (healed after, not removed)",
    ),
    Option(
        "client_config",
        str,
        "",
        "librdkafka properties file (key=value lines) for every client: SASL, TLS, timeouts",
    ),
    Option("hosts", str, [], "machines for --cluster ssh, comma-separated", is_list=True),
    Option("ssh_user", str, "", "login on the hosts", derived="the ssh config's, else root"),
    Option("ssh_key", str, "", "private key file", derived="the ssh config's, the agent, ~/.ssh"),
    Option(
        "ssh_port",
        int,
        0,
        "port of the hosts' sshd",
        minimum=0,
        maximum=65535,
        derived="the ssh config's, else 22",
    ),
    Option("ssh_config", str, "~/.ssh/config", "OpenSSH client config file to read"),
    Option("ssh_check_host_keys", _bool, True, "refuse hosts whose key is not in known_hosts"),
    Option("kafka_home", str, "", "Apache Kafka's install directory on each node (--db kafka)"),
    Option(
        "image",
        str,
        "",
        "--cluster docker: a local image following apache/kafka's conventions (KAFKA_* settings)",
    ),
)
BY_NAME = {name: o for o in OPTIONS for name in (o.name, *o.aliases)}
KIND_NAMES: dict[Callable[[Any], Any], str] = {
    int: "an integer",
    float: "a number",
    _bool: "true or false",
    _acks: "an acks setting",
    _fraction: "a number or a fraction like 1/32",
    _setting: "a setting key=value",
}


@dataclass(frozen=True, slots=True)
class TestSpec:
    """The resolved configuration of one test (see ``OPTIONS`` for each field)."""

    workload: str
    nemesis: tuple[str, ...]
    nemesis_interval: float
    fault_length: float
    nemesis_mode: str
    schedule: str
    time_limit: float
    final_time_limit: float
    recovery_time: float
    rate: float
    concurrency: int
    nodes: int
    controllers: int
    cluster: str
    db: str
    bug: tuple[str, ...]
    broker_config: tuple[str, ...]
    acks: str
    idempotence: bool
    isolation_level: str
    replication_factor: int
    min_isr: int
    key_count: int
    max_writes_per_key: int
    max_txn_length: int
    abort_p: float
    sub_via: tuple[str, ...]
    sub_p: float
    crash_clients: bool
    seed: int
    test_count: int
    name: str
    store: str
    bootstrap: str
    use_cluster: str
    client_config: str
    hosts: tuple[str, ...]
    ssh_user: str
    ssh_key: str
    ssh_port: int
    ssh_config: str
    ssh_check_host_keys: bool
    kafka_home: str
    image: str

    @property
    def faults(self) -> tuple[str, ...]:
        """The nemeses other than ``none``."""
        return tuple(n for n in self.nemesis if n != "none")

    @property
    def broker_settings(self) -> dict[str, str]:
        """``broker_config`` as a mapping (a later key wins)."""
        return dict(item.partition("=")[::2] for item in self.broker_config)

    @property
    def test_name(self) -> str:
        return self.name or f"{self.workload}-{'+'.join(self.faults) or 'none'}"

    @property
    def client_properties(self) -> dict[str, str]:
        """The ``client_config`` file's librdkafka properties (none without one)."""
        return read_properties(self.client_config) if self.client_config else {}

    def workload_options(self, namespace: str = "jepka") -> WorkloadOptions:
        """What the workload needs of this spec; ``namespace`` names the
        run's topics, group and transactional ids."""
        own = {"test_name", "namespace", "client_properties"}
        names = {f.name for f in dataclasses.fields(WorkloadOptions)} - own
        return WorkloadOptions(
            test_name=self.test_name,
            namespace=namespace,
            client_properties=self.client_properties,
            **{n: getattr(self, n) for n in names},
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v)
            for f in dataclasses.fields(self)
        }

    def command(self) -> str:
        """The ``jepka test`` line that runs this test again (this seed, once):
        every setting that is not its default, in the order of ``OPTIONS``."""
        parts = ["jepka", "test"]
        for opt in OPTIONS:
            value = getattr(self, opt.name)
            default = opt.default if not isinstance(opt.default, list) else tuple(opt.default)
            if opt.name == "test_count" or value == default:
                continue
            flag = opt.flags[-1]
            if opt.is_switch:
                parts.append(flag if value else "--no-" + flag[2:])
            else:
                parts += [flag, ",".join(map(str, value)) if opt.is_list else str(value)]
        return shlex.join(parts)

    def with_seed(self, seed: int) -> TestSpec:
        return dataclasses.replace(self, seed=seed)


def _coerce(opt: Option, raw: Any, where: str) -> Any:
    what = f"{where}: {opt.name.replace('_', '-')}"
    items: list[Any]
    if opt.is_list:
        items = (
            raw.split(",")
            if isinstance(raw, str)
            else list(raw)
            if isinstance(raw, list)
            else [raw]
        )
        if opt.choices:  # names never hold a comma: `--bug a,b --bug c` is three
            items = [part for item in items for part in str(item).split(",")]
        items = [str(i).strip() for i in items if str(i).strip()]
    else:
        items = [raw]
    out = []
    for item in items:
        try:
            v = opt.kind(item)
        except (TypeError, ValueError, ZeroDivisionError):
            expected = KIND_NAMES.get(opt.kind, "valid")
            raise SpecError(f"{what}: {item!r} is not {expected}") from None
        if opt.choices and v not in opt.choices:
            raise SpecError(f"{what}: {v!r} is not one of {', '.join(opt.choices)}")
        if opt.minimum is not None and v < opt.minimum:
            raise SpecError(f"{what}: {v} is below the minimum {opt.minimum:g}")
        if opt.maximum is not None and v > opt.maximum:
            raise SpecError(f"{what}: {v} is above the maximum {opt.maximum:g}")
        out.append(v)
    return tuple(out) if opt.is_list else out[0]


def _registered(name: str, store: str, bootstrap: str) -> ClusterSpec:
    """The spec of the registered cluster ``name``."""
    if bootstrap:
        raise SpecError("use-cluster and bootstrap-server exclude each other: pick one cluster")
    try:
        data = Registry(store, name).load()
    except ClusterError as e:
        raise SpecError(str(e)) from None
    if data is None:
        raise SpecError(f"use-cluster: no cluster named {name!r} is registered in {store}/.faults")
    return ClusterSpec.from_json(data["spec"])


#: faults that need the node layout of the reference broker's own node image
#: (its fsync ledger, its broker under libfaketime)
LAYOUT_FAULTS = ("lose-unfsynced", "clock", "clock-strobe")


def _check_image(spec: TestSpec) -> None:
    """An image runs on backend docker as the whole broker of each node."""
    if spec.cluster != "docker":
        raise SpecError(f"image {spec.image}: images run with --cluster docker only")
    if spec.db != "reference" or spec.bug:
        raise SpecError(f"image {spec.image} brings its own broker: drop db and bug")
    layout = [n for n in spec.nemesis if n in LAYOUT_FAULTS]
    if layout:
        raise SpecError(
            f"nemesis {','.join(layout)} needs the reference broker's node image; "
            f"image {spec.image} runs its own entrypoint"
        )


def load_schedule(path: str) -> FaultPlan:
    """The fault plan in a schedule file."""
    try:
        return load(path, FAULT_KINDS)
    except PlanError as e:
        raise SpecError(f"schedule: {e}") from None


def _scheduled(path: str, nemesis: tuple[str, ...]) -> tuple[str, ...]:
    """The nemesis names of a schedule file's faults (``none`` for none);
    names given as well must be the same."""
    names = tuple(load_schedule(path).names) or ("none",)
    given = tuple(n for n in nemesis if n != "none")
    if given and set(given) != set(names) - {"none"}:
        raise SpecError(
            f"nemesis {','.join(given)} disagrees with the faults of schedule {path} "
            f"({','.join(names)}); give one or the other"
        )
    return names


def read_properties(path: str | Path) -> dict[str, str]:
    """A Java-style properties file (``key=value`` lines, ``#`` and ``!``
    comments), as Kafka's and librdkafka's tools read their client configs."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}") from None
    out = {}
    for n, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text[0] in "#!":
            continue
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"{path}: line {n}: expected key=value, got {text!r}")
        out[key.strip()] = value.strip()
    return out


def load_config(path: str | Path) -> dict[str, Any]:
    """The settings of a YAML config file (keys with ``-`` or ``_``)."""
    try:
        data = read_yaml(path)
    except PlanError as e:
        raise SpecError(str(e)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping of settings, got {type(data).__name__}")
    return {str(k).replace("-", "_"): v for k, v in data.items()}


def resolve(
    config: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
    config_name: str = "config",
) -> TestSpec:
    """Defaults, then ``config`` (from ``config_name``), then ``overrides``
    (command-line flags; ``None`` values mean "not given")."""
    values = {
        o.name: None if o.default is None else _coerce(o, o.default, "default") for o in OPTIONS
    }
    for source, where in ((config or {}), config_name), ((overrides or {}), "command line"):
        for key, raw in source.items():
            if raw is None:
                continue
            opt = BY_NAME.get(key)
            if opt is None:
                raise SpecError(f"{where}: unknown setting {key.replace('_', '-')!r}")
            values[opt.name] = _coerce(opt, raw, where)
    if values["use_cluster"]:  # the cluster's own settings, whatever the flags say
        registered = _registered(values["use_cluster"], values["store"], values["bootstrap"])
        values.update(
            nodes=registered.broker_count,
            controllers=registered.controllers,
            cluster=registered.backend,
            db=registered.db,
            bug=tuple(registered.bugs),
            hosts=tuple(registered.hosts),
            kafka_home=registered.kafka_home or "",
            image=registered.image or "",
        )
    if values["schedule"]:
        values["nemesis"] = _scheduled(values["schedule"], values["nemesis"])
    if values["fault_length"] is None:
        values["fault_length"] = values["nemesis_interval"]
    if values["replication_factor"] is None:
        values["replication_factor"] = 1 if values["bootstrap"] else min(3, values["nodes"])
    if values["min_isr"] is None:
        values["min_isr"] = min(2, values["replication_factor"])
    spec = TestSpec(**values)
    if spec.min_isr > spec.replication_factor:
        raise SpecError(
            f"min-isr {spec.min_isr} exceeds replication-factor {spec.replication_factor}"
        )
    if spec.max_writes_per_key and spec.workload in ("group", "eos"):
        raise SpecError(
            f"max-writes-per-key: the {spec.workload} workload keeps its keys; "
            "rotate keys with queue, txn or idempotence"
        )
    if spec.db == "kafka" and "lose-unfsynced" in spec.nemesis:
        raise SpecError(
            "nemesis lose-unfsynced needs the reference broker's fsync ledger; with db "
            "kafka it would cut every data file to nothing"
        )
    if spec.controllers and (spec.cluster != "local" or spec.db != "reference" or spec.bootstrap):
        given = "--bootstrap" if spec.bootstrap else f"--cluster {spec.cluster} --db {spec.db}"
        raise SpecError(
            f"--controllers {spec.controllers}: dedicated controller nodes run only on "
            f"--cluster local with --db reference, not with {given}"
        )
    if spec.image:
        _check_image(spec)
    if spec.client_config:  # read now: a bad file stops the run before anything starts
        read_properties(spec.client_config)
    if spec.replication_factor > spec.nodes and not spec.bootstrap:
        raise SpecError(
            f"replication-factor {spec.replication_factor} needs at least that many "
            f"nodes, got {spec.nodes}"
        )
    return spec
