"""jepka test: run a workload against a cluster under faults, check it, report.

Every setting of :data:`harness.spec.OPTIONS` is a flag; ``--config FILE``
reads them from YAML first, and flags given on the command line win. While
the test runs, a live display shows the elapsed time, the op rate, ok / fail /
info counts and the active faults. Ctrl-C stops the workload, heals the
cluster and still checks what was recorded. The exit code is Jepsen's: 0
valid, 1 invalid, 2 unknown (worst over ``--test-count`` runs).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from harness.cli import ExitCode, UsageError, describe
from harness.isolated import dump_stacks_on_sigusr1
from harness.spec import OPTIONS, SpecError, TestSpec, load_config, resolve

if TYPE_CHECKING:
    from harness.runner import Origin, RunResult


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "test",
        help="run a workload under faults, then check it",
        description=describe(__doc__),
    )
    parser.add_argument("--config", metavar="FILE", help="YAML file of settings (flags win)")
    for opt in OPTIONS:
        default = opt.default if not isinstance(opt.default, list) else ",".join(opt.default)
        shown = opt.derived or (default if default not in ("", None) else "none")
        help_text = f"{opt.help} (default: {shown})"
        kwargs: dict[str, Any] = {"dest": opt.name, "default": None, "help": help_text}
        if opt.choices and not opt.is_list and opt.kind is str:
            kwargs["choices"] = opt.choices
        elif opt.choices and opt.is_list:
            kwargs["metavar"] = "A,B"
            kwargs["help"] += f"; from: {', '.join(opt.choices)}"
        elif opt.choices:
            kwargs["metavar"] = "|".join(opt.choices)
        if opt.is_switch:
            kwargs["action"] = argparse.BooleanOptionalAction
        if opt.is_list:  # repeated, each comma-separated: `--bug a,b --bug c` is three
            kwargs["action"] = "append"
        parser.add_argument(*opt.flags, **kwargs)
    parser.set_defaults(run=_run)


def spec_from_args(args: argparse.Namespace) -> TestSpec:
    overrides = {o.name: _joined(getattr(args, o.name)) for o in OPTIONS}
    try:
        config = load_config(args.config) if args.config else None
        return resolve(config, overrides, args.config or "config")
    except SpecError as e:
        raise UsageError(str(e)) from None


def _joined(value: Any) -> Any:
    """A repeated list flag as the one comma-separated value it adds up to."""
    return ",".join(value) if isinstance(value, list) else value


def _run(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    dump_stacks_on_sigusr1()
    from harness.cluster import ClusterError
    from harness.runner import RunEndedBadly
    from nemesis.base import NemesisError

    run = run_shown if spec.test_count == 1 else run_apart
    worst = ExitCode.VALID
    for i in range(spec.test_count):
        one = spec.with_seed(spec.seed + i)
        try:
            result = run(one)
        except RunEndedBadly as e:  # this test's verdict is unknown; the series goes on
            print(f"jepka test: {e}", file=sys.stderr)
            code = ExitCode.UNKNOWN
        except (SpecError, ClusterError, NemesisError) as e:
            raise UsageError(str(e)) from None
        else:
            code = ExitCode(result.exit_code)
            if _interrupted(result):
                return int(_worse(worst, code))  # Ctrl-C ends the series
        worst = _worse(worst, code)
    return int(worst)


def _worse(worst: ExitCode, code: ExitCode) -> ExitCode:
    """Jepsen's order of a series' verdicts: invalid, then unknown, then valid."""
    if code == ExitCode.INVALID or (code == ExitCode.UNKNOWN and worst == ExitCode.VALID):
        return code
    return worst


def run_shown(spec: TestSpec, origin: Origin | None = None) -> RunResult:
    """Runs one test under the live display and prints its verdict."""
    from harness.runner import RunState, run_test

    state = RunState()
    display = LiveDisplay(state, spec)
    display.start()
    try:
        result = run_test(spec, state, origin=origin)
    finally:
        display.stop()
    _print_verdict(result.results, result.run_dir.path)
    return result


def run_apart(spec: TestSpec, origin: Origin | None = None, *, shown: bool = True) -> RunResult:
    """One run in a process of its own (``harness.isolated``), under the live
    display or not: of runs made one after another by one command (replay,
    shrink, detect), none meets the threads a stuck librdkafka call left to a
    run before it. Ctrl-C comes back as the run's interrupted outcome."""
    from harness.isolated import NoAnswer, call_isolated
    from harness.runner import RunEndedBadly, run_test

    try:
        if shown:
            return call_isolated(run_shown, spec, origin, says_interrupted=_interrupted)
        return call_isolated(run_test, spec, None, None, origin, says_interrupted=_interrupted)
    except NoAnswer as e:
        raise RunEndedBadly(
            f"{spec.test_name} (seed {spec.seed}): the run ended badly: {e}"
        ) from None


def _interrupted(result: RunResult) -> bool:
    return result.outcome is not None and result.outcome.interrupted


def _print_verdict(results: dict[str, Any], path: Any) -> None:
    from rich.console import Console

    from checkers.result import anomaly_counts

    console = Console(stderr=False, highlight=False)
    valid = results.get("valid")
    colour = {True: "green", False: "red"}.get(valid, "yellow")
    console.print(f"[bold {colour}]valid: {valid}[/]")
    for kind, n in sorted(anomaly_counts(results).items()):
        allowed = " (allowed)" if kind in (results.get("allowed") or ()) else ""
        console.print(f"  {kind}: {n}{allowed}")
    if results.get("error"):
        console.print(f"  checker error: {results['error']}")
    console.print(f"run: {path}")
    report = path / "report.html"
    if report.exists():
        console.print(f"report: {report}")


class LiveDisplay:
    """A rich live panel on stderr, refreshed from the run's state; on a
    non-terminal it prints one line per phase change instead."""

    def __init__(self, state: Any, spec: TestSpec) -> None:
        self.state, self.spec = state, spec
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="jepka-display", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)

    def render(self) -> Any:
        from rich.table import Table

        s = self.state
        elapsed = time.monotonic() - s.started
        c = s.counts
        done = sum(c.completed.values())
        table = Table.grid(padding=(0, 2))
        table.add_row("test", f"{self.spec.test_name} (seed {self.spec.seed})")
        table.add_row("phase", s.phase)
        table.add_row("elapsed", f"{elapsed:6.1f} s")
        table.add_row("ops/s", f"{done / elapsed:8.1f}" if elapsed > 0 else "-")
        table.add_row(
            "ok / fail / info",
            f"[green]{c.completed.get('ok', 0)}[/] / [red]{c.completed.get('fail', 0)}[/] / "
            f"[yellow]{c.completed.get('info', 0)}[/]  (in flight {c.in_flight})",
        )
        faults = ", ".join(f"{f} {v}" for f, v in s.faults.items()) or "none"
        table.add_row("active faults", faults)
        return table

    def _loop(self) -> None:
        from rich.console import Console
        from rich.live import Live

        console = Console(stderr=True)
        if not console.is_terminal:
            last = None
            while not self._stop.wait(0.5):
                if self.state.phase != last:
                    last = self.state.phase
                    print(f"jepka test: {last}", file=sys.stderr, flush=True)
            return
        with Live(self.render(), console=console, refresh_per_second=4, transient=False) as live:
            while not self._stop.wait(0.25):
                live.update(self.render())
            live.update(self.render())
