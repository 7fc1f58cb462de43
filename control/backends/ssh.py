"""The `ssh` backend: real hosts over SSH with paramiko (Jepsen's control).

Reads the OpenSSH client config (``~/.ssh/config``) for whatever is not
given, ProxyJump and ProxyCommand included; checks each host's key against
known_hosts unless told not to; authenticates with a key file or the SSH
agent; runs every line through
`sudo -n sh -c` unless logged in as root; copies files over SFTP (through a
temporary file and `mv` when sudo is needed). Every command and its exit
status go to a per-node log, so a failed run can be traced host by host.
"""

from __future__ import annotations

import os
import shlex
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import paramiko

from control.backends.base import ClusterError, InstalledBroker, Node, Record
from control.remote import Result

CONNECT_ATTEMPTS = 4


@dataclass(frozen=True, slots=True)
class SshConfig:
    """How to reach the hosts; what is not given here comes from the OpenSSH
    client config file (``Host`` blocks: HostName, User, Port, IdentityFile,
    UserKnownHostsFile, ProxyJump, ProxyCommand), then root and port 22."""

    user: str | None = None
    port: int | None = None
    key_file: str | None = None
    connect_timeout: float = 10.0
    #: refuse hosts whose key is not in known_hosts (OpenSSH's default); off
    #: accepts any key, as on throwaway test machines
    check_host_keys: bool = True
    config_file: str = "~/.ssh/config"

    def target(self, host: str) -> Target:
        """Where and as whom to connect for ``host``."""
        path = os.path.expanduser(self.config_file)
        try:
            entry = paramiko.SSHConfig.from_path(path).lookup(host) if os.path.exists(path) else {}
        except (OSError, paramiko.SSHException, ValueError) as e:
            raise ClusterError(f"{path}: not a readable ssh config: {e}") from None
        files = entry.get("userknownhostsfile", "")
        return Target(
            hostname=entry.get("hostname", host),
            user=self.user or entry.get("user") or "root",
            port=self.port or int(entry.get("port", 22)),
            key_files=tuple([self.key_file] if self.key_file else entry.get("identityfile", [])),
            known_hosts=tuple(os.path.expanduser(f) for f in files.split()),
            proxy_jump=entry.get("proxyjump") if entry.get("proxyjump", "none") != "none" else None,
            proxy_command=entry.get("proxycommand")
            if entry.get("proxycommand", "none") != "none"
            else None,
        )


@dataclass(frozen=True, slots=True)
class Target:
    """One host as the ssh config resolves it."""

    hostname: str
    user: str
    port: int
    key_files: tuple[str, ...]
    known_hosts: tuple[str, ...]
    proxy_jump: str | None
    proxy_command: str | None


MAX_HOPS = 8


def parse_hop(text: str) -> tuple[str | None, str, int | None]:
    """``[ssh://][user@]host[:port]`` (an IPv6 host in brackets) as
    ``(user, host, port)``."""
    text = text.strip().removeprefix("ssh://")
    user, _, hostport = text.rpartition("@")
    if hostport.startswith("["):
        host, _, rest = hostport[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = hostport.partition(":")
    if not host or (port and not port.isdigit()):
        raise ClusterError(f"ProxyJump {text!r}: expected [user@]host[:port]")
    return user or None, host, int(port) if port else None


class _UnknownHostKey(paramiko.MissingHostKeyPolicy):
    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: Any) -> None:
        raise ClusterError(
            f"{hostname}: its host key is not in known_hosts; add it (ssh-keyscan "
            f"{hostname} >> ~/.ssh/known_hosts) or turn checking off "
            "(--no-ssh-check-host-keys)"
        )


class SshRemote:
    """One SSH connection to one host, opened on first use."""

    def __init__(
        self,
        host: str,
        config: SshConfig,
        log_path: str | None = None,
        via: str | None = None,
        hops: int = 0,
    ) -> None:
        """``via`` (``[user@]host[:port],...``) overrides the config's ProxyJump;
        ``hops`` counts the jump hosts this one is reached through."""
        self.host = host
        self.hops = hops
        self.config = config
        self.target = config.target(host)
        if via is not None:
            self.target = replace(self.target, proxy_jump=via, proxy_command=None)
        self.log_path = log_path
        self._client: paramiko.SSHClient | None = None
        self._jump: SshRemote | None = None
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
                client = self._new_client()
                try:
                    self._open(client)
                except paramiko.BadHostKeyException as e:
                    client.close()
                    raise ClusterError(
                        f"{e.hostname}: its host key is not the one known_hosts holds "
                        "(a reinstalled host, or someone in between); check it, then fix "
                        "known_hosts"
                    ) from None
                except (paramiko.AuthenticationException, ClusterError):
                    client.close()
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

    def _new_client(self) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        client.load_system_host_keys()
        for path in self.target.known_hosts:
            if os.path.exists(path):
                client.load_host_keys(path)
        policy = _UnknownHostKey() if self.config.check_host_keys else paramiko.AutoAddPolicy()
        client.set_missing_host_key_policy(policy)
        return client

    def _open(self, client: paramiko.SSHClient) -> None:
        t = self.target
        keys = [os.path.expanduser(k) for k in t.key_files if os.path.exists(os.path.expanduser(k))]
        client.connect(
            t.hostname,
            port=t.port,
            username=t.user,
            key_filename=keys or None,
            allow_agent=not keys,
            look_for_keys=not keys,
            timeout=self.config.connect_timeout,
            banner_timeout=self.config.connect_timeout,
            sock=self._tunnel(),
        )

    def _tunnel(self) -> Any:
        """A socket to the host through its ProxyJump host (itself resolved
        through the config) or its ProxyCommand; None to connect directly."""
        t = self.target
        if t.proxy_jump:
            if self._jump is None:  # the last hop, reached through the ones before it
                if self.hops >= MAX_HOPS:
                    raise ClusterError(
                        f"{self.host}: ProxyJump goes round in circles (over {MAX_HOPS} hops); "
                        "give the jump host ProxyJump none in the ssh config"
                    )
                *before, last = t.proxy_jump.split(",")
                user, host, port = parse_hop(last)
                hop = replace(self.config, user=user, port=port)
                self._jump = SshRemote(host, hop, via=",".join(before) or None, hops=self.hops + 1)
            transport = self._jump._connect().get_transport()
            assert transport is not None
            return transport.open_channel("direct-tcpip", (t.hostname, t.port), ("127.0.0.1", 0))
        if t.proxy_command:
            return paramiko.ProxyCommand(t.proxy_command)
        return None

    @property
    def sudo(self) -> bool:
        return self.target.user != "root"

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
            result = self.run_as_login(wrapped, timeout)
        except (OSError, paramiko.SSHException) as e:
            result = Result(255, "", f"ssh to {self.host}: {e}")
        self._log(line, result)
        return result

    def run_as_login(self, command: str, timeout: float = 60.0) -> Result:
        """Runs ``command`` as the login user, on a channel of its own, read and
        closed here: the file objects of paramiko's ``exec_command`` close
        their channel from ``__del__``, which a garbage collection can run on
        the transport's own thread while it holds that channel's lock, hanging
        the connection."""
        transport = self._connect().get_transport()
        if transport is None:
            raise paramiko.SSHException("not connected")
        channel = transport.open_session(timeout=timeout)
        try:
            channel.settimeout(timeout)
            channel.exec_command(command)
            channel.shutdown_write()  # no input
            out, err = _drain(channel, timeout)
            return Result(channel.recv_exit_status(), out, err)
        finally:
            channel.close()

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
        """This machine's address as the host sees it: where SSH comes from
        (`SSH_CLIENT`), or, through a jump host or a proxy command (which SSH
        comes from instead), the address this machine sends from to the host."""
        if self.target.proxy_jump or self.target.proxy_command:
            family, _, _, _, address = socket.getaddrinfo(
                self.target.hostname, 9, type=socket.SOCK_DGRAM
            )[0]
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.connect(address)  # a route lookup: nothing is sent
                return str(probe.getsockname()[0])
        return self.run_as_login("echo $SSH_CLIENT").out.split()[0]

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
        if self._jump is not None:
            self._jump.close()


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
        nodes = []
        for i, host in enumerate(self.hosts, 1):
            remote = SshRemote(host, self.config, os.path.join(self.log_dir, f"n{i}", "ssh.log"))
            address = remote.target.hostname  # a config alias resolved: clients connect there
            nodes.append(Node(f"n{i}", address, remote, f"{self.root}/n{i}", i))
        return nodes

    def client_address(self, state: Mapping[str, Any], nodes: list[Node]) -> str:
        remote = nodes[0].remote
        assert isinstance(remote, SshRemote)
        return remote.client_address()

    def restore(self, state: Mapping[str, Any], nodes: list[Node]) -> list[Node]:
        """Hosts outlive every fault: nothing to bring back."""
        return nodes

    def destroy(self, state: Mapping[str, Any]) -> None:
        """The hosts are not ours to remove."""


def _drain(channel: paramiko.Channel, timeout: float) -> tuple[str, str]:
    """A command's stdout and stderr, read together (either may fill the
    channel's window) until it has exited and both are empty."""
    out, err = bytearray(), bytearray()
    deadline = time.monotonic() + timeout
    while True:
        if channel.recv_ready():
            out += channel.recv(1 << 16)
        elif channel.recv_stderr_ready():
            err += channel.recv_stderr(1 << 16)
        elif channel.exit_status_ready():
            return out.decode(errors="replace"), err.decode(errors="replace")
        elif time.monotonic() > deadline:
            raise TimeoutError(f"no answer in {timeout:g} s")
        else:
            time.sleep(0.005)
