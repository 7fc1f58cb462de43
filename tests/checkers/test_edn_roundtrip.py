"""Jepsen users bring EDN histories: the same history checked from Jepsen EDN
and from jepka JSONL gives the same result."""

from __future__ import annotations

import pytest

from checkers import check
from checkers.synth import generate
from history import convert, write_history
from history.faults import inject

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _comparable(result: dict) -> dict:
    stats = {k: v for k, v in result["stats"].items()}
    return {
        "valid": result["valid"],
        "anomalies": result["anomalies"],
        "allowed": result["allowed"],
        "stats": stats,
    }


def test_edn_and_jsonl_give_identical_results(spark, tmp_path) -> None:
    ops = generate(7, 150)
    for i, fault in enumerate(("lost-write", "G1c", "poll-skip", "G1a")):
        ops = inject(ops, fault, i)
    jsonl = tmp_path / "history.jsonl"
    write_history(ops, jsonl)
    edn = tmp_path / "history.edn"
    convert(str(jsonl), str(edn))
    back = tmp_path / "back.jsonl"
    convert(str(edn), str(back))
    assert back.read_text() == jsonl.read_text()

    from_edn = check(str(edn), spark=spark)
    from_jsonl = check(str(jsonl), spark=spark, fmt="jsonl")
    assert from_edn["valid"] is False
    assert {"lost-write", "G1c", "poll-skip", "G1a"} <= set(from_edn["anomalies"])
    assert _comparable(from_edn) == _comparable(from_jsonl)
