"""Format detection, the converter's format choices, and parallel JSONL
reading agreeing with the single-process reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers.synth import generate
from checkers.synth import write_history as write_synthetic
from history import HistoryError, convert, detect_format, read_flat, write_history
from history.jsonl import read_jsonl_unpaired


@pytest.fixture(scope="module")
def ops():
    return generate(11, 300)


@pytest.mark.parametrize("ext", ["jsonl", "edn", "parquet"])
def test_detects_each_format_whatever_the_name(tmp_path: Path, ops, ext: str) -> None:
    named = tmp_path / f"h.{ext}"
    write_history(ops, named)
    anonymous = tmp_path / "history.txt"
    anonymous.write_bytes(named.read_bytes())
    expected = {"jsonl": "jsonl", "edn": "jepsen-edn", "parquet": "parquet"}[ext]
    assert detect_format(anonymous) == expected
    assert read_flat(anonymous).equals(read_flat(named, expected))


def test_detection_rejects_other_files(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(HistoryError, match="not a history"):
        detect_format(path)
    with pytest.raises(HistoryError, match="unknown format"):
        read_flat(path, "csv")


def test_forced_format_mismatch_is_a_history_error(tmp_path: Path, ops) -> None:
    path = tmp_path / "h.parquet"
    write_history(ops, path)
    with pytest.raises(HistoryError) as err:
        read_flat(path, "jsonl")
    assert err.value.line == 1


def test_convert_needs_a_known_output_format(tmp_path: Path, ops) -> None:
    src = tmp_path / "h.jsonl"
    write_history(ops, src)
    with pytest.raises(HistoryError, match="output format"):
        convert(str(src), str(tmp_path / "h.out"))
    assert convert(str(src), str(tmp_path / "h.out"), dst_format="jepsen-edn") == len(ops)
    with pytest.raises(HistoryError, match="cannot write"):
        convert(str(src), str(tmp_path / "missing" / "h.edn"))


def test_parallel_read_equals_single_process(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    write_synthetic(str(path), 3, 2000)
    one = read_jsonl_unpaired(str(path), workers=1)
    two = read_jsonl_unpaired(str(path), workers=2)
    assert one.equals(two)
    assert read_flat(path, workers=2).equals(read_flat(path, workers=1))


def test_parallel_read_reports_absolute_lines(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    n = write_synthetic(str(path), 3, 2000)
    lines = path.read_text().splitlines()
    lines[n - 10] = lines[n - 10].replace('"type":', '"type":"bogus","was":')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(HistoryError) as err:
        read_flat(path, workers=2)
    assert err.value.line == n - 9 and "unknown op type 'bogus'" in err.value.message


def test_cli_convert_with_named_formats(tmp_path: Path, ops, capsys) -> None:
    from harness.cli import main

    src = tmp_path / "in.txt"
    write_history(ops, tmp_path / "h.edn")
    src.write_bytes((tmp_path / "h.edn").read_bytes())
    out = tmp_path / "out.dat"
    assert main(["convert", str(src), str(out), "--from", "jepsen-edn", "--to", "jsonl"]) == 0
    assert f"wrote {len(ops)} ops" in capsys.readouterr().out
    assert read_flat(out, "jsonl").equals(read_flat(tmp_path / "h.edn"))
    assert main(["convert", str(src), str(out), "--from", "parquet", "--to", "jsonl"]) == 254
    assert "cannot read as Parquet" in capsys.readouterr().err
