"""The report of a long run, end to end: history size, time to write the
report, the page's size and the time headless Chromium takes to draw it.

Builds a synthetic queue history of ``--ops`` client operations (an invoke
and a completion each: sends and single-record polls over 16 keys by 20
processes, a partition band) straight into the history's Parquet form, with
a realtime inversion planted every ``INVERSION_EVERY`` sends (a send that
completed before another began lands above it). The results are faked as the
report's input: 200 lost writes across the run and a G0-realtime cycle per
planted inversion, as the checker writes them. Then times ``write_report``
and the page until it sets ``document.body.dataset.ready``.

    .venv/bin/python bench/bench_report_page.py [--ops 10000000]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from history.parquet import write_parquet  # noqa: E402
from history.schema import FLAT_SCHEMA  # noqa: E402
from reports import write_report  # noqa: E402
from tests.eventually import eventually  # noqa: E402
from tests.reports.cdp import Chromium  # noqa: E402

KEYS = 16
PROCESSES = 20
INVERSION_EVERY = 100_000
READY_TIMEOUT = 600.0
TYPES = ["invoke", "ok", "info"]
PROCESS_NAMES = [*map(str, range(PROCESSES)), "nemesis"]
FS = ["send", "poll", "start-partition", "stop-partition"]
GRUDGE = '{"n1":["n2","n3"]}'


def _strings(codes: np.ndarray, names: list[str], valid: np.ndarray | None = None) -> pa.Array:
    """A string column from small integer codes into ``names`` (nulls where not ``valid``)."""
    mask = None if valid is None else ~valid
    dictionary = pa.DictionaryArray.from_arrays(
        pa.array(codes.astype(np.int32), pa.int32(), mask=mask), names
    )
    return dictionary.cast(pa.string())


def _ints(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    return pa.array(values, pa.int64(), mask=None if valid is None else ~valid)


def build_history(n_ops: int, seed: int = 1) -> tuple[pa.Table, dict[str, Any]]:
    """The flat table of ``n_ops`` client operations plus a partition's start
    and stop (each op one invoke row and one completion row), and the facts
    the fake results name: OK sends and the planted inversions."""
    rng = np.random.default_rng(seed)
    is_send = rng.random(n_ops) < 0.5
    key = rng.integers(0, KEYS, n_ops)
    process = rng.integers(0, PROCESSES, n_ops)
    # each send's offset: its rank among the sends of its key
    sends = np.flatnonzero(is_send)
    order = sends[np.argsort(key[sends], kind="stable")]
    starts = np.searchsorted(key[order], np.arange(KEYS))
    offset = np.full(n_ops, -1, np.int64)
    offset[order] = np.arange(len(order)) - starts[key[order]]
    # a planted inversion: a send and the next send of its key swap offsets
    swapped = []
    for pos in range(INVERSION_EVERY, len(order) - 1, INVERSION_EVERY):
        a, b = order[pos], order[pos + 1]
        if key[a] == key[b]:
            offset[a], offset[b] = offset[b], offset[a]
            swapped.append((int(a), int(b)))
    # a poll reads the latest record of its key sent before it
    read = np.full(n_ops, -1, np.int64)
    by_key_sends = [sends[key[sends] == k] for k in range(KEYS)]
    polls = np.flatnonzero(~is_send)
    for k in range(KEYS):
        mine = polls[key[polls] == k]
        before = np.searchsorted(by_key_sends[k], mine) - 1
        got = before >= 0
        read[mine[got]] = offset[by_key_sends[k][before[got]]]
    value = np.arange(n_ops, dtype=np.int64)  # a send's value is its op number
    read_value = np.full(n_ops, -1, np.int64)
    for k in range(KEYS):
        ks = by_key_sends[k]
        value_at = np.empty(len(ks), np.int64)
        value_at[offset[ks]] = value[ks]
        mine = polls[(key[polls] == k) & (read[polls] >= 0)]
        read_value[mine] = value_at[read[mine]]

    # rows: op i's invoke at 2i, completion at 2i + 1, then a partition's start
    # and stop (two rows each) spliced in at a third and two thirds of the run
    n = 2 * n_ops
    t_gap = rng.integers(20_000, 200_000, n_ops)
    t_lat = rng.integers(100_000, 5_000_000, n_ops)
    t_inv = np.cumsum(t_gap + np.concatenate([[0], t_lat[:-1]]))
    times = np.empty(n, np.int64)
    times[0::2], times[1::2] = t_inv, t_inv + t_lat
    op = np.repeat(np.arange(n_ops), 2)
    done = np.tile([False, True], n_ops)
    client = {
        "time": times,
        "type": np.where(done, 1, 0),  # invoke, ok
        "process": process[op],
        "f": np.where(is_send[op], 0, 1),  # send, poll
        "key": key[op],
        "key_valid": is_send[op] | (done & (read[op] >= 0)),
        "offset": np.where(is_send[op], offset[op], read[op]),
        "offset_valid": done & (is_send[op] | (read[op] >= 0)),
        "value": np.where(is_send[op], value[op], read_value[op]),
        "value_valid": is_send[op] | (done & (read[op] >= 0)),
    }
    cuts = [n // 3 & ~1, 2 * n // 3 & ~1]
    table = _flat_table(client, cuts)
    facts = {
        "sends": _index_of(2 * sends + 1, cuts),
        "inversions": [
            {
                "ops": [int(_index_of(2 * o + 1, cuts)) for o in pair],
                "processes": [str(process[o]) for o in pair],
                "key": int(key[pair[0]]),
                "offsets": [int(offset[o]) for o in pair],
                "values": [int(value[o]) for o in pair],
            }
            for pair in swapped
        ],
        "lines": n + 4,
    }
    return table, facts


def _index_of(row: Any, cuts: list[int]) -> Any:
    """Client rows' history indices once the nemesis rows are spliced in."""
    return row + 2 * np.searchsorted(cuts, row, side="right")


def _flat_table(client: dict[str, np.ndarray], cuts: list[int]) -> pa.Table:
    """Client rows with a nemesis op pair (start, then stop a partition) spliced
    in before each of rows ``cuts`` (op boundaries); indices, pairs and the
    constant columns filled."""
    n = len(client["time"])
    spliced = np.insert(np.arange(n), np.repeat(cuts, 2), -1)
    nem = spliced < 0
    client_row = ~nem
    src = np.where(nem, np.maximum.accumulate(spliced), spliced)  # nemesis: the row before
    total = len(spliced)
    index = np.arange(total, dtype=np.int64)
    times = client["time"][src]
    crow, nrow = np.flatnonzero(client_row), np.flatnonzero(nem)
    partner = np.empty(total, np.int64)
    for rows in (crow, nrow):  # each op's invoke and completion are adjacent
        partner[rows[0::2]], partner[rows[1::2]] = rows[1::2], rows[0::2]
    completion = np.zeros(total, bool)
    completion[nrow[1::2]] = True

    def col(name: str) -> np.ndarray:
        return client[name][src]

    nem_f = np.zeros(total, np.int32)
    nem_f[nrow] = [2, 2, 3, 3]  # start-partition, stop-partition
    columns = {
        "index": _ints(index),
        "time": _ints(times),
        "type": _strings(np.where(nem, np.where(completion, 2, 0), col("type")), TYPES),
        "process": _strings(np.where(nem, PROCESSES, col("process")), PROCESS_NAMES),
        "f": _strings(np.where(nem, nem_f, col("f")), FS),
        "pair_index": _ints(index[partner]),
        "pair_time": _ints(times[partner]),
        "row": pa.array(np.zeros(total, np.int32)),
        "mop_index": pa.array(np.zeros(total, np.int32), mask=nem),
        "mop": _strings(np.where(nem, 0, col("f")), FS, client_row),
        "key": _ints(col("key"), client_row & col("key_valid")),
        "offset": _ints(col("offset"), client_row & col("offset_valid")),
        "value": _ints(col("value"), client_row & col("value_valid")),
        "pos": pa.array(np.zeros(total, np.int32), mask=~(client_row & col("offset_valid"))),
        "payload": _strings(np.zeros(total, np.int32), [GRUDGE], nem & completion),
    }
    empty = {name: pa.nulls(total, FLAT_SCHEMA.field(name).type) for name in FLAT_SCHEMA.names}
    return pa.table({**empty, **columns}, schema=FLAT_SCHEMA)


def fake_results(facts: dict[str, Any]) -> dict[str, Any]:
    """What the checker would report: 200 lost writes spread over the run and a
    G0-realtime cycle per planted inversion."""
    sends = facts["sends"]
    named = sends[:: max(1, len(sends) // 200)][:200].tolist()
    lost = [
        {
            "key": 0,
            "writer": {"index": i, "process": "0"},
            "explanation": f"op {i} was lost",
        }
        for i in named
    ]
    cycles = []
    for inv in facts["inversions"]:
        (a, b), (pa_, pb), key = inv["ops"], inv["processes"], inv["key"]
        op_a, op_b = {"index": a, "process": pa_}, {"index": b, "process": pb}
        cycles.append(
            {
                "kind": "G0-realtime",
                "steps": [
                    {
                        "from": op_b,
                        "to": op_a,
                        "rel": "ww",
                        "key": key,
                        "v1": inv["values"][1],
                        "v2": inv["values"][0],
                        "o1": inv["offsets"][1],
                        "o2": inv["offsets"][0],
                    },
                    {"from": op_a, "to": op_b, "rel": "realtime"},
                ],
                "explanation": f"op {a} completed before op {b} began, yet landed above it",
            }
        )
    return {
        "valid": False,
        "anomalies": {"lost-write": lost, "G0-realtime": cycles},
        "stats": {"graph": {"nodes": len(sends)}},
    }


def page_ready(report: Path) -> float:
    """Seconds from navigating to ``report`` until the page says it is drawn."""
    with Chromium() as browser:
        t0 = time.perf_counter()
        browser.call("Page.navigate", url=report.as_uri())
        eventually(
            lambda: browser.eval("document.body && document.body.dataset.ready") == "1",
            READY_TIMEOUT,
            interval=0.1,
            what="the report did not draw",
        )
        elapsed = time.perf_counter() - t0
        if browser.errors:
            raise RuntimeError(f"errors on the page: {browser.errors}")
        return elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=10_000_000, help="client operations")
    a, _ = p.parse_known_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        t0 = time.perf_counter()
        table, facts = build_history(a.ops)
        write_parquet(table, str(run / "history.parquet"))
        built = time.perf_counter() - t0
        del table
        t0, c0 = time.perf_counter(), time.process_time()
        written = write_report(run, fake_results(facts))
        report_s, report_cpu = time.perf_counter() - t0, time.process_time() - c0
        ready_s = page_ready(written.report)
        history_mb = (run / "history.parquet").stat().st_size / 1e6
        html_mb = written.report.stat().st_size / 1e6
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(
        f"{a.ops} ops ({facts['lines']} lines, {len(facts['inversions'])} planted inversions): "
        f"history.parquet {history_mb:.0f} MB (built in {built:.0f} s); "
        f"write_report {report_s:.1f} s ({report_cpu:.1f} CPU s); report.html {html_mb:.1f} MB; "
        f"page drawn in {ready_s:.1f} s; peak RSS {peak_gb:.1f} GB  "
        f"(command: .venv/bin/python bench/bench_report_page.py --ops {a.ops})"
    )


if __name__ == "__main__":
    main()
