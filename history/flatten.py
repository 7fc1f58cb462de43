"""Flattening ops into the columnar history table (one row per micro-op element).

Rows per op:

* a ``send`` micro-op gives one row: ``key``, ``value``, and ``offset`` (null in
  an invocation or when unknown); ``pos`` is 0, or null for the invocation form
  ``["send", k, v]`` (which a failed completion may also carry);
* a ``poll`` micro-op gives one row per record read (``pos`` = position in that
  key's list), one row with null ``key`` and ``pos`` 0 for an empty result
  ``["poll", {}]``, one row with null ``key`` and null ``pos`` for the bare
  ``["poll"]`` of an invocation, and one row with null ``value`` and ``pos`` for a
  key whose list is empty;
* an op without micro-ops (assign, subscribe, crash, nemesis ops, null value)
  gives one row with null ``mop_index``.

Op-level columns (``keys``, ``rebalance_keys``, ``error``, ``payload``, ``extra``)
are set on row 0 only. Every value is checked while it is flattened, so a
reader visits each element once; :func:`history.pairing.attach_pairs`
then pairs invocations with completions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from history.errors import HistoryError
from history.fields import INT_TEXT, check_core, check_extra, describe
from history.op import Op
from history.pairing import attach_pairs
from history.schema import FLAT_SCHEMA, LINE

QUEUE_FS = frozenset({"send", "poll", "txn"})
KEY_LIST_FS = frozenset({"assign", "subscribe"})
MOP_NAMES = pa.array(["send", "poll"])
SEND, POLL = 0, 1
BLOCK_OPS = 200_000  # ops flattened into one block by :func:`flatten`


def _key(k: Any) -> int:
    """Poll-map keys are integers, written as JSON strings of integers."""
    if type(k) is int:
        return k
    if type(k) is str and INT_TEXT.fullmatch(k):
        return int(k)
    raise ValueError(f"poll key must be an integer, got {describe(k)}")


def _int_list(x: Any, what: str) -> list[int]:
    if type(x) is not list or any(type(k) is not int for k in x):
        raise ValueError(f"{what} must be a list of integer keys, got {describe(x)}")
    return x


def _bad_records(i: int, k: int, records: list[Any]) -> None:
    """Raises the error for the first malformed record of a poll's key."""
    for rec in records:
        if type(rec) is not list or len(rec) != 2:
            raise ValueError(
                f"malformed micro-op #{i}: record {describe(rec)} of key {k} "
                "must be [offset, value]"
            )
        if type(rec[0]) is not int or type(rec[1]) is not int:
            raise ValueError(
                f"malformed micro-op #{i}: record {describe(rec)} of key {k} must hold integers"
            )


def _rebalance_keys(log: Any) -> list[int]:
    """All keys named in a subscribe's ``rebalance_log`` (``[{type, keys}]``)."""
    if type(log) is not list:
        raise ValueError(f"rebalance_log must be a list, got {describe(log)}")
    keys: list[int] = []
    for event in log:
        if type(event) is not dict or "keys" not in event:
            raise ValueError(f"rebalance_log entry must be a map with keys, got {describe(event)}")
        keys.extend(_int_list(event["keys"], "rebalance_log keys"))
    return keys


def _check_refused(refused: list[int], op_type: str, value: Any) -> None:
    """``refused`` names sends of an ``info`` op: only there does it say more
    than the op's type."""
    if op_type != "info":
        raise ValueError(f"refused is for info ops, not {op_type}")
    for i in refused:
        if type(value) is not list or i >= len(value) or value[i][0] != "send":
            raise ValueError(f"refused names micro-op #{i}, which is not a send of this op")


SPARSE_COLUMNS = ("keys", "rebalance_keys", "error", "payload", "extra")


def _dumps(x: Any) -> str:
    return orjson.dumps(x, option=orjson.OPT_NON_STR_KEYS).decode()


class FlatBuilder:
    """Accumulates ops column by column (plain lists: the fastest way to grow
    columns from Python) and builds the Arrow table at the end."""

    def __init__(self) -> None:
        # one entry per op
        self.o_index: list[int] = []
        self.o_time: list[int] = []
        self.o_type: list[str] = []
        self.o_process: list[str] = []
        self.o_f: list[str] = []
        self.o_line: list[int] = []
        self.o_nrows: list[int] = []
        # row-0-only columns are mostly null: kept sparse as (op position, value)
        self.sparse: dict[str, tuple[list[int], list[Any]]] = {
            name: ([], []) for name in SPARSE_COLUMNS
        }
        # one entry per micro-op; an op without micro-ops has one placeholder
        self.m_index: list[int | None] = []
        self.m_code: list[int | None] = []
        self.m_nrows: list[int] = []
        # one entry per row
        self.r_key: list[int | None] = []
        self.r_offset: list[int | None] = []
        self.r_value: list[int | None] = []
        self.r_pos: list[int | None] = []

    def add(
        self,
        index: int,
        time: int,
        op_type: str,
        process: int | str,
        f: str,
        value: Any,
        extra: dict[str, Any],
        line: int,
    ) -> None:
        """Adds one op whose core fields are already checked; raises
        ``ValueError`` on a malformed value (nothing is added then)."""
        rows_before = len(self.r_key)
        mops_before = len(self.m_nrows)
        keys = rebalance = payload = error = extra_json = None
        try:
            if type(value) is list and value and f in QUEUE_FS:
                self._add_mops(value, op_type == "invoke")
            else:
                if f in QUEUE_FS and value is not None and type(value) is not list:
                    raise ValueError(f"value of a {f} op must be a list of micro-ops")
                if f in KEY_LIST_FS and value is not None:
                    keys = _int_list(value, f"value of a {f} op")
                elif value is not None:
                    payload = _dumps(value)
                self._placeholder()
            if extra:
                rest = extra
                if "error" in extra:
                    error = _dumps(extra["error"])
                    rest = {k: v for k, v in extra.items() if k != "error"}
                if "rebalance_log" in rest:
                    rebalance = _rebalance_keys(rest["rebalance_log"])
                check_extra(rest)
                if "refused" in rest:
                    _check_refused(rest["refused"], op_type, value)
                if rest:
                    extra_json = _dumps(rest)
        except (ValueError, TypeError) as e:
            for col in (self.r_key, self.r_offset, self.r_value, self.r_pos):
                del col[rows_before:]
            for col in (self.m_index, self.m_code, self.m_nrows):
                del col[mops_before:]
            raise ValueError(str(e)) from None
        position = len(self.o_index)
        self.o_index.append(index)
        self.o_time.append(time)
        self.o_type.append(op_type)
        self.o_process.append(str(process))
        self.o_f.append(f)
        self.o_line.append(line)
        self.o_nrows.append(len(self.r_key) - rows_before)
        if keys is None and payload is None and error is None and extra_json is None:
            return
        for name, x in (
            ("keys", keys),
            ("rebalance_keys", rebalance),
            ("error", error),
            ("payload", payload),
            ("extra", extra_json),
        ):
            if x is not None:
                self.sparse[name][0].append(position)
                self.sparse[name][1].append(x)

    def _placeholder(self) -> None:
        self.m_index.append(None)
        self.m_code.append(None)
        self.m_nrows.append(1)
        self._row(None, None, None, None)

    def _row(self, key: int | None, offset: int | None, value: int | None, pos: int | None):
        self.r_key.append(key)
        self.r_offset.append(offset)
        self.r_value.append(value)
        self.r_pos.append(pos)

    def _add_mops(self, mops: list[Any], invoke: bool) -> None:
        # bound appends in a plain loop: the fastest way to grow lists in CPython
        key_, offset_, value_, pos_ = (
            self.r_key.append,
            self.r_offset.append,
            self.r_value.append,
            self.r_pos.append,
        )
        r_key = self.r_key
        for i, mop in enumerate(mops):
            start = len(r_key)
            if type(mop) is not list or not mop:
                raise ValueError(f"malformed micro-op #{i} {describe(mop)}")
            tag = mop[0]
            if tag == "send":
                if len(mop) != 3 or type(mop[1]) is not int:
                    raise ValueError(
                        f"malformed micro-op #{i} {describe(mop)}: expected [send, key, value]"
                    )
                v = mop[2]
                if type(v) is int:
                    key_(mop[1])
                    offset_(None)
                    value_(v)
                    pos_(None)
                elif (
                    not invoke
                    and type(v) is list
                    and len(v) == 2
                    and (v[0] is None or type(v[0]) is int)
                    and type(v[1]) is int
                ):
                    key_(mop[1])
                    offset_(v[0])
                    value_(v[1])
                    pos_(0)
                else:
                    want = "[send, key, value]" if invoke else "[send, key, [offset, value]]"
                    raise ValueError(f"malformed micro-op #{i} {describe(mop)}: expected {want}")
                code = SEND
            elif tag == "poll":
                code = POLL
                if len(mop) == 1:
                    self._row(None, None, None, None)
                elif len(mop) == 2 and not invoke and type(mop[1]) is dict:
                    if not mop[1]:
                        self._row(None, None, None, 0)
                    for k, records in mop[1].items():
                        k = _key(k)
                        if type(records) is not list:
                            raise ValueError(
                                f"malformed micro-op #{i}: records of key {k} must be a list"
                            )
                        if not records:
                            self._row(k, None, None, None)
                        for p, rec in enumerate(records):
                            if type(rec) is not list or len(rec) != 2:
                                _bad_records(i, k, records)
                            o, v = rec
                            if type(o) is not int or type(v) is not int:
                                _bad_records(i, k, records)
                            key_(k)
                            offset_(o)
                            value_(v)
                            pos_(p)
                else:
                    want = "[poll]" if invoke else "[poll] or [poll, {key: [[offset, value], ...]}]"
                    raise ValueError(f"malformed micro-op #{i} {describe(mop)}: expected {want}")
            else:
                raise ValueError(f"malformed micro-op #{i} {describe(mop)}: unknown kind")
            self.m_index.append(i)
            self.m_code.append(code)
            self.m_nrows.append(len(r_key) - start)

    def _sparse(self, name: str, head: pa.Array) -> pa.Array:
        """A row-0-only column: its values scattered to their ops' first rows."""
        positions, values = self.sparse[name]
        slot = np.full(len(self.o_index), -1, dtype=np.int64)
        slot[positions] = np.arange(len(positions))
        per_op = pa.array(slot, mask=slot < 0)
        typ = FLAT_SCHEMA.field(name).type
        return pa.array(values, typ).take(per_op).take(head)

    def __len__(self) -> int:
        return len(self.o_index)

    def build(self) -> pa.Table:
        """The table without pair columns, plus the auxiliary ``_line`` column;
        ``ValueError`` if an integer does not fit the 64-bit columns."""
        try:
            return self._build()
        except (OverflowError, pa.ArrowException):
            lines = f"lines {self.o_line[0]}-{self.o_line[-1]}" if self.o_line else "the input"
            raise ValueError(f"an integer in {lines} does not fit in 64 bits") from None

    def _build(self) -> pa.Table:
        nrows = np.asarray(self.o_nrows, dtype=np.int64)
        op_of_row = np.repeat(np.arange(len(nrows), dtype=np.int64), nrows)
        starts = np.cumsum(nrows) - nrows
        row = np.arange(len(op_of_row), dtype=np.int64) - np.repeat(starts, nrows)
        head = pa.array(op_of_row, mask=row != 0)  # row 0 → its op, other rows → null

        def per_op(values: list[Any], typ: pa.DataType) -> pa.Array:
            return pa.array(values, typ).take(op_of_row)

        m_nrows = np.asarray(self.m_nrows, dtype=np.int64)
        m_code = pa.array(self.m_code, pa.int8())
        columns = {
            "index": per_op(self.o_index, pa.int64()),
            "time": per_op(self.o_time, pa.int64()),
            "type": per_op(self.o_type, pa.string()),
            "process": per_op(self.o_process, pa.string()),
            "f": per_op(self.o_f, pa.string()),
            "row": pa.array(row.astype(np.int32)),
            "mop_index": pa.array(self.m_index, pa.int32()).take(
                np.repeat(np.arange(len(m_nrows)), m_nrows)
            ),
            "mop": MOP_NAMES.take(m_code).take(np.repeat(np.arange(len(m_nrows)), m_nrows)),
            "key": pa.array(self.r_key, pa.int64()),
            "offset": pa.array(self.r_offset, pa.int64()),
            "value": pa.array(self.r_value, pa.int64()),
            "pos": pa.array(self.r_pos, pa.int32()),
            **{name: self._sparse(name, head) for name in SPARSE_COLUMNS},
            LINE: per_op(self.o_line, pa.int64()),
        }
        return pa.table(columns)


def flatten(ops: Iterable[Op]) -> pa.Table:
    """The flattened table of in-memory ops, checked and paired like a file
    (errors name ``<ops>`` and the op's 1-based position). Flattens in blocks
    of :data:`BLOCK_OPS`, so Python's lists stay small however many ops come."""
    source = "<ops>"
    tables = []
    builder = FlatBuilder()
    for n, op in enumerate(ops, 1):
        try:
            builder.add(*check_core(op.to_dict()), n)
        except ValueError as e:
            raise HistoryError(source, n, str(e)) from None
        if len(builder) >= BLOCK_OPS:
            tables.append(_block(builder, source))
            builder = FlatBuilder()
    tables.append(_block(builder, source))
    return attach_pairs(pa.concat_tables(tables), source)


def _block(builder: FlatBuilder, source: str) -> pa.Table:
    """One block's table; an error found only now names no line."""
    try:
        return builder.build()
    except ValueError as e:
        raise HistoryError(source, None, str(e)) from None
