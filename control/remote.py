"""Running commands on nodes: the one place that knows shell quoting.

Every backend reduces to "run this shell line on that node", so faults and DB
adapters build their commands here, as argument lists, and never concatenate
strings themselves (Jepsen's `control` keeps escaping in one place too).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
N = TypeVar("N")


@dataclass(frozen=True, slots=True)
class Result:
    """What one command did on a node."""

    exit: int
    out: str
    err: str


class RemoteError(RuntimeError):
    """A command failed on a node; the message names the node and the command."""

    def __init__(self, node: str, command: str, result: Result) -> None:
        detail = (result.err or result.out).strip().splitlines()
        super().__init__(
            f"on {node}: `{command}` exited {result.exit}" + (f": {detail[-1]}" if detail else "")
        )
        self.node = node
        self.command = command
        self.result = result


def join(argv: Sequence[str]) -> str:
    """One shell-safe line from an argument list."""
    return shlex.join([str(a) for a in argv])


def env_prefix(env: Mapping[str, str]) -> str:
    """`env K=V ...` for a shell line (empty when there is nothing to set)."""
    if not env:
        return ""
    return join(["env", *(f"{k}={v}" for k, v in env.items())]) + " "


FAKETIME_LIBS = "/usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1"


def daemon_line(
    argv: Sequence[str],
    *,
    cwd: str,
    pidfile: str,
    logfile: str,
    env: Mapping[str, str] | None = None,
    faketime_file: str | None = None,
) -> str:
    """A shell line that starts `argv` detached, appending output to `logfile`
    and writing its pid to `pidfile` (Jepsen's start-daemon!): the process
    survives the command that started it, on every backend alike.

    With `faketime_file`, the process runs under libfaketime (when the node
    has it) reading its realtime offset from that file on every call, so a
    clock fault can move the clock of a running process; the monotonic clock
    stays real, as on a machine whose wall clock is stepped.
    """
    pre = ""
    if faketime_file:
        f = shlex.quote(faketime_file)
        pre = (
            f"[ -f {f} ] || echo +0 > {f}; "
            f"jk_lib=$(ls {FAKETIME_LIBS} 2>/dev/null | head -n1); "
            f"export FAKETIME_TIMESTAMP_FILE={f} FAKETIME_NO_CACHE=1 "
            f"FAKETIME_DONT_FAKE_MONOTONIC=1; "
            f'[ -n "$jk_lib" ] && export LD_PRELOAD="$jk_lib"; '
        )
    q = shlex.quote
    return (
        f"mkdir -p {q(cwd)} && cd {q(cwd)} && {{ {pre}"
        f"{env_prefix(env or {})}setsid {join(argv)} >>{q(logfile)} 2>&1 </dev/null & "
        f'jk_p=$!; jk_s=$({_START_TIME}); echo "$jk_p ${{jk_s:-0}}" > {q(pidfile)}; }}'
    )


#: the start time of process ``$jk_p`` in clock ticks since boot: field 22 of
#: /proc/PID/stat, the 20th after the command name (which may hold spaces)
_START_TIME = "sed 's/.*) //' /proc/$jk_p/stat 2>/dev/null | cut -d' ' -f20"


def live_pid_line(pidfile: str) -> str:
    """A shell line setting ``jk_pid`` to the process a pidfile names
    (``PID START-TIME``, as :func:`daemon_line` writes it; 0 for a process
    gone before its start time was read) if that process still runs, else to
    nothing. The start time tells it from a process that took its pid since
    it died: pids wrap around (at 32768 by default), and a signal meant for a
    dead broker must not stop or kill whoever has its pid now. A pidfile of
    a pid alone, from a broker an older jepka started, is taken as it was
    then, so that such a cluster can still be faulted and taken down."""
    p = shlex.quote(pidfile)
    return (
        f"jk_pid=; if [ -s {p} ] && read -r jk_p jk_s < {p}; then "
        f'if [ -z "$jk_s" ]; then kill -0 "$jk_p" 2>/dev/null && jk_pid=$jk_p; '
        f'elif [ "$({_START_TIME})" = "$jk_s" ]; then jk_pid=$jk_p; fi; fi'
    )


def signal_line(pidfile: str, signal: str) -> str:
    """Sends `signal` to the process in `pidfile` if it still runs (see
    :func:`live_pid_line`); succeeds (idempotently) when it does not."""
    return f'{live_pid_line(pidfile)}; if [ -n "$jk_pid" ]; then kill -{signal} "$jk_pid"; fi'


def on_nodes(nodes: Iterable[N], fn: Callable[[N], T]) -> list[T]:
    """Runs `fn` on every node in parallel and returns results in node order;
    the first failure is raised after all have finished."""
    items = list(nodes)
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(items))) as pool:
        return list(pool.map(fn, items))
