"""The dispatcher's shared contract: Jepsen's exit code for bad arguments."""

import subprocess
import sys


def test_unknown_subcommand_exits_254() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "no-such-command"], capture_output=True, text=True
    )
    assert proc.returncode == 254
    assert "invalid choice" in proc.stderr
    assert "Traceback" not in proc.stderr
