"""Interpreter throughput against a no-op client (target: at least 20k ops/s).

Runs the real interpreter, worker threads and crash-safe history writer (one
``write`` per op to ``history.jsonl``) with a Jepsen-like client generator:
a seeded mix of sends and polls on the client threads. An "op" is one
invocation plus its completion. Prints the figure and the command.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import generator as g
from harness.interpreter import Interpreter
from harness.protocols import NoopClient, NoopNemesis
from harness.store import RunDir


def bench(ops: int, concurrency: int) -> float:
    gen = g.on_clients(
        g.limit(
            ops,
            g.mix(
                [
                    g.repeat({"f": "send", "value": [["send", 1, 2]]}),
                    g.repeat({"f": "poll", "value": [["poll"]]}),
                ],
                g.Rand(1),
            ),
        )
    )
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDir.create(tmp, "bench")
        with run.history_writer() as w:
            it = Interpreter(
                {},
                gen,
                client=NoopClient(),
                nemesis=NoopNemesis(),
                concurrency=concurrency,
                journal=w.append,
            )
            t0 = time.perf_counter()
            outcome = it.run()
            elapsed = time.perf_counter() - t0
    assert outcome.entries == 2 * ops
    return ops / elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=100_000)
    p.add_argument("--concurrency", type=int, default=10)
    p.add_argument("--repeat", type=int, default=3)
    a, _ = p.parse_known_args()
    rates = sorted(bench(a.ops, a.concurrency) for _ in range(a.repeat))
    print(
        f"interpreter, no-op client, {a.concurrency} threads, {a.ops} ops x {a.repeat}: "
        f"median {rates[len(rates) // 2]:,.0f} ops/s (best {rates[-1]:,.0f})"
    )
    print(
        f"command: .venv/bin/python bench/bench_interpreter.py --ops {a.ops} "
        f"--concurrency {a.concurrency} --repeat {a.repeat}"
    )


if __name__ == "__main__":
    main()
