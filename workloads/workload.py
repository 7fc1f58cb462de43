"""Workload factories: options and a bootstrap address in, the parts of a test out.

A workload is Jepsen's ``{:client :generator :final-generator}``: the client
template the interpreter opens per process, the main-phase client generator
(not yet rate-limited: the runner staggers it), and the final-phase generator
that reads everything back; and the offset tracker that gives those reads
their targets (the runner feeds it every event of the test).
``test_data`` goes into the run's ``test.json``.

* ``queue`` — single sends and polls over many keys (no transactions);
* ``txn`` — transactions of up to ``max_txn_length`` mixed sends and polls
  that also commit the consumer's offsets, with intentional aborts;
* ``idempotence`` — batches of sends from idempotent producers, with polls,
  and no transactions: duplicates or reorders show a broken dedup;
* ``eos`` — a consume-transform-produce copier (see ``workloads.eos``);
* ``group`` — consumer-group churn (see ``workloads.group``): every consumer
  subscribes (and now and then re-subscribes to random topics), commits what
  it polled, and records each commit (``commit``: offsets, member, outcome)
  and each rebalance (``rebalance_log``), the data the group checks need.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from generator import GenLike, Rand, any_, on_clients, repeat, stagger
from workloads import eos
from workloads import group as group_ops
from workloads.client import QueueClient
from workloads.config import ClientConfig
from workloads.generators import (
    AssignNewProcesses,
    OffsetTracker,
    QueueOps,
    final_polls,
)
from workloads.keys import KeyMap, all_keys, run_key_map

SUPPORTED = ("queue", "txn", "idempotence", "group", "eos")
CRASH_INTERVAL_S = 10.0  # mean time between client crashes (--crash-clients)


@dataclass
class Workload:
    name: str
    client: QueueClient
    generator: GenLike
    final_generator: GenLike
    test_data: dict[str, Any]
    #: the final reads' targets; the runner feeds it every event of the test
    tracker: OffsetTracker


@dataclass(frozen=True)
class WorkloadOptions:
    """The options of a test that shape its workload (the harness makes them
    from its spec); the workload knows nothing else of the test."""

    workload: str
    seed: int
    test_name: str
    concurrency: int
    key_count: int
    acks: str
    idempotence: bool
    isolation_level: str
    replication_factor: int
    min_isr: int
    max_txn_length: int
    abort_p: float
    sub_p: float
    sub_via: tuple[str, ...]
    crash_clients: bool
    #: writes a key gets before a fresh key replaces it; 0 for never
    #: (queue, txn and idempotence)
    max_writes_per_key: int = 0
    #: the run's topics are ``<namespace>-tN``, its group and transactional
    #: ids start with it: ``jepka`` on a cluster the test starts, a name of
    #: the run's own on an existing cluster
    namespace: str = "jepka"
    #: librdkafka properties for every client (see ``ClientConfig``)
    client_properties: Mapping[str, str] = field(default_factory=dict)

    @property
    def key_map(self) -> KeyMap:
        return run_key_map(self.namespace)

    @property
    def txn_id_prefix(self) -> str:
        return f"{self.namespace}-{self.test_name}-{self.seed}"


def unsupported(workload: str) -> str | None:
    """Why this version cannot run ``workload``, or None if it can."""
    if workload in SUPPORTED:
        return None
    return f"workload {workload!r} is not available yet; use one of {', '.join(SUPPORTED)}"


def build(spec: WorkloadOptions, bootstrap: str) -> Workload:
    if reason := unsupported(spec.workload):
        raise ValueError(reason)
    if spec.workload == "eos":
        return _build_eos(spec, bootstrap)
    keys = all_keys(spec.key_count)
    txn = spec.workload == "txn"
    idempotent = spec.idempotence or spec.workload == "idempotence"
    config = ClientConfig(
        bootstrap=bootstrap,
        keys=tuple(keys),
        acks="all" if spec.workload == "idempotence" else spec.acks,
        idempotence=idempotent,
        isolation_level=spec.isolation_level,
        transactional=txn,
        replication_factor=spec.replication_factor,
        min_isr=spec.min_isr,
        key_map=spec.key_map,
        group_id=spec.namespace,
        txn_id_prefix=spec.txn_id_prefix,
        properties=spec.client_properties,
    )
    tracker = OffsetTracker()
    if spec.workload == "group":
        main: GenLike = group_ops.generator(keys, spec.seed, spec.sub_p)
    else:
        ops = QueueOps(
            tuple(keys),
            Rand.derive(spec.seed, f"{spec.workload}/ops"),
            max_len=1 if spec.workload == "queue" else spec.max_txn_length,
            txn=txn,
            abort_p=spec.abort_p if txn else 0.0,
            sub_p=spec.sub_p,
            sub_via=spec.sub_via,
            max_writes=spec.max_writes_per_key,
        )
        main = AssignNewProcesses(ops, None, spec.sub_via[0])
    if spec.crash_clients:
        crashes = stagger(CRASH_INTERVAL_S, repeat({"f": "crash"}), Rand.derive(spec.seed, "crash"))
        main = any_(main, crashes)
    return Workload(
        name=spec.workload,
        client=QueueClient(config),
        generator=main,
        final_generator=on_clients(final_polls(keys, tracker)),
        test_data={
            "keys": spec.key_map.key_map(spec.key_count),
            "transactional": txn,
            "idempotence": idempotent,
        },
        tracker=tracker,
    )


def _build_eos(spec: WorkloadOptions, bootstrap: str) -> Workload:
    inputs = all_keys(spec.key_count)
    outputs = [k + len(inputs) for k in inputs]
    config = ClientConfig(
        bootstrap=bootstrap,
        keys=tuple(inputs + outputs),
        acks="all",
        idempotence=True,
        isolation_level="read_committed",
        transactional=True,
        replication_factor=spec.replication_factor,
        min_isr=spec.min_isr,
        key_map=spec.key_map,
        group_id=f"{spec.namespace}-eos-{spec.test_name}-{spec.seed}",
        txn_id_prefix=spec.txn_id_prefix,
        properties=spec.client_properties,
    )
    tracker = OffsetTracker()
    main, final = eos.generators(
        inputs, outputs, spec.concurrency, Rand.derive(spec.seed, "eos/ops"), tracker
    )
    return Workload(
        name="eos",
        client=eos.EosClient(config, inputs, spec.concurrency),
        generator=main,
        final_generator=final,
        test_data={
            "keys": spec.key_map.key_map(len(inputs) + len(outputs)),
            "eos": {"inputs": inputs, "outputs": outputs, "copy": "output = input + n"},
            "transactional": True,
            "idempotence": True,
        },
        tracker=tracker,
    )
