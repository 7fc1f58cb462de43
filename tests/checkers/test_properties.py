"""Property tests against the simulated correct Kafka (``checkers.synth``):
its histories are valid; each injected fault is reported as its own kind, on
its own keys, with nothing else there but the anomalies it implies.

Several faults go into one history (each on fresh keys and processes), so a
handful of Spark checks cover every fault kind.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers import check
from checkers.synth import generate
from history import flatten
from history.faults import ECHOES, FAULTS, _keys, inject
from tests.checkers.helpers import kinds_at

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SETTINGS = settings(
    max_examples=2,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@SETTINGS
@given(seed=st.integers(0, 2**31), txn=st.booleans())
def test_correct_kafka_is_valid(spark, seed: int, txn: bool) -> None:
    result = check(flatten(generate(seed, 300, txn=txn)), spark=spark)
    failing = set(result["stats"]["anomaly_counts"]) - set(result["allowed"])
    assert result["valid"] is True, {k: result["anomalies"][k][:2] for k in failing}


@SETTINGS
@given(seed=st.integers(0, 2**31), order=st.permutations(sorted(FAULTS)))
def test_each_injected_fault_is_reported_as_its_kind(spark, seed: int, order) -> None:
    ops = generate(seed, 200)
    seen = {k for o in ops for k in _keys(o)}
    where: dict[str, set[int]] = {}
    for i, fault in enumerate(order):
        ops = inject(ops, fault, seed + i)
        now = {k for o in ops for k in _keys(o)}
        where[fault], seen = now - seen, now
    result = check(flatten(ops), spark=spark)
    assert result["valid"] is False
    for fault, keys in where.items():
        found = kinds_at(result, keys)
        assert fault in found, (fault, found)
        # Anything else there is implied by the fault, or an allowed cycle that
        # runs through it (e.g. a G0 detouring through concurrent ops).
        others = found - {fault} - ECHOES.get(fault, frozenset()) - set(result["allowed"])
        assert not others, (fault, found)
