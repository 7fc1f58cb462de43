"""A tiny history builder for checker tests: ops by intent, flattened with the
history layer's own ``flatten``.

``h.txn(p, [send(k, v, offset), poll({k: [(offset, v), ...]})])`` appends an
invocation and its completion; ``h.invoke``/``h.complete`` interleave ops
when a test needs concurrency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from history import Op, flatten


def send(k: int, v: int, offset: int | None = None) -> list[Any]:
    return ["send", k, [offset, v]]


def poll(records: dict[int, list[tuple[int, int]]]) -> list[Any]:
    return ["poll", {str(k): [[o, v] for o, v in recs] for k, recs in records.items()}]


def _invocation(mop: list[Any]) -> list[Any]:
    return ["send", mop[1], mop[2][1]] if mop[0] == "send" else ["poll"]


@dataclass
class Pending:
    process: int
    f: str
    index: int


class History:
    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.clock = 0

    def _add(self, process: int, op_type: str, f: str, value: Any, **extra: Any) -> int:
        self.clock += 1_000_000
        index = len(self.ops)
        self.ops.append(Op(index, self.clock, op_type, process, f, value, extra))
        return index

    def invoke(self, process: int, f: str, value: Any) -> Pending:
        if f in ("txn", "send", "poll"):
            value = [_invocation(m) for m in value]
        return Pending(process, f, self._add(process, "invoke", f, value))

    def complete(self, p: Pending, op_type: str, value: Any, **extra: Any) -> int:
        return self._add(p.process, op_type, p.f, value, **extra)

    def op(self, process: int, f: str, value: Any, op_type: str = "ok", **extra: Any) -> int:
        """An invocation immediately followed by its completion; returns its index."""
        return self.complete(self.invoke(process, f, value), op_type, value, **extra)

    def txn(self, process: int, mops: list[list[Any]], op_type: str = "ok", **extra: Any) -> int:
        f = "txn"
        if all(m[0] == "send" for m in mops):
            f = "send"
        elif all(m[0] == "poll" for m in mops):
            f = "poll"
        return self.op(process, f, mops, op_type, **extra)

    def assign(self, process: int, keys: list[int], op_type: str = "ok") -> int:
        return self.op(process, "assign", keys, op_type)

    def subscribe(self, process: int, keys: list[int], **extra: Any) -> int:
        return self.op(process, "subscribe", keys, **extra)

    def table(self) -> pa.Table:
        return flatten(self.ops)

    def jsonl(self) -> str:
        import json

        return "".join(json.dumps(o.to_dict()) + "\n" for o in self.ops)
