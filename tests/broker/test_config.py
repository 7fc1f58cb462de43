"""Broker configuration parsing: Kafka names, aliases, types and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import ConfigError, topic_config
from broker.server_properties import load_config


def test_defaults_overrides_and_aliases(tmp_path: Path) -> None:
    props = tmp_path / "b.properties"
    props.write_text("# comment\n! also a comment\nlog.segment.bytes = 2048\nnum.partitions=3\n")
    config = load_config(
        2, "0.0.0.0:0", tmp_path, props, ["auto.create.topics.enable=true", "num.partitions=4"]
    )
    assert config["segment.bytes"] == config["log.segment.bytes"] == 2048
    assert config["num.partitions"] == 4  # --set wins over the file
    assert config["auto.create.topics.enable"] is True
    assert config["retention.bytes"] == -1 and config["flush.messages"] == 2**63 - 1
    assert config.advertised_host == "127.0.0.1" and config.port == 0


def test_topic_config_inherits_and_validates(tmp_path: Path) -> None:
    config = load_config(1, "127.0.0.1:9092", tmp_path, None, ["retention.ms=1000"])
    effective = topic_config(config, {"cleanup.policy": "compact", "min.insync.replicas": "2"})
    assert effective["retention.ms"] == 1000 and effective["min.insync.replicas"] == 2
    with pytest.raises(ConfigError, match=r"num\.partitions"):
        topic_config(config, {"num.partitions": "3"})  # a broker-only key


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("segment.bytes=big", "bad value 'big' for segment.bytes"),
        ("segment.bytes=1", "below the minimum"),
        ("auto.create.topics.enable=yes", "expected true or false"),
        ("cleanup.policy=shred", "expected one of"),
        ("bogus.key=1", "unknown config key 'bogus.key'"),
        ("no-equals-sign", "expected key=value"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        load_config(1, "127.0.0.1:0", tmp_path, None, [override])
    assert str(e.value).startswith("--set:")


def test_bad_listen_and_file_location(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="HOST:PORT"):
        load_config(1, "localhost", tmp_path, None, [])
    props = tmp_path / "b.properties"
    props.write_text("num.partitions=1\n\nflush.ms=never\n")
    with pytest.raises(ConfigError, match=rf"{props}:3: bad value 'never' for flush.ms"):
        load_config(1, "127.0.0.1:0", tmp_path, props, [])
