"""The one error every history reader raises, so callers can print it as a
single ``path:line: message`` line instead of a traceback."""

from __future__ import annotations


class HistoryError(Exception):
    """Bad history input. ``line`` is 1-based (for Parquet: the table row);
    ``None`` when the whole file is at fault (unreadable, wrong schema)."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"

    def __reduce__(self):  # keep all three fields across process boundaries
        return (HistoryError, (self.path, self.line, self.message))
