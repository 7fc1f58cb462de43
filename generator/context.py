"""What a generator may know about the world: the time and who is free.

Threads are the integers ``0..concurrency-1`` plus ``"nemesis"``. Each thread
runs one process at a time; client thread ``t`` starts as process ``t``, and
when its process ends (an ``info`` completion) it continues as process
``p + concurrency``, so ``thread = process % concurrency`` always holds and a
process id is never reused (Jepsen's convention).

A context is immutable. Combinators such as ``on_threads`` and ``each_thread``
hand their child a *view* restricted to some threads, so the child's
``some_free_process`` only ever picks a thread it is allowed to use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

NEMESIS = "nemesis"

Thread = int | str
Process = int | str

# restrict() is called for every op with the same few (threads, predicate)
# pairs; remembering the filtered tuples keeps views cheap.
_RESTRICTED: dict[tuple[tuple[Thread, ...], Callable[[Thread], bool]], tuple[Thread, ...]] = {}


class Context:
    """Time (ns since the test started), the threads in view, the free ones,
    and each thread's current process."""

    __slots__ = ("concurrency", "free", "processes", "threads", "time")

    def __init__(
        self,
        time: int,
        threads: tuple[Thread, ...],
        free: frozenset[Thread],
        processes: Mapping[Thread, Process],
        concurrency: int,
    ) -> None:
        self.time = time
        self.threads = threads
        self.free = free
        self.processes = processes
        self.concurrency = concurrency

    @classmethod
    def initial(cls, concurrency: int, nemesis: bool = True) -> Context:
        """All threads free at time 0; client thread t runs process t."""
        threads: tuple[Thread, ...] = tuple(range(concurrency))
        if nemesis:
            threads += (NEMESIS,)
        processes: dict[Thread, Process] = {t: t for t in threads}
        return cls(0, threads, frozenset(threads), processes, concurrency)

    def with_time(self, time: int) -> Context:
        return Context(time, self.threads, self.free, self.processes, self.concurrency)

    def thread_of(self, process: Process) -> Thread:
        if isinstance(process, int):
            return process % self.concurrency
        return process

    def process_of(self, thread: Thread) -> Process:
        return self.processes[thread]

    def some_free_process(self) -> Process | None:
        """The process of the lowest free thread in view (deterministic)."""
        free = self.free
        if not free:
            return None
        for t in self.threads:
            if t in free:
                return self.processes[t]
        return None

    def free_processes(self) -> list[Process]:
        return [self.processes[t] for t in self.threads if t in self.free]

    def all_free(self) -> bool:
        return len(self.free) == len(self.threads)

    def busy(self, thread: Thread) -> Context:
        """This context after ``thread`` was handed an op."""
        return Context(
            self.time, self.threads, self.free - {thread}, self.processes, self.concurrency
        )

    def freed(self, thread: Thread, end_process: bool = False) -> Context:
        """This context after ``thread`` completed; ``end_process`` moves the
        thread on to its next process id."""
        processes = self.processes
        if end_process and isinstance(thread, int):
            processes = dict(processes)
            processes[thread] = int(processes[thread]) + self.concurrency
        return Context(self.time, self.threads, self.free | {thread}, processes, self.concurrency)

    def restrict(self, keep: Callable[[Thread], bool]) -> Context:
        """A view with only the threads for which ``keep`` is true."""
        key = (self.threads, keep)
        threads = _RESTRICTED.get(key)
        if threads is None:
            threads = tuple(t for t in self.threads if keep(t))
            if len(_RESTRICTED) < 4096:
                _RESTRICTED[key] = threads
        return Context(
            self.time, threads, self.free.intersection(threads), self.processes, self.concurrency
        )

    def only(self, thread: Thread) -> Context:
        """A view with a single thread."""
        free = frozenset((thread,)) if thread in self.free else frozenset()
        return Context(self.time, (thread,), free, self.processes, self.concurrency)

    def __repr__(self) -> str:
        free = sorted(map(str, self.free))
        return f"Context(time={self.time}, threads={self.threads}, free={free})"


def is_client_thread(thread: Thread) -> bool:
    return thread != NEMESIS


def is_nemesis_thread(thread: Thread) -> bool:
    return thread == NEMESIS
