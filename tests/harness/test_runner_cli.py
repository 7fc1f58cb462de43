"""`jepka test` arguments, config files and the live display (no cluster)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from harness.cli import build_parser
from harness.cli.test import LiveDisplay, spec_from_args
from harness.runner import RunState
from harness.spec import resolve


def parse(*argv: str):  # type: ignore[no-untyped-def]
    return spec_from_args(build_parser().parse_args(["test", *argv]))


def test_flags_and_config_file_merge(tmp_path: Path) -> None:
    cfg = tmp_path / "t.yaml"
    cfg.write_text("workload: eos\nrate: 7\nnemesis: kill\n")
    spec = parse(
        *("--config", str(cfg), "--rate", "9"),
        *("--bug", "early-ack,no-dedup", "--bug", "read-above-hw"),
    )
    assert (spec.workload, spec.rate, spec.nemesis) == ("eos", 9.0, ("kill",))
    assert spec.bug == ("early-ack", "no-dedup", "read-above-hw")


def test_every_list_flag_adds_up_when_repeated() -> None:
    spec = parse(
        *("--broker-config", "a.b=1,c.d=2", "--broker-config", "e.f=3"),
        *("--nemesis", "kill", "--nemesis", "pause,partition"),
    )
    assert spec.broker_config == ("a.b=1", "c.d=2", "e.f=3")
    assert spec.nemesis == ("kill", "pause", "partition")


def test_switches_and_kafkas_spellings() -> None:
    assert parse("--no-idempotence", "--crash-clients").idempotence is False
    assert parse("--crash-clients").crash_clients is True
    assert parse().idempotence is True
    assert parse("--acks", "-1").acks == "all"
    assert parse("--acks", "1").acks == "1"


def test_help_lists_the_bugs_and_shows_each_default_once() -> None:
    from broker.bugs import BUGS

    text = " ".join(_help("test").split())
    unwrapped = "".join(text.split())  # argparse may wrap a name at its hyphen
    assert all(name in unwrapped for name in BUGS)
    assert "test name (default: workload-nemesis) --store" in text
    assert "--idempotence, --no-idempotence" in text
    for command in ("check", "convert", "report", "serve", "suite", "cluster", "test"):
        assert "``" not in _help(command), command


def _help(command: str) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        build_parser().parse_args([command, "--help"])
    return out.getvalue()


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return run_jepka("test", *argv)


def test_bad_input_is_one_line_and_exit_254(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rate: [1\n")
    for argv, message in [
        (["--rate", "fast"], "rate: 'fast' is not a number"),
        (["--nemesis", "kill,meteor"], "nemesis: 'meteor' is not one of"),
        (["--config", str(bad)], "not valid YAML"),
        (["--workload", "nope"], "invalid choice"),
        (["--bug", "early-ack,meteor"], "bug: 'meteor' is not one of early-ack,"),
        (["--acks", "2"], "acks: '2' is not one of all, 1, 0"),
        (["--idempotence", "false"], "unrecognized arguments: false"),
    ]:
        proc = run_cli(*argv)
        assert proc.returncode == 254, proc.stderr
        assert message in proc.stderr and "Traceback" not in proc.stderr


def test_live_display_shows_counts_and_faults() -> None:
    state = RunState(phase="running")
    state.counts.completed.update(ok=7, fail=2, info=1)
    state.faults["start-partition"] = "majority"
    console = Console(width=120, record=True)
    console.print(LiveDisplay(state, resolve(None, {"seed": 4})).render())
    text = console.export_text()
    assert "queue-none (seed 4)" in text and "running" in text
    assert "7 / 2 / 1" in text and "start-partition majority" in text


def test_ssh_settings_reach_the_backend() -> None:
    from harness.cluster import make_backend
    from harness.runner import cluster_spec

    spec = parse(
        *("--cluster", "ssh", "--hosts", "k1,k2,k3", "--ssh-user", "ubuntu"),
        *("--ssh-port", "2222", "--ssh-config", "/etc/jepka/ssh_config"),
        "--no-ssh-check-host-keys",
    )
    config = make_backend(cluster_spec(spec).validate(), Path(".")).config  # type: ignore[attr-defined]
    assert (config.user, config.port, config.check_host_keys) == ("ubuntu", 2222, False)
    assert config.config_file == "/etc/jepka/ssh_config"
    defaults = cluster_spec(parse("--cluster", "ssh", "--hosts", "k1"))
    assert (defaults.ssh_user, defaults.ssh_port, defaults.ssh_check_host_keys) == (
        None,
        None,
        True,
    )


def test_a_series_runs_each_seed_apart_and_ctrl_c_ends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--test-count`` runs each test in a process of its own and exits with the
    worst verdict; a test whose process died counts as unknown, and a test
    cut short by Ctrl-C is the series' last."""
    from harness.cli import main
    from harness.cli import test as cli_test
    from harness.interpreter import Outcome
    from harness.runner import RunEndedBadly, RunResult
    from harness.store import RunDir

    verdicts = {1: True, 3: None, 4: True}
    seeds: list[int] = []

    def run_apart(spec, origin=None):  # type: ignore[no-untyped-def]
        seeds.append(spec.seed)
        if spec.seed == 2:
            raise RunEndedBadly("queue (seed 2): the run ended badly")
        outcome = Outcome(1, interrupted=spec.seed == 4, abandoned=0)
        return RunResult(RunDir(tmp_path), {"valid": verdicts[spec.seed]}, outcome)

    monkeypatch.setattr(cli_test, "run_apart", run_apart)
    assert main(["test", "--seed", "1", "--test-count", "5"]) == 2
    assert seeds == [1, 2, 3, 4]
    assert "seed 2" in capsys.readouterr().err
    verdicts[4] = False  # an invalid test cut short still counts
    assert main(["test", "--seed", "1", "--test-count", "5"]) == 1


def test_a_subcommand_named_imports_its_module_alone() -> None:
    """`jepka broker` starts without the imports of the analysis and
    cluster commands; a word that names no subcommand still gets every
    subcommand listed in the error."""
    probe = (
        "import sys; from harness.cli import COMMAND_MODULES, build_parser; "
        "build_parser('broker'); "
        "print([m for m in (*COMMAND_MODULES, 'pandas', 'docker') if m in sys.modules])"
    )
    alone = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert alone.stdout.strip() == "['harness.cli.broker']", alone.stderr
    unknown = run_jepka("brokr")
    assert unknown.returncode == 254 and "invalid choice: 'brokr'" in unknown.stderr
    assert "'test'" in unknown.stderr and "'broker'" in unknown.stderr


def run_jepka(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *argv], capture_output=True, text=True, timeout=120
    )
