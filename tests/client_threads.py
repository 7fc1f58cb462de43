"""Kafka client threads alive in this process, for the leak checks.

A client never closed keeps its threads reconnecting to brokers long gone,
until the interpreter exits, and then its destruction can hold the exit for
minutes. librdkafka's threads (confluent-kafka) are native and invisible to
``threading``: they are found by name, ``rdk:main``, ``rdk:broker1``... in
``/proc/self/task/*/comm``. kafka-python's are Python threads running code
of its ``kafka`` package.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from dataclasses import dataclass

TASKS = "/proc/self/task"
RDK_PREFIX = "rdk:"


def native_tasks() -> frozenset[str]:
    """The ids of this process's native threads: one directory listing."""
    try:
        return frozenset(os.listdir(TASKS))
    except FileNotFoundError:  # not Linux: native threads cannot be told apart
        return frozenset()


def _name(task: str) -> str:
    try:
        with open(f"{TASKS}/{task}/comm") as f:
            return f.read().strip()
    except OSError:  # it has just ended
        return ""


def _is_kafka_python(thread: threading.Thread) -> bool:
    target = getattr(thread, "_target", None)  # None for Thread subclasses
    module = getattr(target, "__module__", None) or type(thread).__module__
    return module.partition(".")[0] == "kafka"


@dataclass(frozen=True)
class Snapshot:
    """The threads alive at one moment, to tell which ones came after."""

    tasks: frozenset[str]
    threads: frozenset[threading.Thread]  # objects, not idents: idents are reused

    @classmethod
    def take(cls) -> Snapshot:
        return cls(native_tasks(), frozenset(threading.enumerate()))

    def new_client_threads(self) -> list[str]:
        """Names of the client threads started since, and still alive; only
        the new tasks' names are read."""
        rdk = [n for n in map(_name, native_tasks() - self.tasks) if n.startswith(RDK_PREFIX)]
        python = [
            t.name for t in threading.enumerate() if t not in self.threads and _is_kafka_python(t)
        ]
        return sorted(rdk + python)


NOTHING = Snapshot(frozenset(), frozenset())


def client_threads() -> list[str]:
    """Names of every Kafka client thread alive in this process."""
    return NOTHING.new_client_threads()


def left_after(since: Snapshot, grace_s: float) -> list[str]:
    """The client threads started after ``since`` still alive once ``grace_s``
    has passed: a handle being destroyed takes a moment to end its threads."""
    deadline = time.monotonic() + grace_s
    while (left := since.new_client_threads()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def describe(names: list[str]) -> str:
    """``"4 Kafka client threads (rdk:broker1 x2, rdk:main, rdk:bg)"``."""
    counted = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in Counter(names).most_common())
    return f"{len(names)} Kafka client thread{'s' if len(names) > 1 else ''} ({counted})"
