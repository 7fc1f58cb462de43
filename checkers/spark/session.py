"""One SparkSession per Python process, startable early in the background.

Starting the JVM costs seconds, so callers that know a check is coming (the test
runner, the test suite) call :func:`start_in_background` while other work runs;
:func:`get_session` then returns the same session without waiting twice — or a
new one if the JVM died meanwhile (the OOM killer takes the biggest process) or
Spark stopped its context, so one lost JVM does not fail every later check of a
``jepka suite``.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import gc
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyspark
from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
T = TypeVar("T")

LOCAL_MASTER = "local[*]"
# Local runs have few cores; Spark's default of 200 shuffle partitions would mean
# hundreds of tiny tasks per stage.
LOCAL_SHUFFLE_PARTITIONS = 4
RETAINED_JOBS = 300
JVM_EXIT_TIMEOUT_S = 30

# Class-data sharing: the classes a check loads, dumped once by
# ``python -m checkers.spark.cds`` (``make setup``) and mapped by every later
# JVM, which then starts in about half the time. Kept in the environment
# that holds pyspark's jars, since the archive is only valid for that class
# path (the JVM ignores, with a warning, an archive that does not match).
CDS_ARCHIVE = Path(sys.prefix) / "share" / "jepka" / f"spark-{pyspark.__version__}.jsa"
CDS_DUMP_ENV = "JEPKA_SPARK_CDS_DUMP"

_lock = threading.Lock()


def _find_malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, which returns the free memory of every arena
    (threads allocate from arenas of their own) to the system."""
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_malloc_trim = _find_malloc_trim()


# G1 hands heap it no longer needs back to the system after a full collection
# (:func:`release_jvm_heap`), keeping at most this share of it free; the
# parallel collector keeps its high-water mark until the JVM exits, which a
# big check's later phases, all on the Python side, would pay for.
JVM_GC_OPTIONS = ["-XX:+UseG1GC", "-XX:MinHeapFreeRatio=10", "-XX:MaxHeapFreeRatio=30"]


def _java_options() -> str:
    options = list(JVM_GC_OPTIONS)
    dump = os.environ.get(CDS_DUMP_ENV)
    if dump:
        options.append(f"-XX:ArchiveClassesAtExit={dump}")
    elif CDS_ARCHIVE.is_file():
        options.append(f"-XX:SharedArchiveFile={CDS_ARCHIVE}")
    return " ".join(options)


_pending: dict[str, Future[SparkSession]] = {}
_warming_up = threading.local()  # set on a thread while it warms up the session it builds


def _settings(master: str) -> dict[str, str]:
    settings = {
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "true",
        # All case finders run as one job, whose broadcasts wait for task
        # slots behind its shuffles; on a busy machine that exceeds the
        # default 300 s and would fail the check.
        "spark.sql.broadcastTimeout": "3600",
        "spark.driver.memory": os.environ.get("JEPKA_SPARK_DRIVER_MEMORY", "3g"),
        "spark.driver.extraJavaOptions": _java_options(),
        # Even with the UI off, the status store keeps the last 1000 jobs,
        # stages and SQL executions (plan graphs, task metrics); a long-lived
        # session (a suite, the test runner) runs thousands of small jobs.
        # A phase counts only its own jobs (the largest runs about 110).
        "spark.ui.retainedJobs": str(RETAINED_JOBS),
        "spark.ui.retainedStages": str(RETAINED_JOBS),
        "spark.ui.retainedTasks": "1000",
        "spark.sql.ui.retainedExecutions": "20",
    }
    if master.startswith("local"):
        settings.update(
            {
                "spark.sql.shuffle.partitions": str(LOCAL_SHUFFLE_PARTITIONS),
                "spark.default.parallelism": str(LOCAL_SHUFFLE_PARTITIONS),
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.driver.host": "127.0.0.1",
            }
        )
    return settings


def _build(master: str) -> SparkSession:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    # The per-key analyses run in Python workers, which need this
    # interpreter's packages (numpy, pyarrow and jepka's own).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = SparkConf().setMaster(master).setAppName("jepka-check").setAll(_settings(master).items())
    if SparkContext._gateway is None:
        _start_jvm(conf)
    session = SparkSession.builder.config(conf=conf).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if not master.startswith("local"):
        session.sparkContext.addPyFile(str(_code_archive()))
    log.info("spark session up on %s", master)
    return session


def _build_then(master: str, then: Callable[[SparkSession], Any] | None) -> SparkSession:
    session = _build(master)
    if then is not None:
        _warming_up.active = True
        try:
            then(session)
        except Exception:  # the session's first real check will say what is wrong
            log.warning("the Spark session's warm-up failed", exc_info=True)
        finally:
            _warming_up.active = False
    return session


#: the packages Spark's executors run (the checkers import only history)
EXECUTOR_PACKAGES = ("checkers", "history")


@functools.cache
def _code_archive() -> Path:
    """jepka's code the executors need, as a zip Spark ships to each of them
    (a cluster's workers do not have jepka installed); built once per process."""
    root = Path(__file__).resolve().parents[2]
    folder = tempfile.mkdtemp(prefix="jepka-code-")
    atexit.register(shutil.rmtree, folder, True)
    archive = Path(folder) / "jepka.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in EXECUTOR_PACKAGES:
            for path in sorted((root / package).rglob("*.py")):
                zf.write(path, path.relative_to(root))
    return archive


#: what Java and Spark print on every start, which says nothing about a check
STARTUP_NOISE = re.compile(
    r"WARNING: Using incubator modules|Using Spark's default log4j profile"
    r"|Setting default log level to|To adjust logging level use sc.setLogLevel"
    r"|WARN NativeCodeLoader: Unable to load native-hadoop"
)
#: set (``jepka --verbose``) to see the JVM's start-up lines as they come
VERBOSE_ENV = "JEPKA_VERBOSE"


def _start_jvm(conf: SparkConf) -> None:
    """Launches the JVM, with its stderr through a filter that drops
    ``STARTUP_NOISE`` and passes every other line on (all of it with
    ``VERBOSE_ENV``); then its context. Launched inside :func:`yielding`,
    it leads a session of its own, so that its share of the CPU can be set
    apart from this process's; otherwise it shares this process's session
    and share, as the JVM of a check run on its own does."""
    global _jvm, _applied
    quiet = not os.environ.get(VERBOSE_ENV)
    with _share_lock:
        popen_kwargs: dict[str, Any] = {"start_new_session": _yielding}
    if quiet:
        popen_kwargs["stderr"] = subprocess.PIPE
    gateway = launch_gateway(conf, popen_kwargs=popen_kwargs)
    with _share_lock:
        _jvm, _applied = gateway.proc, 0  # no nice value set on it yet
        _apply_share()
    if quiet:
        threading.Thread(
            target=filter_jvm_stderr, args=(gateway.proc.stderr,), name="jvm-stderr", daemon=True
        ).start()
    SparkContext(conf=conf, gateway=gateway)


#: the nice value of the JVM's session while it yields: Linux's lowest share
YIELDING_NICE = 19
#: how long giving the JVM its share back is retried: an unprivileged process
#: may change an autogroup's nice value once per 100 ms in the whole system
SHARE_RETRY_S = 2.0

_jvm: subprocess.Popen[bytes] | None = None  # the last JVM launched
_applied = 0  # the nice value its session has
_yielding = False
_share_lock = threading.Lock()


@contextlib.contextmanager
def yielding() -> Iterator[None]:
    """Inside, the JVM has the lowest share of the CPU there is: one
    launched meanwhile, from the moment its gateway answers (its boot
    before that runs at the full share), or one launched so before. On
    the way out it has its full share again. Not nestable. A run yields
    while it goes on: the start and warm-up of the checker take more than
    one of two cores for seconds, which would slow the brokers and
    clients under test. Linux shares the CPU between sessions
    (autogroups) before it shares a session's between its processes, and
    each of a local cluster's brokers leads a session of its own; the JVM
    leads one too (:func:`_start_jvm`), and that session is given nice
    value 19, whose weight is 15 against the 1024 of every other busy
    session. Where the kernel does not share by session (without
    autogroups, with them turned off, or in a CPU cgroup other than the
    root one, as a container's) this changes nothing."""
    _set_yielding(True)
    try:
        yield
    finally:
        _set_yielding(False)


def _set_yielding(value: bool) -> None:
    global _yielding
    with _share_lock:
        _yielding = value
        _apply_share()


def _apply_share() -> None:
    """Gives the JVM's session the nice value ``_yielding`` asks for; holds
    ``_share_lock``."""
    global _applied
    proc = _jvm
    nice = YIELDING_NICE if _yielding else 0
    if proc is None or proc.poll() is not None or nice == _applied:
        return
    deadline = time.monotonic() + SHARE_RETRY_S
    try:
        if os.getsid(proc.pid) != proc.pid:
            return
        while True:
            try:
                Path(f"/proc/{proc.pid}/autogroup").write_text(str(nice))
                _applied = nice
                return
            except BlockingIOError:  # another change within the last 100 ms
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.11)
    except OSError as e:  # no autogroups, the JVM has just exited, or refused
        level = logging.WARNING if _applied and proc.poll() is None else logging.DEBUG
        log.log(level, "the checker's JVM keeps nice value %d: %s", _applied, e)


def filter_jvm_stderr(stream: Any) -> None:
    """Copies the JVM's stderr lines to ours, but for ``STARTUP_NOISE``."""
    for line in iter(stream.readline, b""):  # drained to the end, so the JVM never blocks
        text = line.decode(errors="replace")
        if not STARTUP_NOISE.search(text):
            with contextlib.suppress(OSError, ValueError):  # our stderr may be closed
                sys.stderr.write(text)
                sys.stderr.flush()


def in_background(fn: Callable[..., T], *args: Any, name: str) -> Future[T]:
    """``fn(*args)`` on a daemon thread; its result or exception arrives
    through the future."""
    done: Future[T] = Future()

    def run() -> None:
        try:
            done.set_result(fn(*args))
        except BaseException as e:  # handed to whoever waits on the future
            done.set_exception(e)

    threading.Thread(target=run, name=name, daemon=True).start()
    return done


def start_in_background(
    master: str | None = None, then: Callable[[SparkSession], Any] | None = None
) -> Future[SparkSession]:
    """Starts building the session for ``master`` on a thread; idempotent while
    the session lives, and builds a new one once its JVM is gone. ``then``
    runs on a session this call starts building, before the future resolves
    (a warm-up); a session built or being built already is returned as it is.
    A warm-up may not ask for a session (a check retrying on a new one
    would): the session it would get is the one waiting for it to end."""
    if getattr(_warming_up, "active", False):
        raise RuntimeError("a Spark session's warm-up asked for a session")
    master = master or LOCAL_MASTER
    with _lock:
        fut = _pending.get(master)
        dead = fut is not None and fut.done() and fut.exception() is None
        if dead and not is_alive(fut.result()):  # type: ignore[union-attr]
            log.warning("the Spark context for %s has stopped; starting a new session", master)
            _forget()
            fut = None
        if fut is None:
            fut = in_background(_build_then, master, then, name="spark-start")
            _pending[master] = fut
    return fut


def get_session(master: str | None = None) -> SparkSession:
    """The shared session for ``master`` (``local[*]`` by default)."""
    return start_in_background(master).result()


def is_alive(session: SparkSession) -> bool:
    """Whether the session's context still runs jobs: Spark stops it, in a
    JVM that lives on, when one of its own threads dies."""
    try:
        return not session.sparkContext._jsc.sc().isStopped()  # type: ignore[union-attr]
    except Exception:  # py4j cannot reach the JVM any more
        return False


def _forget() -> None:
    """Drops every session (they share the one JVM) and pyspark's singletons that
    point at the JVM, so the next build launches a new one; a JVM still running
    its stopped context is ended (it exits when its stdin closes). Holds
    ``_lock``."""
    _pending.clear()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.poll() is None:
        proc.stdin.close()
        try:
            proc.wait(JVM_EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
    SparkContext._active_spark_context = None
    SparkContext._gateway = None
    SparkContext._jvm = None


def release_jvm_objects() -> None:
    """Frees the JVM objects Python no longer uses. py4j proxies sit in
    reference cycles (a proxy caches the methods called on it, each pointing
    back), so only Python's cycle collector frees them, and only then does the
    JVM drop what they stand for: a check's datasets with their query plans,
    which after a few checks hold over a gigabyte of a long-lived process's
    heap (a suite, the test runner) until the collector happens to run."""
    gc.collect()


def release_unused_memory() -> None:
    """Hands memory Arrow's and C's allocators keep for reuse back to the
    system, so a big check's earlier phases do not add to its peak."""
    pa.default_memory_pool().release_unused()
    if _malloc_trim is not None:
        _malloc_trim(0)


def release_jvm_heap(spark: SparkSession) -> None:
    """Runs a full collection in the JVM, which then shrinks its heap to what
    is live (:data:`JVM_GC_OPTIONS`): after a big check's Spark jobs, the
    gigabytes their shuffles and caches took go back to the system before
    the driver decodes their results and builds the dependency graph."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jvm.System.gc()


def stop_session() -> None:
    """Stops every session this process started (the JVM goes with the last)."""
    with _lock:
        futures = list(_pending.values())
        _pending.clear()
    for fut in futures:
        if fut.done() and fut.exception() is None:
            fut.result().stop()


SMALL_ROWS = 300_000
COMPRESS_CACHE_ROWS = 10_000_000
# Above this, four shuffle partitions mean sorts of ~10M rows per task, which
# spill; more, smaller tasks keep each in memory (AQE merges the small ones).
BIG_ROWS = 20_000_000
BIG_SHUFFLE_PARTITIONS = 16


def tune_for_size(spark: SparkSession, rows: int | None) -> None:
    """Small local histories run several times faster in one partition, without
    adaptive re-planning or generated code (compiling each stage costs more
    than running it); big ones need all three, and more shuffle partitions."""
    if not spark.sparkContext.master.startswith("local"):
        return
    small = rows is not None and rows < SMALL_ROWS
    big = rows is not None and rows >= BIG_ROWS
    partitions = 1 if small else BIG_SHUFFLE_PARTITIONS if big else LOCAL_SHUFFLE_PARTITIONS
    settings = {
        "spark.sql.shuffle.partitions": str(partitions),
        "spark.sql.codegen.wholeStage": str(not small).lower(),
        "spark.sql.codegen.factoryMode": "NO_CODEGEN" if small else "FALLBACK",
        "spark.sql.adaptive.enabled": str(not small).lower(),
        # Compressing cached frames costs a third of a mid-size check; only
        # the biggest histories need the memory it saves.
        "spark.sql.inMemoryColumnarStorage.compressed": str(
            rows is None or rows >= COMPRESS_CACHE_ROWS
        ).lower(),
    }
    for key, value in settings.items():
        spark.conf.set(key, value)
