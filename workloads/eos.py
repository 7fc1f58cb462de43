"""The ``eos`` workload: a consume-transform-produce copier, exactly once.

As in Kafka's own exactly-once system test, copiers read an input topic and
write every record to an output topic inside transactions that also commit
the consumed offsets. Input key ``k`` is copied to output key ``k + n``
(``n`` input keys), keeping the value, so the output must equal the input as
sets, with no duplicates and in input order per partition.

Each client thread owns the input keys ``k`` with ``k mod concurrency ==
thread``. Its transactional id belongs to the thread, not the process: when
a process ends (an unknown outcome, a crash) the next one on the thread
fences its predecessor on ``init_transactions`` and resumes from the
committed offsets — the textbook way EOS survives a dead copier. Producers
of input records run as single-send transactions on the same clients.

A copy is recorded as a ``txn`` op whose invocation is ``[["poll"]]`` and
whose completion lists the poll and then one ``["send", k + n, [offset,
value]]`` per record copied, so the queue checks (duplicates, G1a, lost
writes...) apply to the output as they do to any send. Copy ops carry
``output_shift: n``, from which the checker's ``eos-lost`` and
``eos-duplicate`` (``checkers.workloads.eos``) pair inputs with outputs.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import OFFSET_STORED, KafkaException, Producer

from generator import (
    PENDING,
    Context,
    Generator,
    OpResult,
    Rand,
    each_thread,
    on_clients,
    phases,
)
from workloads.client import OpDict, QueueClient, completion
from workloads.config import ClientConfig
from workloads.consuming import KeyConsumer
from workloads.generators import AssignNewProcesses, OffsetTracker, final_polls
from workloads.outcomes import Outcome, classify_txn, is_abortable
from workloads.topics import KeyTopics


def owned_keys(inputs: list[int], concurrency: int, process: Any) -> list[int]:
    """The input keys the thread of ``process`` copies."""
    if not isinstance(process, int):
        return []
    return [k for k in inputs if k % concurrency == process % concurrency]


class EosClient(QueueClient):
    """A queue client whose producer is transactional per thread and whose
    consumer resumes from committed offsets; adds the ``copy`` op."""

    def __init__(
        self,
        config: ClientConfig,
        inputs: list[int],
        concurrency: int,
        topics: KeyTopics | None = None,
    ) -> None:
        super().__init__(config, topics=topics)
        self.inputs, self.concurrency = inputs, concurrency

    def open(self, test: Any, node: str) -> EosClient:
        return EosClient(self.config, self.inputs, self.concurrency, self.topics)

    def _connect(self, process: Any) -> None:
        """The thread's transactional producer (fencing any predecessor) and a
        consumer that starts where the thread's last commit left off."""
        thread = process % self.concurrency
        conf = {**self.config.producer_conf(f"copier-{thread}")}
        self.producer = Producer(conf)
        self.producer.init_transactions(self.config.op_timeout_s)
        self.consumer = KeyConsumer(
            self.config.consumer_conf(), self.config.key_map, start=OFFSET_STORED
        )
        self.process = process

    def invoke(self, test: Any, op: OpDict) -> OpDict:
        if self.producer is None:
            try:
                self._connect(op["process"])
            except KafkaException as e:
                return completion(op, op.get("value"), classify_txn(e))
        if op.get("copy"):
            assert self.consumer is not None
            self.consumer.begin_op()
            return self._settle(self._copy(op))
        return super().invoke(test, op)

    def _copy(self, op: OpDict) -> OpDict:
        assert self.producer is not None
        n = len(self.inputs)
        results: list[Any] = []
        cells: list[tuple[int, int, list[Any]]] = []
        failure: Outcome | None = None
        abortable = False
        try:
            self.producer.begin_transaction()
            polled = self._poll(op)
            results.append(["poll", polled])
            for key in sorted(polled):
                for _, value in polled[key]:
                    cells.append((key + n, value, self._produce(["send", key + n, value])))
            self._commit_with_offsets(polled)
        except (KafkaException, BufferError, TimeoutError, ValueError) as e:
            failure, abortable = classify_txn(e), is_abortable(e)
        if failure is None:
            return completion(op, results + _sends(cells), None)
        outcome = self._end_failed(failure, abortable)
        if outcome.type == "fail":
            # Aborted for sure: the retry copies the same values to the
            # same output keys, so recording these sends would name a
            # failed writer for values the retry commits. An aborted
            # output a reader sees still shows, as a duplicate.
            return completion(op, results, outcome)
        return completion(op, results + _sends(cells), outcome)


def _sends(cells: list[tuple[int, int, list[Any]]]) -> list[list[Any]]:
    return [["send", key, [cell[1], value]] for key, value, cell in cells]


class EosOps(Generator):
    """Half input sends (unique values per input key), half copies."""

    __slots__ = ("inputs", "next_values", "rand")

    def __init__(
        self, inputs: tuple[int, ...], rand: Rand, next_values: tuple[int, ...] | None = None
    ) -> None:
        self.inputs, self.rand = inputs, rand
        self.next_values = next_values or (1,) * len(inputs)

    def op(self, test: Any, ctx: Context) -> OpResult:
        process = ctx.some_free_process()
        if process is None:
            return PENDING
        base = {"type": "invoke", "process": process, "time": ctx.time}
        send, rand = self.rand.chance(0.5)
        if not send:
            return {**copy_op(len(self.inputs)), **base}, EosOps(
                self.inputs, rand, self.next_values
            )
        i, rand = rand.below(len(self.inputs))
        values = list(self.next_values)
        o = {**base, "f": "send", "value": [["send", self.inputs[i], values[i]]]}
        values[i] += 1
        return o, EosOps(self.inputs, rand, tuple(values))


def copy_op(shift: int, **more: Any) -> OpDict:
    """The fields of a copy op's invocation (input key ``k`` → ``k + shift``)."""
    return {"f": "txn", "value": [["poll"]], "copy": True, "output_shift": shift, **more}


class Drain(Generator):
    """One thread copies until a copy comes back ok with nothing to copy."""

    __slots__ = ("done", "shift")

    def __init__(self, shift: int, done: bool = False) -> None:
        self.shift, self.done = shift, done

    def op(self, test: Any, ctx: Context) -> OpResult:
        if self.done:
            return None
        process = ctx.some_free_process()
        if process is None:
            return PENDING
        o = {"type": "invoke", "process": process, "time": ctx.time}
        return {**o, **copy_op(self.shift, poll_ms=1000)}, self

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        if event.get("type") == "ok" and event.get("copy"):
            first = (event.get("value") or [[]])[0]
            polled = first[1] if len(first) == 2 and isinstance(first[1], dict) else {}
            if not any(polled.values()):
                return Drain(self.shift, True)
        return self


def generators(
    inputs: list[int], outputs: list[int], concurrency: int, rand: Rand, tracker: OffsetTracker
) -> tuple[Generator, Generator | None]:
    """(main generator, final generator) of the eos workload."""
    main = AssignNewProcesses(
        EosOps(tuple(inputs), rand), lambda p: owned_keys(inputs, concurrency, p), "assign"
    )
    final = phases(
        on_clients(
            each_thread(
                AssignNewProcesses(
                    Drain(len(inputs)), lambda p: owned_keys(inputs, concurrency, p), "assign"
                )
            )
        ),
        on_clients(final_polls(inputs + outputs, tracker)),
    )
    return main, final
