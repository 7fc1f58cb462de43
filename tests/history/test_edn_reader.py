"""The fast EDN op reader gives exactly what edn_format gives, and leaves
what it does not know (tags, symbols, chars, comments, bad input) to it."""

from __future__ import annotations

import edn_format
import pytest
from edn_format import Keyword
from hypothesis import given, settings
from hypothesis import strategies as st

from history.edn import _fast_op, _op_map, _Unusual

names = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)
keywords = names.map(Keyword)
scalars = (
    st.integers(-(2**62), 2**62)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.none()
    | st.booleans()
    | keywords
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4).map(tuple)
        | st.lists(inner, max_size=4)
        | st.dictionaries(scalars.filter(lambda v: not isinstance(v, float)), inner, max_size=3)
        | st.frozensets(st.integers(-5, 5) | keywords, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(keywords | st.text(min_size=1, max_size=6), values, max_size=6))
def test_the_fast_reader_agrees_with_edn_format(fields: dict) -> None:
    line = edn_format.dumps(fields)
    expected = _op_map(edn_format.loads(line))
    try:
        got = _fast_op(line)
    except _Unusual:  # left to edn_format, which gives ``expected``
        return
    assert got == expected


def test_a_jepsen_kafka_op_reads_fast() -> None:
    line = (
        "#jepsen.history.Op{:index 7, :time 912, :type :ok, :process 3, :f :txn, "
        ':value [[:send 1 [4 12]] [:poll {0 [[0 1] [1 2]]}]], :error nil, "x-y" 1.5M}'
    )
    assert _fast_op(line) == {
        "index": 7,
        "time": 912,
        "type": "ok",
        "process": 3,
        "f": "txn",
        "value": [["send", 1, [4, 12]], ["poll", {0: [[0, 1], [1, 2]]}]],
        "error": None,
        "x-y": 1.5,
    }


@pytest.mark.parametrize(
    "line",
    [
        '{:index 0 :time #inst "2024-01-01T00:00:00Z"}',
        "{:index 0 :f foo}",
        "{:index 0 :value \\a}",
        "{:index 0} ; a comment",
        '{:index 0 :value "unterminated}',
        "{:index 0 :value [1 2}",
        "{:index 0 :value 1/2}",
        "[:index 0]",
    ],
)
def test_what_it_does_not_know_is_left_to_edn_format(line: str) -> None:
    with pytest.raises(_Unusual):
        _fast_op(line)
