"""The `ssh` backend: real hosts over SSH with paramiko (Jepsen's control).

Authenticates with a key file or the SSH agent; runs every line through
`sudo -n sh -c` unless logged in as root; copies files over SFTP (through a
temporary file and `mv` when sudo is needed). Every command and its exit
status go to a per-node log, so a failed run can be traced host by host.
"""

from __future__ import annotations

import os
import shlex
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import paramiko

from control.backends.base import ClusterError, InstalledBroker, Node, Record
from control.remote import Result

CONNECT_ATTEMPTS = 4


@dataclass(frozen=True, slots=True)
class SshConfig:
    user: str = "root"
    port: int = 22
    key_file: str | None = None
    connect_timeout: float = 10.0
    strict_host_keys: bool = False


class SshRemote:
    """One SSH connection to one host, opened on first use."""

    def __init__(self, host: str, config: SshConfig, log_path: str | None = None) -> None:
        self.host = host
        self.config = config
        self.log_path = log_path
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.Lock()

    def _connect(self) -> paramiko.SSHClient:
        """The live connection, (re)connecting with a few retries: a loaded
        host may drop a handshake now and then."""
        with self._lock:
            transport = self._client.get_transport() if self._client else None
            if self._client is not None and (transport is None or not transport.is_active()):
                self._client.close()
                self._client = None
            for attempt in range(CONNECT_ATTEMPTS):
                if self._client is not None:
                    break
                client = paramiko.SSHClient()
                client.load_system_host_keys()
                if not self.config.strict_host_keys:
                    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
                try:
                    client.connect(
                        self.host,
                        port=self.config.port,
                        username=self.config.user,
                        key_filename=self.config.key_file,
                        allow_agent=self.config.key_file is None,
                        look_for_keys=self.config.key_file is None,
                        timeout=self.config.connect_timeout,
                        banner_timeout=self.config.connect_timeout,
                    )
                except paramiko.AuthenticationException:
                    raise
                except (OSError, paramiko.SSHException):
                    client.close()
                    if attempt == CONNECT_ATTEMPTS - 1:
                        raise
                    time.sleep(0.5 * (attempt + 1))
                    continue
                self._client = client
            assert self._client is not None
            return self._client

    @property
    def sudo(self) -> bool:
        return self.config.user != "root"

    def _log(self, line: str, result: Result) -> None:
        if self.log_path:
            os.makedirs(os.path.dirname(self.log_path) or ".", exist_ok=True)
            with open(self.log_path, "a") as f:
                f.write(f"{time.strftime('%H:%M:%S')} [{result.exit}] {line}\n")
                if result.exit != 0 and result.err:
                    f.write("    " + result.err.strip().replace("\n", "\n    ") + "\n")

    def execute(self, line: str, *, timeout: float = 60.0) -> Result:
        wrapped = f"sudo -n sh -c {shlex.quote(line)}" if self.sudo else line
        try:
            _, stdout, stderr = self._connect().exec_command(wrapped, timeout=timeout)
            out = stdout.read().decode(errors="replace")
            err = stderr.read().decode(errors="replace")
            result = Result(stdout.channel.recv_exit_status(), out, err)
        except (OSError, paramiko.SSHException) as e:
            result = Result(255, "", f"ssh to {self.host}: {e}")
        self._log(line, result)
        return result

    def upload(self, local: str, remote: str) -> None:
        target = f"/tmp/jepka-{uuid.uuid4().hex}" if self.sudo else remote
        with self._connect().open_sftp() as sftp:
            sftp.put(local, target)
        if self.sudo:
            self._must(f"mv {shlex.quote(target)} {shlex.quote(remote)}")

    def download(self, remote: str, local: str) -> None:
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        source = remote
        if self.sudo:
            source = f"/tmp/jepka-{uuid.uuid4().hex}"
            self._must(f"cp {shlex.quote(remote)} {source} && chmod a+r {source}")
        with self._connect().open_sftp() as sftp:
            sftp.get(source, local)
        if self.sudo:
            self.execute(f"rm -f {source}")

    def client_address(self) -> str:
        """This machine's address as the host sees it (from `SSH_CLIENT`)."""
        _, stdout, _ = self._connect().exec_command("echo $SSH_CLIENT")
        return stdout.read().decode().split()[0]

    def _must(self, line: str) -> None:
        result = self.execute(line)
        if result.exit != 0:
            raise RuntimeError(
                f"on {self.host}: `{line}` exited {result.exit}: {result.err.strip()}"
            )

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


@dataclass(frozen=True)
class SshBackend:
    """A cluster's nodes as hosts someone else made; `root` is the data
    directory on each host and `log_dir` keeps each host's command log here."""

    hosts: tuple[str, ...]
    config: SshConfig
    root: str
    log_dir: str

    destroy_ends_processes: ClassVar[bool] = False
    installed_broker: ClassVar[InstalledBroker | None] = None

    def __post_init__(self) -> None:
        if not self.hosts:
            raise ClusterError("backend ssh needs hosts")

    def create(self, record: Record) -> dict[str, Any]:
        """The hosts exist already."""
        return {}

    def nodes(self, state: Mapping[str, Any]) -> list[Node]:
        return [
            Node(
                name=f"n{i}",
                address=host,
                remote=SshRemote(host, self.config, os.path.join(self.log_dir, f"n{i}", "ssh.log")),
                root=f"{self.root}/n{i}",
                node_id=i,
            )
            for i, host in enumerate(self.hosts, 1)
        ]

    def client_address(self, state: Mapping[str, Any], nodes: list[Node]) -> str:
        remote = nodes[0].remote
        assert isinstance(remote, SshRemote)
        return remote.client_address()

    def restore(self, state: Mapping[str, Any], nodes: list[Node]) -> list[Node]:
        """Hosts outlive every fault: nothing to bring back."""
        return nodes

    def destroy(self, state: Mapping[str, Any]) -> None:
        """The hosts are not ours to remove."""
