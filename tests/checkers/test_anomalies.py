"""Every anomaly kind is found under its Jepsen name, and its near miss is not.

All scenarios share two histories (one of anomalies, one of near misses), so
the suite pays for two Spark checks instead of thirty.
"""

from __future__ import annotations

from typing import Any

import pytest

from checkers import check
from tests.checkers import scenarios
from tests.checkers.helpers import kinds_at

pytestmark = [pytest.mark.spark, pytest.mark.slow]

NEAR = {
    **scenarios.NEAR_MISSES,
    "subscribed-poll-skip": scenarios.subscribed_poll_skip,
    "logged-offset-reset": scenarios.logged_offset_reset,
    "offset-reset-on-a-failed-op": scenarios.offset_reset_on_a_failed_op,
    "an-aborted-send-in-the-log": scenarios.an_aborted_send_in_the_log,
    "a-consumer-stuck-at-an-open-transaction": scenarios.a_consumer_stuck_at_an_open_transaction,
    "two-consumers-stuck-while-a-third-reads-on": (
        scenarios.two_consumers_stuck_while_a_third_reads_on
    ),
}


@pytest.fixture(scope="module")
def anomalies(spark) -> tuple[dict[str, Any], dict[str, int]]:
    h, keys = scenarios.build({n: s for n, (_, s) in scenarios.ANOMALIES.items()})
    return check(h.table(), spark=spark), keys


@pytest.fixture(scope="module")
def near_misses(spark) -> tuple[dict[str, Any], dict[str, int]]:
    h, keys = scenarios.build(NEAR)
    return check(h.table(), spark=spark), keys


@pytest.mark.parametrize("name", list(scenarios.ANOMALIES))
def test_anomaly_is_found(anomalies, name: str) -> None:
    result, keys = anomalies
    kind = scenarios.ANOMALIES[name][0]
    key = keys[name]
    found = [i for i in result["anomalies"].get(kind, []) if i.get("key") == key]
    assert found, f"{kind} not reported for scenario {name}: {result['anomalies'].keys()}"
    for inst in found:
        assert inst["explanation"] and str(key) in inst["explanation"]


@pytest.mark.parametrize("kind", ["inconsistent-offsets", "duplicate"])
def test_a_version_order_anomaly_says_when_it_became_evident(anomalies, kind: str) -> None:
    """The first read of a second value at the offset (or of the value at a
    second offset), not any later op that saw it again: where a shrink cuts."""
    result, keys = anomalies
    (inst,) = [i for i in result["anomalies"][kind] if i["key"] == keys[kind]]
    first_poll = min(o["time"] for o in inst["ops"] if o["mop"] == "poll")
    assert inst["evident"] == first_poll


def test_a_lost_write_is_evident_once_a_read_passed_it(anomalies) -> None:
    """Not at the highest read, which the instance names: at the first read
    past the lost value."""
    result, keys = anomalies
    (inst,) = [i for i in result["anomalies"]["lost-write"] if i["key"] == keys["lost-write"]]
    assert inst["value"] == 1 and inst["max_offset"] == 2
    # the drain before the highest read: an assign and a poll (1 ms a step) earlier
    assert inst["evident"] == inst["max_read"]["time"] - 4_000_000
    # an info writer is proven committed by a read on another key: no time here
    (torn,) = [i for i in result["anomalies"]["lost-write"] if i["key"] == keys["torn-txn"]]
    assert "evident" not in torn


def test_anomaly_history_is_invalid(anomalies) -> None:
    result, _ = anomalies
    assert result["valid"] is False
    assert set(result["allowed"]) == {"G0", "G0-process", "int-send-skip"}
    assert result["stats"]["anomaly_counts"]["poll-skip"] == 3


@pytest.mark.parametrize("name", [*scenarios.NEAR_MISSES, "an-aborted-send-in-the-log"])
def test_near_miss_is_not_flagged(near_misses, name: str) -> None:
    result, keys = near_misses
    k = keys[name]
    assert kinds_at(result, {k, k + 1}) == set()


@pytest.mark.parametrize(
    "name",
    ["a-consumer-stuck-at-an-open-transaction", "two-consumers-stuck-while-a-third-reads-on"],
)
def test_stuck_consumers_alone_show_no_hanging_transaction(near_misses, name: str) -> None:
    result, keys = near_misses
    assert kinds_at(result, {keys[name]}) == set()


def test_near_miss_history_is_valid(near_misses) -> None:
    result, _ = near_misses
    assert result["valid"] is True, result["anomalies"]


def test_subscribed_poll_skip_is_reported_but_allowed(near_misses) -> None:
    result, keys = near_misses
    (inst,) = result["anomalies"]["poll-skip"]
    assert inst["key"] == keys["subscribed-poll-skip"] and inst["allowed"] is True
    assert "subscribe" in result["allowed_why"]["poll-skip"]
    assert inst["skipped"] == [2]


@pytest.mark.parametrize("kind", ["nonmonotonic-poll", "int-nonmonotonic-poll"])
def test_a_logged_offset_reset_is_reported_but_allowed(near_misses, kind: str) -> None:
    result, keys = near_misses
    (inst,) = [i for i in result["anomalies"][kind] if i["key"] == keys["logged-offset-reset"]]
    assert inst["allowed"] is True
    assert inst["reset"] == {"from": 2, "to": 0}
    assert "offset reset of key" in inst["explanation"]
    assert "offset reset" in result["allowed_why"][kind]


def test_a_reset_logged_on_a_failed_op_between_allows_going_back(near_misses) -> None:
    result, keys = near_misses
    k = keys["offset-reset-on-a-failed-op"]
    (inst,) = [i for i in result["anomalies"]["nonmonotonic-poll"] if i["key"] == k]
    assert inst["allowed"] is True and inst["mode"] == "read"
    assert inst["reset"]["to"] == 0 and inst["reset"]["op"] < inst["op"]["index"]
    assert f"on op {inst['reset']['op']}" in inst["explanation"]


@pytest.mark.parametrize(
    ("name", "kind"),
    [("going-back-past-a-rollback", "nonmonotonic-poll"), ("skip-after-a-reset", "poll-skip")],
)
def test_a_reset_on_a_failed_op_explains_no_more_than_it_moved(anomalies, name, kind) -> None:
    result, keys = anomalies
    (inst,) = [i for i in result["anomalies"][kind] if i["key"] == keys[name]]
    assert not inst.get("allowed") and inst["reset"] is None


def test_explanations_name_ops(anomalies) -> None:
    result, keys = anomalies
    (lost,) = [i for i in result["anomalies"]["lost-write"] if i["key"] == keys["lost-write"]]
    assert lost["value"] == 1 and lost["writer"]["type"] == "ok"
    assert lost["explanation"].startswith(f"op {lost['writer']['index']} (process ")
    (torn,) = [i for i in result["anomalies"]["lost-write"] if i["key"] == keys["torn-txn"]]
    assert torn["writer"]["type"] == "info"
    (skip,) = [i for i in result["anomalies"]["poll-skip"] if i["key"] == keys["poll-skip"]]
    assert skip["skipped"] == [2] and skip["delta"] == 2
    (rewind,) = [
        i for i in result["anomalies"]["poll-skip"] if i["key"] == keys["poll-skip-after-abort"]
    ]
    assert rewind["mode"] == "rewind" and rewind["prev_op"]["type"] == "fail"


def test_a_read_of_a_refused_send_says_it_was_refused(anomalies) -> None:
    result, keys = anomalies
    (read,) = [i for i in result["anomalies"]["G1a"] if i["key"] == keys["refused-send-read"]]
    assert read["writer"]["type"] == "info" and read["refused_mop"] == 1
    assert "its send #1 was refused" in read["explanation"]
    (aborted,) = [i for i in result["anomalies"]["G1a"] if i["key"] == keys["G1a"]]
    assert "refused_mop" not in aborted and "an aborted write" in aborted["explanation"]


def test_stats_for_reports(anomalies) -> None:
    result, keys = anomalies
    stats = result["stats"]
    final = stats["unseen_series"][-1]["unseen"]
    assert final[str(keys["unseen"])] == 1
    assert stats["realtime_lag"]["worst"]["lag"] >= 0
    assert set(result["timings"]) >= {"cases", "cycles", "total"}
