"""Every malformed input gives a HistoryError at the right line, and through
the CLI exit 254 with one ``path:line:`` line and no traceback."""

# ruff: noqa: E501  (one malformed case per line reads best as a table)
from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.cli import main
from history import HistoryError, check_parquet, read_flat
from history.parquet import write_parquet

INV = '{"index": 0, "time": 1, "type": "invoke", "process": 1, "f": "send", "value": [["send", 1, 2]]}'
OK = '{"index": 1, "time": 2, "type": "ok", "process": 1, "f": "send", "value": [["send", 1, [0, 2]]]}'


def op(index: int, op_type: str, f: str = "send", value: str = "null", process: str = "1") -> str:
    return (
        f'{{"index": {index}, "time": {index}, "type": "{op_type}", "process": {process}, '
        f'"f": "{f}", "value": {value}}}'
    )


JSONL_CASES = {
    "malformed JSON": ([INV, '{"index": 1,', OK], 2, "malformed JSON"),
    "not an object": ([INV, "[1, 2]", OK], 2, "expected a JSON object"),
    "missing field": ([INV, '{"index": 1, "type": "ok", "process": 1, "f": "send"}'], 2, "missing field 'time'"),
    "ill-typed time": ([INV, OK.replace('"time": 2', '"time": "2"')], 2, "field 'time' must be an integer"),
    "bool index": ([INV.replace('"index": 0', '"index": true')], 1, "field 'index' must be an integer"),
    "unknown type": ([INV, OK.replace('"ok"', '"done"')], 2, "unknown op type 'done'"),
    "numeric process text": ([INV.replace('"process": 1', '"process": "1"')], 1, "field 'process'"),
    "empty f": ([INV.replace('"f": "send"', '"f": ""')], 1, "field 'f'"),
    "orphan completion": ([INV, OK, op(2, "ok")], 3, "without an outstanding invocation"),
    "double invocation": ([INV, op(1, "invoke")], 2, "while its invocation at line 1"),
    "f differs": ([INV, op(1, "ok", f="poll")], 2, "its invocation at line 1 has f 'send'"),
    "index not increasing": ([INV, OK.replace('"index": 1', '"index": 0')], 2, "index 0 is not greater"),
    "send key not int": ([INV.replace('["send", 1, 2]', '["send", "a", 2]')], 1, "malformed micro-op #0"),
    "completion form in invoke": ([INV.replace("[\"send\", 1, 2]", '["send", 1, [0, 2]]')], 1, "expected [send, key, value]"),
    "float offset": ([INV, OK.replace("[0, 2]", "[0.5, 2]")], 2, "malformed micro-op #0"),
    "unknown micro-op": ([op(0, "invoke", "txn", '[["read", 1]]')], 1, "unknown kind"),
    "poll key not int": ([op(0, "invoke", "poll", '[["poll"]]'), op(1, "ok", "poll", '[["poll", {"x": [[0, 1]]}]]')], 2, "poll key must be an integer"),
    "poll record shape": ([op(0, "invoke", "poll", '[["poll"]]'), op(1, "ok", "poll", '[["poll", {"1": [[0, 1, 2]]}]]')], 2, "must be [offset, value]"),
    "queue value not list": ([op(0, "invoke", "txn", '{"a": 1}')], 1, "must be a list of micro-ops"),
    "assign keys": ([op(0, "invoke", "assign", '["a"]')], 1, "list of integer keys"),
    "rebalance log": ([op(0, "invoke", "subscribe", "[1]"), op(1, "ok", "subscribe", "[1]").replace("}", ', "rebalance_log": [{"type": "assigned"}]}')], 2, "rebalance_log entry"),
    "offset resets": ([op(0, "invoke", "poll", '[["poll"]]'), op(1, "ok", "poll", '[["poll", {}]]')[:-1] + ', "offset_resets": [{"key": 1, "from": "x", "to": 0}]}'], 2, "offset_resets entry"),
    "ends": ([op(0, "invoke", "poll", '[["poll"]]'), op(1, "ok", "poll", '[["poll", {}]]')[:-1] + ', "ends": {"1": [3]}}'], 2, "ends of key 1 must be [end, high watermark]"),
    "ends key": ([op(0, "invoke", "poll", '[["poll"]]'), op(1, "ok", "poll", '[["poll", {}]]')[:-1] + ', "ends": {"x": [3, 4]}}'], 2, "ends key must be an integer"),
    "txn timeout": ([op(0, "invoke", "poll", '[["poll"]]'), op(1, "ok", "poll", '[["poll", {}]]')[:-1] + ', "txn_timeout_ms": "30"}'], 2, "txn_timeout_ms must be an integer"),
    "refused": ([op(0, "invoke", "send", '[["send", 1, 2]]'), op(1, "info", "send", '[["send", 1, [null, 2]]]')[:-1] + ', "refused": [-1]}'], 2, "refused must be a list of micro-op indexes"),
    "refused past the sends": ([op(0, "invoke", "send", '[["send", 1, 2]]'), op(1, "info", "send", '[["send", 1, [null, 2]]]')[:-1] + ', "refused": [1]}'], 2, "micro-op #1, which is not a send"),
    "refused on an ok op": ([op(0, "invoke", "send", '[["send", 1, 2]]'), op(1, "ok", "send", '[["send", 1, [0, 2]]]')[:-1] + ', "refused": [0]}'], 2, "refused is for info ops, not ok"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(JSONL_CASES))
def test_jsonl_errors_name_the_line(tmp_path: Path, case: str) -> None:
    lines, line, fragment = JSONL_CASES[case]
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(HistoryError) as err:
        read_flat(path)
    assert err.value.line == line, str(err.value)
    assert fragment in err.value.message
    assert str(err.value).startswith(f"{path}:{line}: ")


def test_integers_beyond_64_bits(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(INV.replace('"time": 1', '"time": 18446744073709551615') + "\n")
    with pytest.raises(HistoryError, match="does not fit in 64 bits"):
        read_flat(path)
    path.write_text(INV.replace('"time": 1', '"time": 1' + "0" * 30) + "\n")
    with pytest.raises(HistoryError) as err:
        read_flat(path)
    assert err.value.line == 1


def test_blank_lines_count_and_truncated_last_line_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(INV + "\n\n" + OK + "\n" + '{"index": 2, "ti')
    assert read_flat(path).num_rows == 2
    path.write_text(INV + "\n\n" + OK + "\n" + '{"index": 2, "ti\n')
    with pytest.raises(HistoryError) as err:
        read_flat(path)
    assert err.value.line == 4


def test_unreadable(tmp_path: Path) -> None:
    with pytest.raises(HistoryError) as err:
        read_flat(tmp_path / "missing.jsonl", "jsonl")
    assert err.value.line is None and "cannot read" in str(err.value)
    with pytest.raises(HistoryError):
        read_flat(tmp_path, "jsonl")  # a directory


def test_edn_errors(tmp_path: Path) -> None:
    path = tmp_path / "history.edn"
    good = "{:type :invoke, :f :send, :process 0, :time 1, :value [[:send 1 2]]}"
    for body, line, fragment in [
        (good + "\n{:type :ok :f :send", 2, "malformed EDN"),
        (good + "\n{:type :done, :f :send, :process 0, :time 2, :value nil}", 2, "unknown op type"),
        (good + "\n[1 2]", 2, "expected an op map"),
        (good + "\n#unknown.Tag{:type :ok}", 2, "malformed EDN"),
        (good + "\n{:type :ok, :f :poll, :process 0, :time 2, :value nil}", 2, "has f 'send'"),
        (
            "; comment\n\n" + good.replace("[[:send 1 2]]", "[[:send :k 2]]"),
            3,
            "malformed micro-op",
        ),
    ]:
        path.write_text(body + "\n")
        with pytest.raises(HistoryError) as err:
            read_flat(path, "jepsen-edn")
        assert (err.value.line, fragment in err.value.message) == (line, True), str(err.value)


def test_parquet_errors_name_the_row(tmp_path: Path) -> None:
    src = tmp_path / "h.jsonl"
    src.write_text(INV + "\n" + OK + "\n")
    table = read_flat(src)
    path = tmp_path / "h.parquet"
    pq.write_table(table.drop_columns(["pos"]), path)
    with pytest.raises(HistoryError, match="missing columns"):
        read_flat(path)
    bad_type = table.set_column(2, "type", table["type"].to_pylist()[:1] and [["invoke", "done"]])
    write_parquet(bad_type, str(path))
    with pytest.raises(HistoryError) as err:
        read_flat(path)
    assert err.value.line == 2 and "unknown op type" in err.value.message
    swapped = table.take([1, 0])
    write_parquet(swapped, str(path))
    with pytest.raises(HistoryError) as err:
        read_flat(path)
    assert err.value.line == 2
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(HistoryError, match="cannot read as Parquet"):
        read_flat(tmp_path / "junk.parquet")


def test_check_parquet_reads_only_what_it_checks(tmp_path: Path) -> None:
    src = tmp_path / "h.jsonl"
    src.write_text(INV + "\n" + OK + "\n")
    table = read_flat(src)
    path = tmp_path / "h.parquet"
    write_parquet(table, str(path))
    assert check_parquet(str(path)).num_rows == 2
    i = table.column_names.index("pair_time")
    write_parquet(table.set_column(i, "pair_time", pa.array([2, 99], pa.int64())), str(path))
    with pytest.raises(HistoryError) as err:
        check_parquet(str(path))
    assert err.value.line == 2 and "pair_time" in err.value.message
    write_parquet(table.take([1, 0]), str(path))
    with pytest.raises(HistoryError) as err:
        check_parquet(str(path))
    assert err.value.line == 2


PARQUET_EXTRAS = {
    "not JSON": ('{"ends": ', "column 'extra': unexpected end of data"),
    "not a map": ("[1, 2]", "column 'extra': must be a JSON map"),
    "ends": ('{"ends": {"1": [3]}}', "ends of key 1 must be [end, high watermark]"),
    "offset resets": ('{"offset_resets": [{"key": 1}]}', "offset_resets entry"),
    "txn timeout": ('{"txn_timeout_ms": 1.5}', "txn_timeout_ms must be an integer"),
    "refused": ('{"refused": ["0"]}', "refused must be a list of micro-op indexes"),
}


@pytest.mark.parametrize("case", sorted(PARQUET_EXTRAS))
@pytest.mark.parametrize("reader", [read_flat, check_parquet])
def test_parquet_extra_fields_are_checked(
    tmp_path: Path, case: str, reader: Callable[[Path], object]
) -> None:
    """A foreign table's ``extra`` holding a field the checker parses in a
    wrong shape fails at its row, as it would in a JSON history (the op
    before it has three rows, so an op's place is not its row)."""
    src = tmp_path / "h.jsonl"
    ops = [
        op(0, "invoke", "poll", '[["poll"]]'),
        op(1, "ok", "poll", '[["poll", {"1": [[0, 1], [1, 2], [2, 3]]}]]'),
        op(2, "invoke", "poll", '[["poll"]]'),
        op(3, "ok", "poll", '[["poll", {}]]'),
    ]
    src.write_text("\n".join(ops) + "\n")
    table = read_flat(src)
    assert table.num_rows == 6
    text, fragment = PARQUET_EXTRAS[case]
    column = table.column_names.index("extra")
    path = tmp_path / "h.parquet"
    write_parquet(
        table.set_column(column, "extra", pa.array([None] * 5 + ['{"ends": {}}'])), str(path)
    )
    reader(path)
    write_parquet(table.set_column(column, "extra", pa.array([None] * 5 + [text])), str(path))
    with pytest.raises(HistoryError) as err:
        reader(path)
    assert (err.value.line, fragment in err.value.message) == (6, True), str(err.value)


def test_cli_reports_one_line_and_254(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(INV + "\n" + op(1, "ok", f="poll") + "\n")
    assert main(["convert", str(path), str(tmp_path / "out.edn")]) == 254
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{path}:2: " in err[0]


def test_cli_subprocess_has_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "history.edn"
    path.write_text("{:type :ok, :f :send, :process 0, :time 1, :value nil}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "convert", str(path), str(tmp_path / "o.jsonl")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 254
    assert proc.stderr.count("\n") == 1 and f"{path}:1: " in proc.stderr
    assert "Traceback" not in proc.stderr
