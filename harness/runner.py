"""Runs one test end to end: cluster → clients and nemesis → run → final phase → analyse.

Each phase is a context manager whose teardown is in ``finally``, so whatever
stops a run — an error, a dead broker, Ctrl-C — the cluster is healed and
torn down and what was recorded is still checked (Jepsen's ``core/run!``).
The store is written in phases: ``test.json`` first, ``history.jsonl`` op by
op, then ``history.parquet``, ``nodes/``, ``results.json`` and the report.
Spark starts in the background while the test runs, so the verdict follows
the workload at once.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import generator as gen
from control.db.reference import cluster_settings
from harness.cluster import Cluster, ClusterError, ClusterSpec
from harness.interpreter import Counts, Interpreter, Outcome
from harness.isolated import ends_with_its_call
from harness.protocols import NoopNemesis, ValidatingClient, ValidatingNemesis
from harness.spec import SpecError, TestSpec
from harness.stopping import stop_signals_exit
from harness.store import FAULTS_YML, RunDir
from workloads.generators import track_offsets

log = logging.getLogger(__name__)

#: results.json "valid" → Jepsen exit code
EXIT_CODES = {True: 0, False: 1, "unknown": 2}
# How long a finished run waits, once its cluster is gone and its history
# checked, for client calls still stuck (Interpreter.await_workers), unless
# its process ends with the run (harness.isolated).
STUCK_CALLS_S = 20.0


@dataclass
class RunState:
    """What a live display shows; updated by the run as it goes."""

    phase: str = "starting"
    started: float = field(default_factory=time.monotonic)
    counts: Counts = field(default_factory=Counts)
    faults: dict[str, Any] = field(default_factory=dict)
    run_dir: RunDir | None = None


class RunEndedBadly(ClusterError):
    """A run made in a process of its own ended without its result (it
    crashed or was killed); what it stored is still in its run directory."""


@dataclass
class RunResult:
    run_dir: RunDir
    results: dict[str, Any]
    outcome: Outcome | None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.results.get("valid"), 2)


class FaultTracker:
    """Which faults are active, from nemesis completions: a start op turns its
    fault on, the matching stop op turns it off."""

    def __init__(self, pairs: dict[str, str | None], state: RunState) -> None:
        self.stops = {stop: start for start, stop in pairs.items() if stop}
        self.starts = set(pairs)
        self.state = state

    def observe(self, op: dict[str, Any]) -> None:
        if op.get("process") != "nemesis" or op.get("type") == "invoke":
            return
        f = op.get("f")
        if f in self.starts and self.stops:
            self.state.faults[f] = op.get("value")
        elif f in self.stops:
            self.state.faults.pop(self.stops[f], None)


def cluster_spec(spec: TestSpec) -> ClusterSpec:
    """The cluster a test starts: its nodes, broker and where they run."""
    overrides = {"min.insync.replicas": str(spec.min_isr)}
    if spec.db == "reference" and not spec.image:  # same seed, same replica placement
        overrides["replica.placement.seed"] = str(spec.seed)
    overrides.update(spec.broker_settings)
    return ClusterSpec(
        name=f"jt{os.getpid()}",
        backend=spec.cluster,
        nodes=spec.nodes,
        controllers=spec.controllers,
        db=spec.db,
        bugs=tuple(spec.bug),
        broker_overrides=overrides,
        hosts=tuple(spec.hosts),
        ssh_user=spec.ssh_user or None,
        ssh_key=spec.ssh_key or None,
        ssh_port=spec.ssh_port or None,
        ssh_config=spec.ssh_config,
        ssh_check_host_keys=spec.ssh_check_host_keys,
        kafka_home=spec.kafka_home or None,
        image=spec.image or None,
    )


@contextmanager
def cluster_phase(spec: TestSpec, run_dir: RunDir, state: RunState) -> Iterator[Any]:
    """The cluster (None when ``--bootstrap`` names an existing one), after
    its logs are copied into ``nodes/``: torn down in ``finally`` when the
    test started it, left up (and healed by the nemesis phase) when it is a
    registered cluster the test was told to use."""
    if spec.bootstrap:
        yield None
        return
    state.phase = "starting cluster"
    if spec.use_cluster:
        cluster = Cluster.attach(spec.use_cluster, spec.store)
    else:
        cluster = Cluster.up(cluster_spec(spec), store=spec.store)
    try:
        yield cluster
    finally:
        state.phase = "tearing down"
        try:
            cluster.collect_logs(run_dir.path / "nodes")
        except Exception as e:  # logs are a nicety; teardown must go on
            log.warning("could not collect node logs: %s", e)
        if spec.use_cluster:
            cluster.close()  # it stays up; its connections go
        else:
            cluster.down()


@contextmanager
def nemesis_phase(spec: TestSpec, cluster: Any, test: dict[str, Any]) -> Iterator[Any]:
    """``(nemesis, package)``; the nemesis is torn down and the cluster healed in ``finally``."""
    if not spec.faults:
        yield NoopNemesis(), None
        return
    if cluster is None:
        raise SpecError(
            "nemeses need a cluster jepka starts; drop --bootstrap or use --nemesis none"
        )
    from harness.spec import load_schedule
    from nemesis.package import KINDS, build
    from nemesis.plan import PlanError

    namespace = test.get("namespace", "jepka")
    plan = load_schedule(spec.schedule) if spec.schedule else None
    if plan is not None:
        try:
            plan.check_nodes(KINDS, [n.name for n in cluster.nodes], f"schedule {spec.schedule}")
        except PlanError as e:
            raise SpecError(str(e)) from None
    package = build(
        list(spec.faults),
        seed=spec.seed,
        interval=spec.nemesis_interval,
        length=spec.fault_length,
        mode=spec.nemesis_mode,
        plan=plan,
    )
    key_map = spec.workload_options(namespace).key_map
    with cluster.healing():  # heals on the way out, also on SIGTERM/SIGHUP
        ctx = cluster.nemesis_context(seed=spec.seed, key_map=key_map, group=namespace)
        nemesis = ValidatingNemesis(package.bind(ctx))
        try:  # teardown also closes the context's roles client, even after a failed setup
            nemesis = nemesis.setup(test)
            yield nemesis, package
        finally:
            nemesis.teardown(test)


MIN_FINAL_OP_TIMEOUT_S = 5.0


def build_generator(spec: TestSpec, workload: Any, package: Any) -> gen.Generator:
    """Main phase (workload at ``rate`` under the fault schedule, for
    ``time_limit``), then the heal, the recovery wait, and the final reads.

    The heal comes at the time limit, while the main phase's last client
    ops are still running: ops held up by a fault would otherwise keep that
    fault in force until they time out, seconds of a run spent waiting on
    nothing. The workload's offset tracker sees every event, the
    completions of main-phase ops that end after the time limit too: the
    final reads must read what those acknowledged."""
    clients = gen.stagger(1 / spec.rate, workload.generator, gen.Rand.derive(spec.seed, "stagger"))
    faults = gen.timeline(package.schedule(spec.time_limit)) if package else None
    heal = [(spec.time_limit, dict(o)) for o in package.final_ops()] if package else []
    phases = gen.phases(
        [
            gen.time_limit(spec.time_limit, gen.with_nemesis(faults, clients)),
            gen.on_nemesis(gen.timeline(heal)),
        ],
        gen.log("waiting for recovery"),
        gen.sleep(spec.recovery_time),
        # a third of the final phase per op: a client stuck in librdkafka past
        # its own timeouts must not use up the time the final reads need
        gen.op_timeout(max(MIN_FINAL_OP_TIMEOUT_S, spec.final_time_limit / 3)),
        gen.time_limit(spec.final_time_limit, workload.final_generator),
    )
    return track_offsets(phases, workload.tracker)


def run_test(
    spec: TestSpec,
    state: RunState | None = None,
    on_interpreter: Callable[[Interpreter], None] | None = None,
    origin: Origin | None = None,
) -> RunResult:
    """Runs one test and analyses it; returns the stored run and its results.
    ``origin`` says what the run reproduces (a stored run replayed or
    shrunk); a run of a schedule file comes from that file."""
    from workloads.workload import build as build_workload
    from workloads.workload import unsupported

    if reason := unsupported(spec.workload):
        raise SpecError(reason)
    state = state or RunState()
    run_dir = RunDir.create(spec.store, spec.test_name)
    state.run_dir = run_dir
    test: dict[str, Any] = {
        "name": spec.test_name,
        "spec": spec.to_dict(),
        "seed": spec.seed,
        "command": spec.command(),
        "versions": versions(spec),
        "status": "starting",
    }
    if spec.db == "reference" and not (spec.bootstrap or spec.use_cluster or spec.image):
        # what the reference cluster this run starts is told (its timeouts among them)
        planned = cluster_spec(spec)
        test["broker_settings"] = cluster_settings(planned.broker_count, planned.broker_overrides)
    if origin is None and spec.schedule:
        origin = Origin("schedule", Path(spec.schedule))
    if origin is not None:
        test["origin"] = origin.to_json(run_dir.path)
    run_dir.save_test(test)
    outcome: Outcome | None = None
    interpreter: Interpreter | None = None
    package = None
    with ExitStack() as stack:
        spark = _start_spark(stack)
        # a SIGTERM or SIGHUP from here on tears the cluster down on its way out
        stack.enter_context(stop_signals_exit())
        cluster = stack.enter_context(cluster_phase(spec, run_dir, state))
        bootstrap = spec.bootstrap or cluster.bootstrap
        # on a cluster the test did not start, names of the run's own: no
        # earlier run's records
        fresh = not (spec.bootstrap or spec.use_cluster)
        namespace = "jepka" if fresh else f"jepka-{uuid.uuid4().hex[:8]}"
        workload = build_workload(spec.workload_options(namespace), bootstrap)
        test.update(
            workload.test_data,
            namespace=namespace,
            bootstrap=bootstrap,
            nodes=[n.name for n in cluster.nodes] if cluster else [],
            cluster=cluster.spec.to_json() if cluster else None,
        )
        run_dir.save_test(test)
        state.phase = "creating topics"
        workload.client.setup(test)
        nemesis, package = stack.enter_context(nemesis_phase(spec, cluster, test))
        tracker = FaultTracker(
            {f.start_f: f.stop_f for f in package.faults} if package else {}, state
        )
        writer = stack.enter_context(run_dir.history_writer())

        def journal(op: dict[str, Any]) -> None:
            writer.append(op)
            tracker.observe(op)

        interpreter = Interpreter(
            test,
            build_generator(spec, workload, package),
            client=ValidatingClient(workload.client),
            nemesis=nemesis,
            concurrency=spec.concurrency,
            journal=journal,
            nodes=[n.name for n in cluster.brokers] if cluster else ["external"],
            # the main phase's bound on one op; the final phase sets its own
            op_timeout_s=workload.client.config.longest_op_s,
        )
        # the wall clock at the history's time 0: the report places the
        # brokers' own log lines in the run's seconds
        test["started_at"] = round(time.time() - interpreter.now() / 1e9, 3)
        state.counts = interpreter.counts
        if on_interpreter:
            on_interpreter(interpreter)
        state.phase = "running"
        outcome = interpreter.run()
        test["status"] = "interrupted" if outcome.interrupted else "completed"
        test["ops_without_completion"] = outcome.abandoned
        state.phase = "healing"
    run_dir.save_test(test)
    if package is not None:
        save_faults(run_dir, spec)
    state.phase = "checking"
    results = analyse(run_dir, spark)
    if interpreter is not None:
        wait_s = 0.0 if ends_with_its_call() else STUCK_CALLS_S
        if stuck := interpreter.await_workers(wait_s):
            log.warning("%d client(s) still in a call after the run, left open", len(stuck))
    state.phase = "done"
    return RunResult(run_dir, results, outcome)


@dataclass(frozen=True)
class Origin:
    """Where a run comes from: a schedule file, or the stored run it replays
    or shrinks (``kind`` says which)."""

    kind: str
    path: Path

    def to_json(self, run_dir: Path) -> dict[str, str]:
        """``test.json``'s ``origin``: the path as given and a link relative
        to the run: to the file, or to a run's report."""
        target = self.path / "report.html" if self.path.is_dir() else self.path
        return {
            "kind": self.kind,
            "path": str(self.path),
            "link": os.path.relpath(target.resolve(), run_dir.resolve()),
        }


FAULTS_HEADER = """\
The faults of this run, from its history (seed {seed}): `at` and `duration`
in seconds after the workload's start, `target` as meant, `resolved` as the
nemesis did it. `jepka replay` runs them again on the same nodes;
`jepka test --schedule` takes this file as it is."""


def save_faults(run_dir: RunDir, spec: TestSpec) -> None:
    """Writes ``faults.yml``: the faults the run applied, read from its history."""
    from history import read_ops
    from nemesis.package import KINDS
    from nemesis.plan import applied

    try:
        plan = applied(read_ops(run_dir.history_path, "jsonl"), KINDS, spec.time_limit)
        plan.write(run_dir.path / FAULTS_YML, FAULTS_HEADER.format(seed=spec.seed))
    except Exception as e:  # the history is what counts; this file is derived
        log.warning("faults.yml not written: %s", e)


def versions(spec: TestSpec) -> dict[str, str]:
    """What ran the test: jepka, the Kafka client library, and the broker."""
    import confluent_kafka

    def installed(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "unknown"

    jepka = installed("jepka")
    broker = {"reference": f"jepka reference broker {jepka}", "kafka": "Apache Kafka"}[spec.db]
    if spec.db == "kafka":
        broker += f" ({spec.kafka_home})"
    if spec.bootstrap:
        broker = f"an existing cluster at {spec.bootstrap}"
    return {
        "jepka": jepka,
        "confluent-kafka": installed("confluent-kafka"),
        "librdkafka": confluent_kafka.libversion()[0],
        "broker": broker,
    }


def _start_spark(stack: ExitStack) -> Any:
    """The Spark session, started and warmed up while the run goes on, at
    the lowest share of the CPU until ``stack`` closes."""
    try:
        from checkers import warm_up
        from checkers.spark.session import start_in_background, yielding
    except ImportError:  # the checker is optional for recording-only use
        return None
    stack.enter_context(yielding())
    return start_in_background(then=warm_up)


def analyse(run_dir: RunDir, spark_future: Any = None) -> dict[str, Any]:
    """Checks the stored history, writes ``history.parquet``, ``results.json``
    and the report; a checker crash gives ``valid: unknown`` with the error."""
    try:
        run_dir.write_parquet()
    except Exception as e:
        log.warning("history.parquet not written: %s", e)
    try:
        from checkers import check

        spark = spark_future.result() if spark_future is not None else None
        results = check(str(run_dir.history_path), spark=spark)
    except Exception as e:  # Jepsen's check-safe: a crash is "unknown", not a verdict
        log.exception("checker crashed")
        results = {
            "valid": "unknown",
            "anomalies": {},
            "allowed": [],
            "stats": {},
            "timings": {},
            "error": f"{type(e).__name__}: {e}",
        }
    run_dir.save_results(results)
    try:
        from reports.render import write_report

        write_report(run_dir.path, results)
    except Exception as e:
        log.warning("report not written: %s", e)
    return results
