"""The queue client with real librdkafka clients against a reference broker subprocess."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from tests.client_threads import Snapshot, left_after
from workloads.client import QueueClient
from workloads.config import ClientConfig
from workloads.handles import Clients
from workloads.topics import KeyTopics

pytestmark = [pytest.mark.integration, pytest.mark.broker, pytest.mark.slow]

KEYS = (0, 1, 2, 3)


class Session:
    """One opened client issuing ops as one process."""

    def __init__(self, config: ClientConfig, process: int = 0) -> None:
        base = QueueClient(config)
        base.setup({})
        self.client = base.open({}, "n1")
        self.process = process

    def __call__(self, f: str, value: Any, **extra: Any) -> dict:
        op = {"type": "invoke", "process": self.process, "f": f, "value": value, **extra}
        done = self.client.invoke({}, op)
        assert done["process"] == op["process"] and done["f"] == f
        return done

    def poll_all(self, tries: int = 8) -> dict[int, list[list[int]]]:
        seen: dict[int, list[list[int]]] = {}
        for _ in range(tries):
            done = self("poll", [["poll"]], poll_ms=500)
            assert done["type"] == "ok", done
            for k, recs in done["value"][0][1].items():
                seen.setdefault(k, []).extend(recs)
        return seen

    def close(self) -> None:
        self.client.close({})


def config(bootstrap: str, **kw: Any) -> ClientConfig:
    return ClientConfig(
        bootstrap=bootstrap, keys=KEYS, op_timeout_s=kw.pop("op_timeout_s", 4.0), **kw
    )


def test_sends_and_polls_round_trip_with_offsets(broker: Any) -> None:
    s = Session(config(broker.bootstrap))
    try:
        assert s("assign", list(KEYS))["type"] == "ok"
        sent = [s("send", [["send", k % 4, k]]) for k in range(8)]
        assert all(d["type"] == "ok" for d in sent)
        offsets = {(d["value"][0][1], d["value"][0][2][1]): d["value"][0][2][0] for d in sent}
        assert all(o is not None for o in offsets.values())
        polled = s.poll_all()
        got = {(k, v): o for k, recs in polled.items() for o, v in recs}
        assert got == offsets
    finally:
        s.close()


def test_a_key_that_rotates_in_gets_its_topic_when_an_op_first_names_it(broker: Any) -> None:
    s = Session(config(broker.bootstrap))
    fresh, topic = 41, "jepka-t20"  # past KEYS: setup made no topic for it
    try:
        assert topic not in topics(broker.bootstrap)  # the broker creates none itself
        done = s("assign", [*KEYS, fresh])
        assert (done["type"], done["value"]) == ("ok", [*KEYS, fresh])
        assert topic in topics(broker.bootstrap)
        done = s("send", [["send", fresh + 1, 1], ["send", fresh, 2]])
        assert done["type"] == "ok", done
        assert [v for _, v in s.poll_all()[fresh]] == [2]
    finally:
        s.close()


def test_a_topic_the_cluster_refuses_fails_a_send_and_is_left_out_of_an_assign(
    broker: Any,
) -> None:
    """3 replicas on 1 broker: a send to the key fails, as nothing of it was
    done, naming the topic and why; an assign puts the consumer on the other
    keys and says so, and one with no other key fails and changes nothing."""
    client = QueueClient(config(broker.bootstrap, replication_factor=3)).open({}, "n1")
    try:
        op = {"type": "invoke", "process": 1, "f": "send", "value": [["send", 43, 1]]}
        done = client.invoke({}, op)
        assert done["type"] == "fail", done
        why = "invalid-replication-factor"
        assert done["error"] == "topics-not-created: jepka-t21: " + why
        op = {"type": "invoke", "process": 1, "f": "assign", "value": [43, *KEYS]}
        KeyTopics(config(broker.bootstrap)).setup()  # KEYS' topics, with one replica
        done = client.invoke({}, op)
        assert (done["type"], done["value"]) == ("ok", list(KEYS))
        assert "jepka-t21" not in topics(broker.bootstrap)
        op = {"type": "invoke", "process": 1, "f": "subscribe", "value": [43]}
        done = client.invoke({}, op)
        assert (done["type"], done["error"]) == ("fail", "topics-not-created: jepka-t21: " + why)
    finally:
        client.close({})


def topics(bootstrap: str) -> set[str]:
    with Clients() as clients:
        return set(clients.admin({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics)


def test_a_poll_returns_once_a_record_has_come_not_at_its_timeout(broker: Any) -> None:
    """As the Java consumer's poll: librdkafka's consume(n, timeout) alone
    would wait the whole 20 s for n records."""
    s = Session(config(broker.bootstrap, op_timeout_s=30.0))
    try:
        assert s("assign", [0])["type"] == "ok"
        assert s("send", [["send", 0, 7]])["type"] == "ok"
        t0 = time.monotonic()
        done = s("poll", [["poll"]], poll_ms=20_000)
        assert time.monotonic() - t0 < 20
        assert [v for _, v in done["value"][0][1][0]] == [7]
    finally:
        s.close()


def test_reassign_keeps_position_and_seek_to_beginning_rereads(broker: Any) -> None:
    s = Session(config(broker.bootstrap))
    try:
        s("assign", [0])
        for v in (1, 2):
            assert s("send", [["send", 0, v]])["type"] == "ok"
        first = s.poll_all(4)
        assert [v for _, v in first[0]] == [1, 2]
        s("assign", [0, 1])
        assert s.poll_all(3).get(0, []) == []
        s("assign", [0, 1], seek_to_beginning=True)
        assert [v for _, v in s.poll_all(4)[0]] == [1, 2]
    finally:
        s.close()


def test_an_out_of_range_position_reset_is_logged(broker: Any) -> None:
    """A position past the log end (as a stale leader's shorter log gives) is
    moved back by auto.offset.reset; the op that polled after it says so."""
    s = Session(config(broker.bootstrap))
    try:
        for v in (1, 2):
            assert s("send", [["send", 0, v]])["type"] == "ok"
        assert s.client.consumer is not None
        s.client.consumer.start = 50
        s("assign", [0])
        polls = [s("poll", [["poll"]], poll_ms=500) for _ in range(6)]
        resets = [r for p in polls for r in p.get("offset_resets", [])]
        assert resets == [{"key": 0, "from": 50, "to": 0}]
        polled = [rec for p in polls for rec in p["value"][0][1].get(0, [])]
        assert polled == [[0, 1], [1, 2]]
    finally:
        s.close()


def test_transactions_commit_abort_and_roll_the_consumer_back(broker: Any) -> None:
    s = Session(config(broker.bootstrap, transactional=True))
    try:
        s("assign", list(KEYS))
        assert s("txn", [["send", 0, 1], ["send", 1, 1]])["type"] == "ok"
        aborted = s("txn", [["send", 0, 2], ["send", 1, 2]], abort=True)
        assert aborted["type"] == "fail" and aborted["error"] == "intentional-abort"
        # its records reached the log before the abort: there is something to hide
        assert all(isinstance(mop[2][0], int) for mop in aborted["value"])
        # a txn that polls and then aborts must leave the position where it was
        undone = s("txn", [["poll"], ["poll"], ["send", 2, 9]], abort=True, poll_ms=1000)
        assert undone["type"] == "fail"
        assert undone["value"][2][:2] == ["send", 2]
        assert isinstance(undone["value"][2][2][0], int)  # in the log before the abort
        undone_reads = {
            k for mop in undone["value"] if mop[0] == "poll" and len(mop) == 2 for k in mop[1]
        }
        assert undone_reads, "the aborted txn should have polled something"
        polled = s.poll_all(4)
        values = {k: [v for _, v in recs] for k, recs in polled.items()}
        assert values.get(0) == [1] and values.get(1) == [1]  # re-read after rollback
        # read_committed: the aborted records are in the log, and hidden
        assert 2 not in values.get(0, []) and 9 not in values.get(2, [])
        # final reads are plain read_committed polls, outside any transaction
        s("assign", list(KEYS), seek_to_beginning=True)
        final = s("poll", [["poll"]], poll_ms=2000, final=True)
        assert final["type"] == "ok" and [v for _, v in final["value"][0][1][0]] == [1]
        # the ends reached, with the producers' bound on an open transaction; a
        # partition's end comes with a fetch that reaches it, which a busy
        # machine may not answer within one poll
        for _ in range(10):
            again = s("poll", [["poll"]], poll_ms=1000, final=True)
            if "0" in again.get("ends", {}):
                break
        end, high = again["ends"]["0"]
        assert end == high > 0
        assert again["txn_timeout_ms"] == s.client.config.txn_timeout_ms
    finally:
        s.close()


def test_a_dead_broker_gives_unknown_not_failure(broker: Any) -> None:
    s = Session(config(broker.bootstrap, op_timeout_s=3.0))
    try:
        s("assign", list(KEYS))
        assert s("send", [["send", 0, 1]])["type"] == "ok"
        broker.kill()
        done = s("send", [["send", 0, 2]])
        assert done["type"] == "info", done
        assert done["value"] == [["send", 0, [None, 2]]]
    finally:
        s.close()


def test_crash_op_ends_the_process(broker: Any) -> None:
    s = Session(config(broker.bootstrap))
    try:
        done = s("crash", None)
        assert done["type"] == "info" and done["end_process"] is True
    finally:
        s.close()


def test_group_members_record_rebalances_and_commits(broker: Any) -> None:
    s = Session(config(broker.bootstrap, group_id="members"))
    try:
        assert s("send", [["send", 0, 1]])["type"] == "ok"
        assert s("subscribe", [0, 1])["type"] == "ok"
        log, commits = [], []
        for _ in range(12):
            done = s("poll", [["poll"]], poll_ms=1000)
            assert done["type"] == "ok", done
            log += done.get("rebalance_log", [])
            if "commit" in done:
                commits.append(done["commit"])
            if commits:
                break
        assert {"type": "assigned", "keys": [0, 1]} in log
        assert commits and commits[0]["type"] == "ok"
        assert commits[0]["offsets"] == {"0": 1} and commits[0]["member"]
    finally:
        s.close()


def test_assign_after_subscribe_really_assigns(broker: Any) -> None:
    """librdkafka's late revoke after an unsubscribe must not wipe the assign
    that the final reads depend on."""
    s = Session(config(broker.bootstrap, group_id="switch"))
    try:
        assert s("send", [["send", 1, 5]])["type"] == "ok"
        s("subscribe", [0, 1])
        for _ in range(4):
            s("poll", [["poll"]], poll_ms=1000)
        s("assign", [0, 1], seek_to_beginning=True)
        polled = s.poll_all(6)
        assert [v for _, v in polled.get(1, [])] == [5]
    finally:
        s.close()


def test_subscribe_after_assign_joins_the_group(broker: Any) -> None:
    s = Session(config(broker.bootstrap, group_id="joiner"))
    try:
        assert s("send", [["send", 0, 3]])["type"] == "ok"
        s("assign", [0])
        assert s("subscribe", [0, 1])["type"] == "ok"
        log = []
        for _ in range(8):
            done = s("poll", [["poll"]], poll_ms=1000)
            assert done["type"] == "ok", done
            log += done.get("rebalance_log", [])
            if log:
                break
        assert {"type": "assigned", "keys": [0, 1]} in log
    finally:
        s.close()


def test_a_txn_cut_off_from_its_coordinator_ends_its_process_and_frees_its_producer(
    broker: Any,
) -> None:
    """A txn whose broker stops answering ends ``info`` and ends its process;
    closing the client then frees the producer at once, though its transaction
    cannot be aborted: no reference to it may be kept (confluent-kafka keeps
    the exception being handled when one of its calls raises inside
    ``except``, and with it the frames that hold the client)."""
    before = Snapshot.take()
    s = Session(config(broker.bootstrap, transactional=True, op_timeout_s=3.0))
    s("assign", list(KEYS))
    assert s("txn", [["send", 0, 1]])["type"] == "ok"
    os.kill(broker.proc.pid, signal.SIGSTOP)
    try:
        done = s("txn", [["send", 0, 2]])
        s.close()
        del s
        left = left_after(before, 2.0)
    finally:
        os.kill(broker.proc.pid, signal.SIGCONT)
    assert done["type"] == "info" and done.get("end_process"), done
    assert left == []
