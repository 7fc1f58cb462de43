"""The power-loss plan: each data file back to its last synced size."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nemesis.disk import parse_ledger, truncation_plan

names = st.sampled_from(["a.log", "b/00000.log", "c.index", "sp ace.log"])


def test_parse_ledger_last_entry_wins_and_torn_lines_are_skipped() -> None:
    text = "a.log 10\nb/x.log 5\na.log 30\nsp ace.log 7\na.log 4\n"
    assert parse_ledger(text) == {"a.log": 4, "b/x.log": 5, "sp ace.log": 7}
    assert parse_ledger("a.log 10\na.log 30\nb.lo") == {"a.log": 30}
    assert parse_ledger("x 1\ny 2\n") == {"x": 1, "y": 2}


@given(
    st.dictionaries(names, st.integers(0, 10_000)), st.dictionaries(names, st.integers(0, 10_000))
)
def test_plan_keeps_exactly_the_synced_prefix(
    ledger: dict[str, int], sizes: dict[str, int]
) -> None:
    plan = truncation_plan(ledger, sizes)
    for path, size in sizes.items():
        expected = min(size, ledger.get(path, 0))
        if expected < size:
            assert plan[path] == (size, expected)
        else:
            assert path not in plan


def test_ledger_and_broker_log_are_not_data() -> None:
    plan = truncation_plan({}, {"fsync.ledger": 100, "broker.log": 50, "seg.log": 9})
    assert plan == {"seg.log": (9, 0)}
