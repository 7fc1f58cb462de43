"""One stored run, as the report needs it: config, results, history, node logs.

Layout (docs/architecture.md, "Formats"): ``test.json``, ``history.jsonl`` or
``history.parquet``, ``results.json``, ``nodes/<node>/``. Every problem with
the files becomes a ``RunError`` naming the file and what is wrong, which
the CLI turns into one line and exit 254.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class RunError(Exception):
    """A run directory that cannot be rendered; the message names file and cause."""


@dataclass(slots=True)
class Run:
    path: Path
    results: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.config.get("name") or self.path.resolve().parent.name)

    @property
    def time(self) -> str:
        return self.path.resolve().name

    def history_path(self) -> Path | None:
        # Parquet, when present, was written from the finished JSONL and reads faster.
        for name in ("history.parquet", "history.jsonl"):
            if (self.path / name).is_file():
                return self.path / name
        return None


def load_run(path: Path | str) -> Run:
    """Reads ``results.json`` (required) and ``test.json`` (optional) of a run."""
    path = Path(path)
    if not path.is_dir():
        raise RunError(f"{path}: not a run directory")
    results = read_json(path / "results.json", missing="no results.json; run `jepka check` first")
    if not isinstance(results, dict) or "valid" not in results:
        raise RunError(f"{path / 'results.json'}: not a checker result (no 'valid' field)")
    config = read_json(path / "test.json") if (path / "test.json").is_file() else {}
    if not isinstance(config, dict):
        raise RunError(f"{path / 'test.json'}: expected a JSON object")
    return Run(path, results, config)


def read_json(path: Path, missing: str = "missing") -> Any:
    if not path.is_file():
        raise RunError(f"{path}: {missing}")
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RunError(f"{path}: unreadable JSON: {e}") from e
