"""Resolving hosts through an OpenSSH client config, without connecting."""

from __future__ import annotations

from pathlib import Path

import pytest

from control.backends.base import ClusterError
from control.backends.ssh import SshConfig, SshRemote, parse_hop


def test_a_host_block_fills_in_what_is_not_given(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(
        "Host kafka*\n  HostName %h.internal\n  User ubuntu\n  Port 2222\n"
        "  IdentityFile ~/.ssh/kafka\n  ProxyJump bastion\n"
    )
    target = SshConfig(config_file=str(config)).target("kafka1")
    assert (target.hostname, target.user, target.port) == ("kafka1.internal", "ubuntu", 2222)
    assert target.proxy_jump == "bastion" and target.key_files[0].endswith(".ssh/kafka")
    given = SshConfig(user="root", port=22, config_file=str(config)).target("kafka1")
    assert (given.user, given.port) == ("root", 22)  # flags win
    plain = SshConfig(config_file=str(tmp_path / "none")).target("10.0.0.1")
    assert (plain.hostname, plain.user, plain.port, plain.proxy_jump) == (
        "10.0.0.1",
        "root",
        22,
        None,
    )


@pytest.mark.parametrize(
    ("text", "hop"),
    [
        ("bastion", (None, "bastion", None)),
        ("admin@bastion:2200", ("admin", "bastion", 2200)),
        ("ssh://admin@[2001:db8::1]:2200", ("admin", "2001:db8::1", 2200)),
        ("[2001:db8::1]", (None, "2001:db8::1", None)),
    ],
)
def test_proxy_jump_hops_parse(text: str, hop: tuple) -> None:
    assert parse_hop(text) == hop


def test_a_proxy_jump_that_loops_is_refused_before_connecting(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host *\n  ProxyJump bastion\n")  # the bastion too jumps via itself
    remote = SshRemote("kafka1", SshConfig(config_file=str(config)))
    with pytest.raises(ClusterError, match="ProxyJump goes round in circles"):
        remote.execute("true")
    remote.close()
