from __future__ import annotations

import xml.etree.ElementTree as ET

from reports.junit import BASE_KINDS, junit_xml
from tests.reports.conftest import queue_history, queue_results


def _cases(xml: str) -> tuple[ET.Element, dict[str, ET.Element]]:
    root = ET.fromstring(xml)
    return root, {c.get("name"): c for c in root.iter("testcase")}


def test_invalid_run_fails_exactly_the_forbidden_kinds() -> None:
    _, marks = queue_history(lose=True)
    root, cases = _cases(junit_xml(queue_results(True), "jepka.queue"))
    assert {*BASE_KINDS, "verdict"} == set(cases)
    assert root.get("tests") == str(len(cases)) and root.get("failures") == "5"
    failed = {n for n, c in cases.items() if c.find("failure") is not None}
    assert failed == {"verdict", "lost-write", "unseen", "int-poll-skip", "G1c-realtime"}
    lost = cases["lost-write"].find("failure")
    assert lost.get("message") == "1 instance(s) of lost-write"
    assert f"op {marks['send-3']} (process 0) sent 3 to key 0" in lost.text
    assert "acknowledged was never read" in lost.text  # the kind's plain explanation
    assert cases["G0"].find("failure") is None
    assert "allowed" in cases["G0"].find("system-out").text
    assert cases["verdict"].find("failure").get("message") == (
        "invalid: G1c-realtime, int-poll-skip, lost-write, unseen"
    )


def test_valid_and_unknown_verdicts() -> None:
    root, cases = _cases(junit_xml(queue_results(False), "s"))
    assert root.get("failures") == "0" and root.get("errors") == "0"
    assert all(c.find("failure") is None for c in cases.values())
    root, cases = _cases(
        junit_xml({"valid": "unknown", "error": "cycle search timed out", "checked": ["G1c"]}, "s")
    )
    assert set(cases) == {"verdict", "G1c"} and root.get("errors") == "1"
    assert cases["verdict"].find("error").text == "cycle search timed out"


def test_long_instance_lists_are_capped() -> None:
    results = {
        "valid": False,
        "anomalies": {"duplicate": [{"explanation": f"dup {i}"} for i in range(120)]},
    }
    _, cases = _cases(junit_xml(results, "s"))
    text = cases["duplicate"].find("failure").text
    assert "dup 49" in text and "dup 50" not in text and "70 more" in text


def test_a_capped_kind_is_counted_by_the_checkers_total() -> None:
    results = queue_results(True)
    stored = len(results["anomalies"]["lost-write"])
    results["stats"]["anomaly_counts"]["lost-write"] = stored + 278
    _, cases = _cases(junit_xml(results, "s"))
    message = cases["lost-write"].find("failure").get("message")
    assert message == f"{stored + 278} instance(s) of lost-write"
