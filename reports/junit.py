"""``junit.xml``: one test case per checker kind, so CI shows which check broke.

A kind with instances that the test does not allow is a failure carrying the
instances' explanations; an allowed kind with instances passes and says so in
its output; a verdict of "unknown" is an error on the ``verdict`` case, since
the run proved nothing either way.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from checkers.kind import CycleSearch, PerKey
from checkers.kinds import KINDS
from checkers.result import anomaly_counts
from reports.kinds import explain

# The kinds every check looks for (a workload's only in histories carrying
# its field; a search timeout is no anomaly): reported as passing cases when
# the checker does not list what it checked and found none of them.
BASE_KINDS = tuple(
    name
    for name, kind in KINDS.items()
    if isinstance(kind.finder, PerKey) or kind.finder is CycleSearch.CYCLE
)
MAX_LISTED = 50


def checked_kinds(results: Mapping[str, Any]) -> list[str]:
    """The kinds the checker looked for: its own list if it gives one, else
    :data:`BASE_KINDS`, plus every kind it reported or allowed."""
    stats = results.get("stats")
    listed = results.get("checked") or (
        stats.get("checked") if isinstance(stats, Mapping) else None
    )
    kinds = dict.fromkeys(listed or BASE_KINDS)
    kinds.update(dict.fromkeys(results.get("anomalies") or {}))
    kinds.update(dict.fromkeys(results.get("allowed") or ()))
    return list(kinds)


def junit_xml(results: Mapping[str, Any], suite: str) -> str:
    """The JUnit XML document for one run's results."""
    anomalies = results.get("anomalies") or {}
    allowed = set(results.get("allowed") or ())
    timings = results.get("timings") or {}
    root = ET.Element("testsuite", name=suite)
    failures = errors = 0
    verdict = ET.SubElement(root, "testcase", classname=suite, name="verdict")
    valid = results.get("valid")
    if valid == "unknown" or valid not in (True, False):
        errors += 1
        err = ET.SubElement(verdict, "error", message=f"verdict is {valid!r}", type="unknown")
        err.text = str(results.get("error") or "the checker could not decide")
    elif valid is False:
        failures += 1
        bad = sorted(k for k, v in anomalies.items() if v and k not in allowed)
        ET.SubElement(verdict, "failure", message="invalid: " + ", ".join(bad), type="invalid")
    kinds = checked_kinds(results)
    counts = anomaly_counts(results)
    for kind in kinds:
        instances = list(anomalies.get(kind) or ())
        case = ET.SubElement(root, "testcase", classname=suite, name=kind)
        t = timings.get(kind)
        if isinstance(t, int | float):
            case.set("time", f"{t:.3f}")
        if not instances:
            continue
        if kind in allowed:
            out = ET.SubElement(case, "system-out")
            out.text = f"{counts[kind]} instance(s), allowed for this test"
            continue
        failures += 1
        fail = ET.SubElement(
            case, "failure", type=kind, message=f"{counts[kind]} instance(s) of {kind}"
        )
        lines = [explain(kind), ""]
        for inst in instances[:MAX_LISTED]:
            text = inst.get("explanation") if isinstance(inst, Mapping) else None
            lines.append(f"- {text or inst}")
        if len(instances) > MAX_LISTED:
            lines.append(f"... and {len(instances) - MAX_LISTED} more (see results.json)")
        fail.text = "\n".join(lines)
    root.set("tests", str(len(kinds) + 1))
    root.set("failures", str(failures))
    root.set("errors", str(errors))
    total = timings.get("total")
    if isinstance(total, int | float):
        root.set("time", f"{total:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
