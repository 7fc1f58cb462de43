"""One conformance suite for every transport: commands, quoting, copies,
daemons and signals, and iptables chains behave the same on a namespace, a
container and an SSH host (as trio checks every stream with one suite)."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from control.backends import docker as docker_backend
from control.backends.base import Node, Remote
from control.backends.local import NetnsRemote
from control.backends.ssh import SshConfig, SshRemote
from control.db.base import RUNNING, process_state
from control.net import iptables
from control.remote import daemon_line, join, signal_line
from tests.eventually import eventually
from tests.nemesis.probes import netns_available

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(params=["netns", "docker", "ssh", "ssh-sudo"])
def node(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Node]:
    kind = request.param
    if kind == "netns":
        reason = netns_available()
        if reason:
            pytest.skip(reason)
        ns = f"jk-conf-{uuid.uuid4().hex[:6]}"
        subprocess.run(["ip", "netns", "add", ns], check=True)
        try:
            yield Node("n1", "127.0.0.1", NetnsRemote(ns), str(tmp_path / "root"), 1)
        finally:
            subprocess.run(["ip", "netns", "del", ns], check=False)
    elif kind == "docker":
        if not docker_backend.engine_running():
            pytest.skip("the Docker engine is not running (scripts/setup-system.sh starts it)")
        if not docker_backend.image_exists():  # any build will do: only its tools are used
            docker_backend.ensure_image()
        cid = subprocess.run(
            [
                "docker",
                "run",
                "-d",
                "--rm",
                "--init",
                "--cap-add",
                "NET_ADMIN",
                docker_backend.IMAGE,
                "sleep",
                "600",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        try:
            yield Node("n1", "127.0.0.1", docker_backend.DockerRemote(cid), "/data/conf", 1)
        finally:
            subprocess.run(["docker", "rm", "-f", cid], check=False, capture_output=True)
    else:
        hosts, key, _, ssh_config = request.getfixturevalue("ssh_hosts")
        config = SshConfig(key_file=key, config_file=ssh_config)
        if kind == "ssh-sudo":
            user = request.getfixturevalue("ssh_sudo_user")
            config = SshConfig(user=user, key_file=key, config_file=ssh_config)
        remote = SshRemote(hosts[0], config, str(tmp_path / "ssh.log"))
        try:
            yield Node("n1", hosts[0], remote, str(tmp_path / "root"), 1)
        finally:
            remote.close()


def test_exit_codes_and_streams(node: Node) -> None:
    assert isinstance(node.remote, Remote)
    result = node.remote.execute("echo out; echo err >&2; exit 3")
    assert (result.exit, result.out, result.err) == (3, "out\n", "err\n")
    with pytest.raises(RuntimeError, match=r"on n1: .* exited 3"):
        node.run("exit 3")


def test_commands_run_as_root(node: Node) -> None:
    """Faults need root: every transport runs node commands as root, through sudo
    when the login is not root (the login itself is checked to be unprivileged)."""
    assert node.run("id -u").out == "0\n"
    if isinstance(node.remote, SshRemote) and node.remote.sudo:
        assert node.remote.run_as_login("id -u").out.strip() != "0"


def test_quoting_survives_the_transport(node: Node) -> None:
    nasty = "a b'c\"$HOME;`id` \\ *"
    assert node.run(join(["printf", "%s", nasty])).out == nasty


def test_upload_download_round_trip(node: Node, tmp_path: Path) -> None:
    payload = bytes(range(256)) * 64
    src, back = tmp_path / "src.bin", tmp_path / "back" / "copy.bin"
    src.write_bytes(payload)
    node.run(f"mkdir -p {node.root}")
    node.remote.upload(str(src), f"{node.root}/f.bin")
    assert node.run(f"wc -c < {node.root}/f.bin").out.strip() == str(len(payload))
    node.remote.download(f"{node.root}/f.bin", str(back))
    assert back.read_bytes() == payload


def test_daemon_survives_its_command_and_obeys_signals(node: Node) -> None:
    pidfile = f"{node.root}/broker.pid"
    node.run(
        daemon_line(
            ["sleep", "120"], cwd=node.root, pidfile=pidfile, logfile=f"{node.root}/out.log"
        )
    )
    try:
        eventually(partial(process_state, node), 10, what="the daemon's process exists")
        assert process_state(node) in RUNNING
        node.run(signal_line(pidfile, "STOP"))  # signals arrive when the kernel gets to it
        eventually(lambda: process_state(node) == "T", 10, what="the daemon stopped")
        node.run(signal_line(pidfile, "CONT"))
        eventually(lambda: process_state(node) in RUNNING, 10, what="the daemon runs again")
    finally:
        node.run(signal_line(pidfile, "KILL"))
    eventually(lambda: process_state(node) == "", 10, what="the killed daemon is gone")
    node.run(signal_line(pidfile, "KILL"))  # idempotent on a dead process


def test_a_dead_daemons_pid_taken_by_another_process_is_left_alone(node: Node) -> None:
    """Pids wrap around: once a daemon is dead, a process that took its pid
    is neither its state nor a target of its signals. (Start times count
    10 ms ticks, so the two start ticks apart, as a pid's next owner does.)"""
    pidfile, other = f"{node.root}/broker.pid", f"{node.root}/other.pid"
    for path in (pidfile, other):
        node.run(daemon_line(["sleep", "120"], cwd=node.root, pidfile=path, logfile=f"{path}.log"))
        time.sleep(0.05)
    try:
        eventually(partial(process_state, node), 10, what="the daemon's process exists")
        node.run(signal_line(pidfile, "KILL"))
        eventually(lambda: process_state(node) == "", 10, what="the killed daemon is gone")
        # the dead daemon's pidfile, naming the other process's pid
        node.run(f'read -r p s < {pidfile}; read -r q t < {other}; echo "$q $s" > {pidfile}')
        assert process_state(node) == ""
        node.run(signal_line(pidfile, "STOP"))
        assert node.run(f"read -r q t < {other}; ps -o stat= -p $q").out.strip()[:1] in RUNNING
    finally:
        node.run(signal_line(other, "KILL"))


def test_an_older_pidfile_of_a_pid_alone_still_names_its_broker(node: Node) -> None:
    """A cluster an older jepka started keeps working: its pidfile, a pid
    alone, names the live process as before."""
    pidfile = f"{node.root}/broker.pid"
    log = f"{pidfile}.log"
    node.run(daemon_line(["sleep", "120"], cwd=node.root, pidfile=pidfile, logfile=log))
    try:
        node.run(f"read -r p s < {pidfile}; echo $p > {pidfile}")
        assert process_state(node) in RUNNING
        node.run(signal_line(pidfile, "STOP"))
        eventually(lambda: process_state(node) == "T", 10, what="the daemon stopped")
    finally:
        node.run(signal_line(pidfile, "KILL"))
    eventually(lambda: process_state(node) == "", 10, what="the killed daemon is gone")


def test_iptables_chains_come_and_go(node: Node) -> None:
    node.run(iptables.drop_lines(inbound=["198.18.250.7"], outbound=["198.18.250.8"]))
    node.run(iptables.drop_lines(inbound=["198.18.250.9"]))  # chains exist already: fine
    assert iptables.rules(node) == [
        "-A JEPKA-IN -s 198.18.250.7/32 -j DROP",
        "-A JEPKA-IN -s 198.18.250.9/32 -j DROP",
        "-A JEPKA-OUT -d 198.18.250.8/32 -j DROP",
    ]
    node.run(iptables.heal_line())
    assert iptables.rules(node) == []
    node.run(iptables.remove_line())
    node.run(iptables.remove_line())  # idempotent
    hooks = node.run("iptables -w -S INPUT; iptables -w -S OUTPUT").out
    assert "JEPKA" not in hooks
