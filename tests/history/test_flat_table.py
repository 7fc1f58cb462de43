"""The flat table's row layout and pairing, on a small hand-written history."""

from __future__ import annotations

import pyarrow as pa
import pytest

from history import FLAT_SCHEMA, HistoryError, Op, flatten, unflatten

OPS = [
    Op(0, 10, "invoke", 3, "txn", [["send", 5, 12], ["poll"]]),
    Op(1, 11, "invoke", "nemesis", "start-partition", None),
    Op(2, 15, "ok", 3, "txn", [["send", 5, [40, 12]], ["poll", {5: [[38, 10], [39, 11]], 6: []}]]),
    Op(3, 16, "info", "nemesis", "start-partition", {"n1": ["n2"]}, {"node": "n1"}),
    Op(4, 17, "invoke", 4, "subscribe", [1, 2]),
    Op(
        5,
        18,
        "ok",
        4,
        "subscribe",
        [1, 2],
        {"rebalance_log": [{"type": "assigned", "keys": [1, 2]}], "error": ["x", 1]},
    ),
    Op(6, 19, "invoke", 4, "poll", [["poll"]]),
    Op(7, 20, "fail", 4, "poll", [["poll", {}]]),
    Op(8, 21, "invoke", 3, "send", [["send", 7, 1]]),
    Op(9, 22, "info", 3, "send", [["send", 7, 1]]),
]


def rows() -> list[dict]:
    return flatten(OPS).to_pylist()


def test_schema_and_row_count() -> None:
    table = flatten(OPS)
    assert table.schema == FLAT_SCHEMA
    # 2 + 1 + (1 send + 3 poll rows) + 1 + 1 + 1 + 1 + 1 + 1 + 1
    assert table.num_rows == 14


def test_micro_op_rows() -> None:
    r = rows()
    inv_send, inv_poll = r[0], r[1]
    assert (inv_send["mop"], inv_send["key"], inv_send["value"], inv_send["offset"]) == (
        "send",
        5,
        12,
        None,
    )
    assert inv_send["pos"] is None  # invocation form
    assert (inv_poll["mop"], inv_poll["key"], inv_poll["pos"], inv_poll["row"]) == (
        "poll",
        None,
        None,
        1,
    )
    ok = [x for x in r if x["index"] == 2]
    assert [
        (x["row"], x["mop_index"], x["key"], x["offset"], x["value"], x["pos"]) for x in ok
    ] == [
        (0, 0, 5, 40, 12, 0),
        (1, 1, 5, 38, 10, 0),
        (2, 1, 5, 39, 11, 1),
        (3, 1, 6, None, None, None),  # key 6 polled with an empty list
    ]
    empty_poll = next(x for x in r if x["index"] == 7)
    assert (empty_poll["key"], empty_poll["pos"], empty_poll["mop"]) == (None, 0, "poll")


def test_pairs_link_both_ways() -> None:
    by_index = {x["index"]: x for x in rows() if x["row"] == 0}
    assert (by_index[0]["pair_index"], by_index[0]["pair_time"]) == (2, 15)
    assert (by_index[2]["pair_index"], by_index[2]["pair_time"]) == (0, 10)
    assert by_index[1]["pair_index"] == 3 and by_index[3]["pair_index"] == 1
    assert all(x["pair_index"] == 2 for x in rows() if x["index"] == 0)  # every row


def test_op_level_columns_only_on_row_zero() -> None:
    r = rows()
    sub = next(x for x in r if x["index"] == 5)
    assert sub["keys"] == [1, 2] and sub["rebalance_keys"] == [1, 2]
    assert sub["error"] == '["x",1]'
    assert '"rebalance_log"' in sub["extra"] and "error" not in sub["extra"]
    nem = next(x for x in r if x["index"] == 3)
    assert nem["payload"] == '{"n1":["n2"]}' and nem["extra"] == '{"node":"n1"}'
    assert nem["process"] == "nemesis" and nem["mop_index"] is None
    assert all(x["keys"] is None and x["payload"] is None for x in r if x["row"] > 0)


def test_unflatten_inverts_flatten() -> None:
    assert list(unflatten(flatten(OPS))) == OPS


def test_empty_history() -> None:
    table = flatten([])
    assert table.num_rows == 0 and table.schema == FLAT_SCHEMA
    assert list(unflatten(table)) == []
    assert isinstance(table, pa.Table)


def test_unflatten_rejects_inconsistent_rows() -> None:
    table = flatten(OPS)
    rows = table.to_pylist()
    rows[0]["offset"] = 3  # an invocation's send cannot know its offset
    with pytest.raises(HistoryError) as err:
        list(unflatten(pa.Table.from_pylist(rows, FLAT_SCHEMA), "t"))
    assert err.value.line == 1 and "no offset" in err.value.message
    rows = table.to_pylist()
    rows[3]["mop"] = "read"
    with pytest.raises(HistoryError, match="unknown micro-op kind"):
        list(unflatten(pa.Table.from_pylist(rows, FLAT_SCHEMA)))
