"""Fixtures for backend tests: sshd daemons inside network namespaces."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from control.backends import docker as docker_backend
from control.backends import local
from tests.eventually import eventually
from tests.nemesis.probes import netns_available

SSHD = "/usr/sbin/sshd"


def wait_for_port(host: str, port: int, timeout: float = 20.0) -> None:
    def connects() -> bool:
        socket.create_connection((host, port), timeout=1).close()
        return True

    eventually(connects, timeout, interval=0.1, retry_on=(OSError,), what=f"{host}:{port} listens")


class SshHosts(NamedTuple):
    hosts: list[str]
    #: the private key every host accepts (root's and the sudo user's)
    key: str
    #: the harness's address as the hosts see it
    gateway: str
    #: an OpenSSH client config whose known_hosts holds every host's key
    config: str


@pytest.fixture(scope="module")
def ssh_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshHosts]:
    """Three namespaces on a bridge, each running sshd with one host key."""
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    if not os.path.exists(SSHD) or not shutil.which("ssh-keygen"):
        pytest.skip("openssh-server is not installed (scripts/setup-system.sh)")
    tmp_path = tmp_path_factory.mktemp("sshd")
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "host")], check=True
    )
    (tmp_path / "authorized_keys").write_text(Path(f"{key}.pub").read_text())
    os.makedirs("/run/sshd", exist_ok=True)
    names = local.create_network(f"ssh-{uuid.uuid4().hex[:8]}", 3)
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(1, 4):
            cfg = tmp_path / f"sshd{i}.conf"
            cfg.write_text(
                f"Port 22\nListenAddress {names.address(i)}\nHostKey {tmp_path}/host\n"
                f"PidFile {tmp_path}/sshd{i}.pid\n"
                f"AuthorizedKeysFile {tmp_path}/authorized_keys .ssh/authorized_keys\n"
                "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                "StrictModes no\nUsePAM no\nSubsystem sftp internal-sftp\n"
            )
            with open(tmp_path / f"sshd{i}.log", "wb") as log:
                argv = ["ip", "netns", "exec", names.netns(i), SSHD, "-D", "-e", "-f", str(cfg)]
                daemons.append(subprocess.Popen(argv, stdout=log, stderr=log))
        for i in range(1, 4):
            wait_for_port(names.address(i), 22)
        hosts = [names.address(i) for i in range(1, 4)]
        host_key = " ".join((tmp_path / "host.pub").read_text().split()[:2])
        (tmp_path / "known_hosts").write_text("".join(f"{h} {host_key}\n" for h in hosts))
        config = tmp_path / "ssh_config"
        config.write_text(f"Host *\n  UserKnownHostsFile {tmp_path}/known_hosts\n")
        yield SshHosts(hosts, str(key), names.gateway, str(config))
    finally:
        for daemon in daemons:
            daemon.terminate()
            daemon.wait(10)
        local.destroy_network(names, 3)


@pytest.fixture(scope="module")
def ssh_sudo_user(ssh_hosts: SshHosts) -> Iterator[str]:
    """A throwaway non-root login with passwordless sudo (the usual cloud-host
    setup), so the backend's sudo path runs for real; removed afterwards."""
    if not shutil.which("sudo") or not shutil.which("useradd"):
        pytest.skip("sudo is not installed (scripts/setup-system.sh)")
    if os.geteuid() != 0:
        pytest.skip("creating a test user needs root")
    user = f"jepka{uuid.uuid4().hex[:8]}"
    sudoers = Path("/etc/sudoers.d") / user
    # '*' (not the locked '!') so sshd without PAM lets the key log in
    subprocess.run(["useradd", "-m", "-s", "/bin/sh", "-p", "*", user], check=True)
    try:
        home = Path(f"~{user}").expanduser()
        (home / ".ssh").mkdir()
        shutil.copy(f"{ssh_hosts.key}.pub", home / ".ssh" / "authorized_keys")
        subprocess.run(["chown", "-R", f"{user}:", str(home / ".ssh")], check=True)
        sudoers.write_text(f"{user} ALL=(ALL) NOPASSWD: ALL\n")
        sudoers.chmod(0o440)
        yield user
    finally:
        sudoers.unlink(missing_ok=True)
        # sshd's session processes for the user may still be exiting
        eventually(
            lambda: subprocess.run(["userdel", "-r", user], capture_output=True).returncode != 8,
            10,
            interval=0.2,
            what=f"test user {user} still has processes",
        )


def docker_unavailable() -> str | None:
    """Why the docker backend cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root for the Docker engine"
    if not docker_backend.engine_running():
        return "the Docker engine is not running (scripts/setup-system.sh starts it)"
    try:
        docker_backend.compose_command()
    except docker_backend.DockerError as e:
        return str(e)
    return None


@pytest.fixture(scope="module")
def docker_engine() -> None:
    """Skips unless the Docker engine (and Compose) can be used."""
    reason = docker_unavailable()
    if reason:
        pytest.skip(reason)
