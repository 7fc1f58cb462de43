"""A suite's outputs: one index page over all its runs and one JUnit file.

The suite runner decides what was expected and what happened; this module
only lays it out. A flaky case (the same seed gave different verdicts across
repeats) is its own class in both outputs, so it is never hidden by a pass.
A case of a suite stopped before it began is ``not-run``, and one stopped
between its repeats, all of them as expected so far, is ``stopped``: both
skipped in the JUnit file (the latter with the attempts it ran), and the
index says the suite was stopped.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jinja2

PACKAGE = Path(__file__).parent
_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(PACKAGE / "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"]),
    undefined=jinja2.StrictUndefined,
)


@dataclass(slots=True)
class Attempt:
    """One run of a case: its verdict (``valid``, ``invalid``, ``unknown`` or
    ``crashed``), the run folder, the anomaly counts, and any error."""

    verdict: str
    run: str | None = None
    anomalies: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0


@dataclass(slots=True)
class CaseOutcome:
    name: str
    settings: dict[str, Any]
    expect: list[str]
    attempts: list[Attempt] = field(default_factory=list)
    #: the attempts asked for (``--repeat``)
    repeat: int = 1

    @property
    def status(self) -> str:
        """``pass`` (every attempt as expected), ``fail`` (none), ``flaky``
        (some), ``not-run`` (no attempt: the suite was stopped first), or
        ``stopped`` (every attempt as expected, but the suite was stopped
        before the last: an unexpected verdict is reported however few ran)."""
        if not self.attempts:
            return "not-run"
        hits = [a.verdict in self.expect for a in self.attempts]
        if all(hits):
            return "pass" if len(hits) >= self.repeat else "stopped"
        return "flaky" if any(hits) else "fail"


def finished(cases: list[CaseOutcome]) -> int:
    """The cases that ran every attempt asked for (fewer: the suite was stopped)."""
    return sum(len(case.attempts) >= case.repeat for case in cases)


def _cut_short(case: CaseOutcome) -> bool:
    """Stopped between its repeats, whatever its attempts said."""
    return 0 < len(case.attempts) < case.repeat


def _how_far(case: CaseOutcome) -> str:
    return f"stopped after {len(case.attempts)} of {case.repeat} attempts"


def suite_junit(name: str, cases: list[CaseOutcome]) -> str:
    """One test case per suite case; a failure names the verdicts and runs, a
    flaky case is a failure whose message starts with ``flaky``, and a case
    not run is skipped."""
    root = ET.Element("testsuite", name=name, tests=str(len(cases)))
    failures = skipped = 0
    for case in cases:
        tc = ET.SubElement(
            root,
            "testcase",
            classname=name,
            name=case.name,
            time=f"{sum(a.seconds for a in case.attempts):.1f}",
        )
        verdicts = ", ".join(a.verdict for a in case.attempts)
        if case.status == "pass":
            continue
        if case.status == "not-run":
            skipped += 1
            ET.SubElement(tc, "skipped", message="not run: the suite was stopped before it")
            continue
        if case.status == "stopped":
            skipped += 1
            ET.SubElement(tc, "skipped", message=f"{_how_far(case)}: {verdicts}")
            continue
        failures += 1
        msg = f"{case.status}: expected {' or '.join(case.expect)}, got {verdicts}"
        if _cut_short(case):
            msg += f" ({_how_far(case)})"
        fail = ET.SubElement(tc, "failure", message=msg, type=case.status)
        fail.text = "\n".join(
            f"attempt {i + 1}: {a.verdict}"
            + (f" {a.anomalies}" if a.anomalies else "")
            + (f" ({a.error})" if a.error else "")
            + (f" in {a.run}" if a.run else "")
            for i, a in enumerate(case.attempts)
        )
    root.set("failures", str(failures))
    root.set("skipped", str(skipped))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def suite_index(name: str, cases: list[CaseOutcome], out_dir: Path) -> str:
    """The index page; run links are relative to ``out_dir`` so the store can move."""
    rows = []
    for case in cases:
        attempts = []
        for a in case.attempts:
            link = None
            if a.run:
                target = Path(a.run) / "report.html"
                link = _relative(target, out_dir)
            attempts.append({**asdict(a), "link": link})
        rows.append(
            {
                "name": case.name,
                "settings": case.settings,
                "expect": case.expect,
                "status": case.status,
                "attempts": attempts,
            }
        )
    statuses = ("pass", "flaky", "fail", "stopped", "not-run")
    counts = {s: sum(r["status"] == s for r in rows) for s in statuses}
    css = (PACKAGE / "static" / "report.css").read_text()
    return _env.get_template("suite.html.j2").render(
        name=name,
        rows=rows,
        counts=counts,
        finished=finished(cases),
        cut_short=sum(_cut_short(case) for case in cases),
        css=css,
    )


def _relative(target: Path, base: Path) -> str:
    return Path(os.path.relpath(target.resolve(), base.resolve())).as_posix()
