"""The synthetic Kafka: valid, deterministic histories, and each injected
fault changes the data exactly as intended. The anomalies are found here by
a small reference scan of the data (not by the checker)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkers.synth import FAULTS, generate, write_history
from history import flatten, read_ops
from history.faults import ECHOES
from tests.history.reference_scan import anomalies


@settings(max_examples=20, deadline=None)
@given(
    st.integers(0, 2**32), st.integers(0, 150), st.integers(1, 6), st.integers(1, 10), st.booleans()
)
def test_correct_histories_are_valid_and_clean(seed, n, processes, keys, txn) -> None:
    ops = generate(seed, n, processes=processes, keys=keys, txn=txn)
    assert sum(o.type == "invoke" for o in ops) >= n
    flatten(ops)  # the validator accepts it
    assert anomalies(ops) == set()


@pytest.mark.parametrize("fault", sorted(FAULTS))
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(0, 80))
def test_each_fault_shows_in_the_data(seed, n, fault) -> None:
    ops = generate(seed, n, fault=fault)
    flatten(ops)  # still a well-formed history
    found = anomalies(ops)
    assert fault in found
    assert found <= {fault} | ECHOES.get(fault, frozenset())
    clean = generate(seed, n)
    processes = {o.process for o in clean}
    kept = [replace(o, index=0) for o in ops if o.process in processes]
    assert kept == [replace(o, index=0) for o in clean]  # the valid part is untouched


def test_deterministic_per_seed() -> None:
    assert generate(7, 300) == generate(7, 300)
    assert generate(7, 300) != generate(8, 300)
    assert generate(7, 100, fault="G1a") == generate(7, 100, fault="G1a")


def test_history_has_the_expected_mix() -> None:
    ops = generate(1, 3000)
    kinds = {(o.f, o.type) for o in ops}
    for want in [
        ("txn", "ok"),
        ("send", "fail"),
        ("poll", "info"),
        ("assign", "ok"),
        ("subscribe", "ok"),
        ("crash", "info"),
    ]:
        assert want in kinds, want
    renewed = {o.process for o in ops} - set(range(10))
    assert renewed  # info and crash renew process ids
    mops = [len(o.value) for o in ops if o.type == "invoke" and o.f in ("send", "poll", "txn")]
    assert 1.5 < sum(mops) / len(mops) < 2.5


def test_write_history_streams_each_format(tmp_path: Path) -> None:
    for ext in ("jsonl", "parquet", "edn"):
        path = tmp_path / f"h.{ext}"
        n = write_history(str(path), 5, 200)
        assert list(read_ops(path)) == generate(5, 200)
        assert n == len(generate(5, 200))
