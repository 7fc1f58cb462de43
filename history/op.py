"""The op model shared by everything that writes or reads a history.

One op is one line of ``history.jsonl`` (see docs/architecture.md, "Formats"):
an ``invoke`` followed by exactly one completion (``ok``, ``fail`` or ``info``)
from the same process. Queue and txn values are lists of micro-ops:

* ``["send", key, value]`` completes as ``["send", key, [offset, value]]``
  (offset ``None`` when unknown);
* ``["poll"]`` completes as ``["poll", {key: [[offset, value], ...]}]``.

Nemesis ops use ``process == "nemesis"``. Fields beyond the six core ones
(``error``, ``node``, ``rebalance_log``, ...) are kept in ``extra`` so nothing
a writer recorded is lost on a round trip.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OP_TYPES = frozenset({"invoke", "ok", "fail", "info"})
COMPLETIONS = frozenset({"ok", "fail", "info"})
NEMESIS = "nemesis"

CORE_FIELDS = ("index", "time", "type", "process", "f", "value")


@dataclass(slots=True)
class Op:
    """One history entry. ``time`` is nanoseconds since the test started."""

    index: int
    time: int
    type: str
    process: int | str
    f: str
    value: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_client(self) -> bool:
        return self.process != NEMESIS

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to ``history.jsonl``, core fields first."""
        d: dict[str, Any] = {
            "index": self.index,
            "time": self.time,
            "type": self.type,
            "process": self.process,
            "f": self.f,
            "value": self.value,
        }
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Op:
        """Builds an op from a decoded JSON object; the caller validates fields."""
        extra = {k: v for k, v in d.items() if k not in CORE_FIELDS}
        return cls(d["index"], d["time"], d["type"], d["process"], d["f"], d.get("value"), extra)
