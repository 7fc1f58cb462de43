"""The example histories shipped in ``examples/`` read cleanly, agree across
formats, and show what they claim (checked by the reference scan)."""

from __future__ import annotations

from pathlib import Path

from history import read_flat, read_ops
from tests.history.reference_scan import anomalies

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_valid_example_is_clean_in_both_formats() -> None:
    ops = list(read_ops(EXAMPLES / "valid.jsonl"))
    assert anomalies(ops) == set()
    assert list(read_ops(EXAMPLES / "valid.edn")) == ops
    assert read_flat(EXAMPLES / "valid.edn").equals(read_flat(EXAMPLES / "valid.jsonl"))
    assert {o.process for o in ops} >= {"nemesis", 5}  # nemesis ops and a renewed process


def test_anomalies_example_shows_its_anomalies() -> None:
    ops = list(read_ops(EXAMPLES / "anomalies.jsonl"))
    assert anomalies(ops) == {"lost-write", "G1a", "duplicate"}
