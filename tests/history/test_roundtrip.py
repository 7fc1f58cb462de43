"""Round trips JSONL ↔ EDN ↔ Parquet are lossless for everything the op model
carries: generated client histories plus nemesis ops and arbitrary extra fields."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers.synth import FAULTS, generate
from history import Op, convert, read_flat, read_ops, write_history

NAMES = st.from_regex(r"[a-z][a-z0-9]{0,6}(_[a-z0-9]{1,4}){0,2}", fullmatch=True).filter(
    lambda n: n not in {"index", "time", "type", "process", "f", "value", "rebalance_log"}
)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def histories(draw: st.DrawFn) -> list[Op]:
    ops = generate(
        draw(st.integers(0, 2**32)),
        draw(st.integers(0, 40)),
        processes=draw(st.integers(1, 5)),
        keys=draw(st.integers(1, 6)),
        txn=draw(st.booleans()),
        fault=draw(st.none() | st.sampled_from(sorted(FAULTS))),
    )
    out: list[Op] = []
    for op in ops:  # decorate some ops with extra fields
        extra = dict(op.extra)
        if draw(st.integers(0, 4)) == 0:
            extra.update(draw(st.dictionaries(NAMES | st.just("error"), JSON, max_size=2)))
        out.append(replace(op, extra=extra))
    for _ in range(draw(st.integers(0, 2))):  # nemesis pairs with arbitrary values
        at = draw(st.integers(0, len(out)))
        if at and out[at - 1].process == "nemesis" and out[at - 1].type == "invoke":
            at -= 1  # never inside another nemesis pair
        f = draw(st.sampled_from(["start-partition", "kill", "stop_pause"]))
        out[at:at] = [
            Op(0, 0, "invoke", "nemesis", f, draw(JSON)),
            Op(0, 0, "info", "nemesis", f, draw(JSON), {"node": draw(TEXT)}),
        ]
    return [replace(op, index=i) for i, op in enumerate(out)]


def _through(ops: list[Op], chain: list[str], tmp: Path) -> list[Op]:
    src = tmp / f"0.{chain[0]}"
    write_history(ops, src)
    for i, ext in enumerate(chain[1:], 1):
        dst = tmp / f"{i}.{ext}"
        convert(str(src), str(dst))
        src = dst
    return list(read_ops(src))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.permutations(["jsonl", "edn", "parquet"]))
def test_round_trips_are_lossless(ops: list[Op], order: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        assert _through(ops, [*order, order[0]], Path(tmp)) == ops


@settings(max_examples=8, deadline=None)
@given(histories())
def test_every_format_gives_the_same_table(ops: list[Op]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tables = []
        for ext in ("jsonl", "edn", "parquet"):
            path = Path(tmp) / f"h.{ext}"
            write_history(ops, path)
            tables.append(read_flat(path))
        assert tables[0].equals(tables[1]) and tables[0].equals(tables[2])


def test_jepsen_shapes_read_from_edn(tmp_path: Path) -> None:
    """Jepsen's own spelling: no :index, keywords, sets, nil, kebab-case keys."""
    path = tmp_path / "history.edn"
    path.write_text(
        "#jepsen.history.Op{:type :invoke, :f :send, :value [[:send 5 12]], :time 3, :process 0}\n"
        "{:type :invoke, :f :start-partition, :value nil, :time 4, :process :nemesis}\n"
        "{:type :ok, :f :send, :value [[:send 5 [0 12]]], :time 7, :process 0}\n"
        '{:type :info, :f :start-partition, :value {"n1" #{"n3" "n2"}}, :time 8, '
        ":process :nemesis}\n"
        "{:type :invoke, :f :subscribe, :value [5], :time 9, :process 1}\n"
        "{:type :ok, :f :subscribe, :value [5], :time 10, :process 1, "
        ":rebalance-log [{:type :assigned, :keys [5]}], :end-process? true}\n"
        "{:type :invoke, :f :poll, :value [[:poll]], :time 11, :process 1}\n"
        "{:type :ok, :f :poll, :value [[:poll {5 [[0 12]]}]], :time 12, :process 1, "
        ':error [:network "timed out"]}\n'
    )
    ops = list(read_ops(path))
    assert [o.index for o in ops] == list(range(8))
    assert ops[3] == Op(3, 8, "info", "nemesis", "start-partition", {"n1": ["n2", "n3"]})
    assert ops[5].extra == {
        "rebalance_log": [{"type": "assigned", "keys": [5]}],
        "end_process?": True,
    }
    assert ops[7].value == [["poll", {5: [[0, 12]]}]]
    assert ops[7].extra == {"error": ["network", "timed out"]}
    table = read_flat(path)
    assert table.filter(table["index"].to_numpy() == 5)["rebalance_keys"].to_pylist() == [[5]]
