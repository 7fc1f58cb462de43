"""Resolving a test's settings: defaults < YAML file < command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.spec import SpecError, load_config, resolve


def test_file_then_flags_override_defaults(tmp_path: Path) -> None:
    cfg = tmp_path / "t.yaml"
    cfg.write_text("workload: txn\nnemesis: [kill, pause]\nabort-p: 1/16\nrate: 20\n")
    spec = resolve(load_config(cfg), {"rate": "50", "seed": None}, str(cfg))
    assert spec.workload == "txn"
    assert spec.nemesis == ("kill", "pause")
    assert spec.abort_p == 1 / 16
    assert spec.rate == 50.0
    assert spec.seed == 0
    assert spec.test_name == "txn-kill+pause"
    assert spec.to_dict()["nemesis"] == ["kill", "pause"]
    assert spec.fault_length == spec.nemesis_interval == 10.0  # a fault lasts the interval
    assert resolve(None, {"fault_length": "4"}).fault_length == 4.0
    cfg.write_text("fault-length: 2.5\n")
    assert resolve(load_config(cfg), None, str(cfg)).fault_length == 2.5
    with pytest.raises(SpecError, match=r"fault-length: 0\.0 is below the minimum 0\.01"):
        resolve(None, {"fault_length": "0"})


def test_broker_settings_from_file_and_flags(tmp_path: Path) -> None:
    cfg = tmp_path / "t.yaml"
    cfg.write_text("broker-config: [leader.imbalance.check.interval.seconds=3]\n")
    spec = resolve(load_config(cfg), None, str(cfg))
    assert spec.broker_settings == {"leader.imbalance.check.interval.seconds": "3"}
    flags = {"broker_config": "a.b = 1, c=x=y, a.b=2"}
    assert resolve(load_config(cfg), flags).broker_settings == {"a.b": "2", "c": "x=y"}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"rate": "fast"}, "command line: rate: 'fast' is not a number"),
        ({"nemesis": "kill,boom"}, "nemesis: 'boom' is not one of"),
        ({"colour": "red"}, "unknown setting 'colour'"),
        ({"concurrency": 0}, "concurrency: 0 is below the minimum 1"),
        ({"idempotence": "perhaps"}, "is not true or false"),
        ({"abort_p": "1/0"}, "abort-p: '1/0' is not a number or a fraction"),
        ({"min_isr": 3, "replication_factor": 2}, "min-isr 3 exceeds replication-factor 2"),
        ({"replication_factor": 3, "nodes": 1}, "needs at least that many nodes"),
        ({"broker_config": "num.partitions"}, "broker-config: 'num.partitions' is not a setting"),
        ({"broker_config": ["a=1", "=2"]}, "broker-config: '=2' is not a setting key=value"),
        ({"db": "kafka", "nemesis": "kill,lose-unfsynced"}, "lose-unfsynced needs the reference"),
        (
            {"workload": "group", "max_writes_per_key": 64},
            "max-writes-per-key: the group workload keeps its keys",
        ),
        ({"workload": "eos", "max_writes_per_key": 1}, "the eos workload keeps its keys"),
        ({"max_writes_per_key": -1}, "max-writes-per-key: -1 is below the minimum 0"),
        ({"image": "k:1"}, "image k:1: images run with --cluster docker only"),
        ({"image": "k:1", "cluster": "docker", "bug": "no-dedup"}, "brings its own broker"),
        ({"image": "k:1", "cluster": "docker", "nemesis": "kill,clock"}, "nemesis clock needs"),
        (
            {"image": "k:1", "cluster": "docker", "controllers": 1},
            "--controllers 1: dedicated controller nodes run only on --cluster local",
        ),
    ],
)
def test_bad_settings_name_what_and_where(settings: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(")):
        resolve(None, settings)


def test_bad_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("rate: 5\nnemesis: [kill\n")
    with pytest.raises(SpecError, match=r"bad.yaml: line \d+ not valid YAML"):
        load_config(cfg)
    cfg.write_text("- a\n- b\n")
    with pytest.raises(SpecError, match="expected a mapping"):
        load_config(cfg)
    with pytest.raises(SpecError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")


def test_kafkas_spelling_and_a_client_config_file(tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text(
        "# SASL\nsecurity.protocol = SASL_SSL\n! also a comment\n\nsasl.mechanism=PLAIN\n"
    )
    cfg = tmp_path / "t.yaml"
    cfg.write_text(f"bootstrap-server: k1:9092,k2:9092\nclient-config: {props}\n")
    spec = resolve(load_config(cfg), None, str(cfg))
    assert spec.bootstrap == "k1:9092,k2:9092"
    assert spec.client_properties == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}
    options = spec.workload_options("jepka-0badcafe")
    assert options.client_properties == spec.client_properties
    assert options.key_map.topic_partition(3) == ("jepka-0badcafe-t1", 1)


def test_a_bad_client_config_names_the_file_and_line(tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text("acks=all\nsasl.password\n")
    with pytest.raises(SpecError, match=r"client.properties: line 2: expected key=value"):
        resolve(None, {"client_config": str(props)})
    with pytest.raises(SpecError, match="cannot read"):
        resolve(None, {"client_config": str(tmp_path / "missing.properties")})


def test_a_schedule_file_sets_the_nemesis(tmp_path: Path) -> None:
    schedule = tmp_path / "faults.yml"
    schedule.write_text("faults:\n  - {at: 1, fault: pause, target: one, duration: 2}\n")
    spec = resolve(None, {"schedule": str(schedule)})
    assert spec.nemesis == ("pause",) and spec.test_name == "queue-pause"
    assert resolve(None, {"schedule": str(schedule), "nemesis": "pause"}).nemesis == ("pause",)
    assert f"--schedule {schedule}" in spec.command()
    with pytest.raises(SpecError, match="nemesis kill disagrees with the faults of schedule"):
        resolve(None, {"schedule": str(schedule), "nemesis": "kill"})
    schedule.write_text("faults: []\n")
    assert resolve(None, {"schedule": str(schedule)}).faults == ()


def test_a_bad_schedule_stops_the_run_naming_file_and_fault(tmp_path: Path) -> None:
    schedule = tmp_path / "faults.yml"
    schedule.write_text(
        "faults:\n  - {at: 1, fault: pause, target: one}\n  - {at: 2, fault: melt}\n"
    )
    with pytest.raises(SpecError, match=rf"schedule: {schedule}: fault 2: unknown fault 'melt'"):
        resolve(None, {"schedule": str(schedule)})
    with pytest.raises(SpecError, match="cannot read"):
        resolve(None, {"schedule": str(tmp_path / "missing.yml")})


def test_an_image_is_a_setting_of_its_own() -> None:
    spec = resolve(None, {"cluster": "docker", "image": "k:1", "nemesis": "kill,pause"})
    assert spec.to_dict()["image"] == "k:1"
    assert "--image k:1" in spec.command()
