"""Small hand-written histories: for every anomaly kind one scenario that shows
it and one near miss that must not be flagged.

Each scenario writes only to its own keys and processes (``k``, ``k + 1``;
``p``, ``p + 1``, ...), so many can share one history and one check.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.checkers.dsl import History, poll, send

Scenario = Callable[[History, int, int], None]


def _three(h: History, k: int, p: int) -> None:
    h.txn(p, [send(k, 1, 0), send(k, 2, 1), send(k, 3, 2)])


def _drain(h: History, p: int, k: int, records: list[tuple[int, int]]) -> None:
    h.assign(p, [k])
    h.txn(p, [poll({k: records})])


# -- anomalies -----------------------------------------------------------------


def inconsistent_offsets(h: History, k: int, p: int) -> None:
    h.txn(p, [send(k, 1, 0)])
    _drain(h, p + 1, k, [(0, 2)])  # evident here
    _drain(h, p + 2, k, [(0, 2)])


def duplicate(h: History, k: int, p: int) -> None:
    h.txn(p, [send(k, 1, 0)])
    _drain(h, p + 1, k, [(0, 1), (1, 1)])  # evident here
    _drain(h, p + 2, k, [(1, 1)])


def lost_write(h: History, k: int, p: int) -> None:
    h.txn(p, [send(k, 1, 0)])
    h.txn(p, [send(k, 2, 1)])
    h.txn(p, [send(k, 3, 2)])
    _drain(h, p + 1, k, [(1, 2)])  # evident here
    _drain(h, p + 2, k, [(2, 3)])


def torn_txn(h: History, k: int, p: int) -> None:
    """An indeterminate txn whose write to k+1 was read but whose write to k was
    not, though a later record of k was: it committed, yet part of it is lost."""
    h.txn(p, [send(k, 1, 0), send(k + 1, 1, 0)], "info")
    h.txn(p + 1, [send(k, 2, 1)])
    _drain(h, p + 2, k, [(1, 2)])
    _drain(h, p + 3, k + 1, [(0, 1)])


def unseen(h: History, k: int, p: int) -> None:
    h.txn(p, [send(k, 1, 0)])


def g1a(h: History, k: int, p: int) -> None:
    h.txn(p, [send(k, 1, 0)], "fail")
    _drain(h, p + 1, k, [(0, 1)])


def refused_send_read(h: History, k: int, p: int) -> None:
    """A send op is info as a whole (its write to k+1 was delivered), but its
    client saw its write to k refused, and that write is read."""
    h.txn(p, [send(k + 1, 1, 0), send(k, 1, None)], "info", refused=[1])
    _drain(h, p + 1, k, [(0, 1)])
    _drain(h, p + 2, k + 1, [(0, 1)])


def precommitted_read(h: History, k: int, p: int) -> None:
    h.assign(p, [k])
    h.txn(p, [send(k, 1, 0), poll({k: [(0, 1)]})])


def int_poll_skip(h: History, k: int, p: int) -> None:
    _three(h, k, p)
    _drain(h, p + 1, k, [(0, 1), (2, 3)])
    _drain(h, p + 2, k, [(0, 1), (1, 2), (2, 3)])


def int_nonmonotonic_poll(h: History, k: int, p: int) -> None:
    h.txn(p, [send(k, 1, 0), send(k, 2, 1)])
    _drain(h, p + 1, k, [(1, 2), (0, 1)])


def poll_skip(h: History, k: int, p: int) -> None:
    _three(h, k, p)
    h.assign(p + 1, [k])
    h.txn(p + 1, [poll({k: [(0, 1)]})])
    h.txn(p + 1, [poll({k: [(2, 3)]})])
    _drain(h, p + 2, k, [(0, 1), (1, 2), (2, 3)])


def poll_skip_after_abort(h: History, k: int, p: int) -> None:
    """A failed txn polled from offset 0; the next op should start there again."""
    _three(h, k, p)
    h.assign(p + 1, [k])
    h.txn(p + 1, [poll({k: [(0, 1)]}), send(k + 1, 9, None)], "fail")
    h.txn(p + 1, [poll({k: [(1, 2), (2, 3)]})])
    _drain(h, p + 2, k, [(0, 1), (1, 2), (2, 3)])


def nonmonotonic_poll(h: History, k: int, p: int) -> None:
    h.txn(p, [send(k, 1, 0), send(k, 2, 1)])
    h.assign(p + 1, [k])
    h.txn(p + 1, [poll({k: [(0, 1), (1, 2)]})])
    h.txn(p + 1, [poll({k: [(1, 2)]})])


def nonmonotonic_send(h: History, k: int, p: int) -> None:
    h.txn(p, [send(k, 1, 1)])
    h.txn(p, [send(k, 2, 0)])
    _drain(h, p + 1, k, [(0, 2), (1, 1)])


def int_send_skip(h: History, k: int, p: int) -> None:
    a = h.invoke(p, "send", [send(k, 1, 0), send(k, 3, 2)])
    h.txn(p + 1, [send(k, 2, 1)])
    h.complete(a, "ok", [send(k, 1, 0), send(k, 3, 2)])
    _drain(h, p + 2, k, [(0, 1), (1, 2), (2, 3)])


def int_nonmonotonic_send(h: History, k: int, p: int) -> None:
    h.txn(p, [send(k, 1, 1), send(k, 2, 0)])
    _drain(h, p + 1, k, [(0, 2), (1, 1)])


def going_back_past_a_rollback(h: History, k: int, p: int) -> None:
    """A failed op logged a reset after its first record, so its rollback
    undid it: the next op going back further is not explained."""
    h.txn(p, [send(k, 1, 0), send(k, 2, 1), send(k, 3, 2)])
    h.assign(p + 1, [k])
    h.txn(p + 1, [poll({k: [(0, 1)]})])
    reset = [{"key": k, "from": 3, "to": 0}]
    h.txn(p + 1, [poll({k: [(1, 2), (2, 3), (0, 1)]})], op_type="fail", offset_resets=reset)
    h.txn(p + 1, [poll({k: [(0, 1), (1, 2), (2, 3)]})])


def skip_after_a_reset(h: History, k: int, p: int) -> None:
    """A reset only moves a position back: one logged on a failed op in
    between does not explain the next op skipping ahead."""
    h.txn(p, [send(k, 1, 0), send(k, 2, 1), send(k, 3, 2)])
    h.assign(p + 1, [k])
    h.txn(p + 1, [poll({k: [(0, 1)]})])
    reset = [{"key": k, "from": 2, "to": 0}]
    h.txn(p + 1, [poll({k: [(1, 2), (0, 1)]})], op_type="fail", offset_resets=reset)
    h.txn(p + 1, [poll({k: [(2, 3)]})])


def _final_reads(
    h: History, ps: list[int], k: int, end: int, high: int, after_s: float = 0
) -> None:
    """Final reads of nothing, ``after_s`` later, one by each process of
    ``ps``, whose consumers report their end of ``k`` (producers'
    transaction timeout 1 s: an end held over 16 s hangs)."""
    h.clock += int(after_s * 1e9)
    for p in ps:
        h.txn(p, [poll({})], ends={str(k): [end, high]}, txn_timeout_ms=1000)


def hanging_transaction(h: History, k: int, p: int) -> None:
    """Offset 1 is a transaction nobody ends: two consumers see the end held
    there for 20 s of final reads, and the record after it stays unread."""
    h.txn(p, [send(k, 1, 0)])
    h.txn(p + 1, [send(k, 2, 2)])
    _drain(h, p + 2, k, [(0, 1)])
    _drain(h, p + 3, k, [(0, 1)])
    _final_reads(h, [p + 2, p + 3], k, 1, 3)
    _final_reads(h, [p + 2, p + 3], k, 1, 3, after_s=20)


ANOMALIES: dict[str, tuple[str, Scenario]] = {
    "inconsistent-offsets": ("inconsistent-offsets", inconsistent_offsets),
    "duplicate": ("duplicate", duplicate),
    "lost-write": ("lost-write", lost_write),
    "torn-txn": ("lost-write", torn_txn),
    "unseen": ("unseen", unseen),
    "hanging-transaction": ("hanging-transaction", hanging_transaction),
    "G1a": ("G1a", g1a),
    "refused-send-read": ("G1a", refused_send_read),
    "precommitted-read": ("precommitted-read", precommitted_read),
    "int-poll-skip": ("int-poll-skip", int_poll_skip),
    "int-nonmonotonic-poll": ("int-nonmonotonic-poll", int_nonmonotonic_poll),
    "poll-skip": ("poll-skip", poll_skip),
    "poll-skip-after-abort": ("poll-skip", poll_skip_after_abort),
    "nonmonotonic-poll": ("nonmonotonic-poll", nonmonotonic_poll),
    "going-back-past-a-rollback": ("nonmonotonic-poll", going_back_past_a_rollback),
    "skip-after-a-reset": ("poll-skip", skip_after_a_reset),
    "nonmonotonic-send": ("nonmonotonic-send", nonmonotonic_send),
    "int-send-skip": ("int-send-skip", int_send_skip),
    "int-nonmonotonic-send": ("int-nonmonotonic-send", int_nonmonotonic_send),
}

# -- near misses: each looks like its kind but is legitimate -------------------


def near_inconsistent_offsets(h: History, k: int, p: int) -> None:
    """An indeterminate send's claimed offset is no evidence: it never committed."""
    h.txn(p, [send(k, 2, 0)], "info")
    h.txn(p + 1, [send(k, 1, 0)])
    _drain(h, p + 2, k, [(0, 1)])


def near_duplicate(h: History, k: int, p: int) -> None:
    """Values are unique per key only: the same value on two keys is fine."""
    h.txn(p, [send(k, 1, 0), send(k + 1, 1, 0)])
    _drain(h, p + 1, k, [(0, 1)])
    _drain(h, p + 2, k + 1, [(0, 1)])


def near_lost_write(h: History, k: int, p: int) -> None:
    """An indeterminate write nobody read is not lost: it may never have happened."""
    h.txn(p, [send(k, 1, 0)], "info")
    h.txn(p + 1, [send(k, 2, 1)])
    _drain(h, p + 2, k, [(1, 2)])


def near_unseen(h: History, k: int, p: int) -> None:
    """Read late, but read: and an unread failed send never counts."""
    h.txn(p, [send(k, 1, 0)])
    h.txn(p, [send(k, 7, None)], "fail")
    _drain(h, p + 1, k, [(0, 1)])


def near_g1a(h: History, k: int, p: int) -> None:
    """Reading an indeterminate txn's write is fine: it committed after all."""
    h.txn(p, [send(k, 1, 0)], "info")
    _drain(h, p + 1, k, [(0, 1)])


def near_refused_send_read(h: History, k: int, p: int) -> None:
    """Reading the send of an info op that was not refused is fine, though
    another of its sends was."""
    h.txn(p, [send(k, 1, None), send(k + 1, 1, None)], "info", refused=[1])
    _drain(h, p + 1, k, [(0, 1)])


def near_precommitted_read(h: History, k: int, p: int) -> None:
    """A txn polling the key it writes, but only records committed before."""
    h.txn(p, [send(k, 1, 0)])
    h.assign(p + 1, [k])
    h.txn(p + 1, [send(k, 2, 1), poll({k: [(0, 1)]})])
    _drain(h, p + 2, k, [(0, 1), (1, 2)])


def near_int_poll_skip(h: History, k: int, p: int) -> None:
    """Offsets are sparse (offset 1 holds a transaction marker): no skip."""
    h.txn(p, [send(k, 1, 0), send(k, 3, 2)])
    _drain(h, p + 1, k, [(0, 1), (2, 3)])


def near_int_nonmonotonic_poll(h: History, k: int, p: int) -> None:
    """A rebalance during the poll: positions may move, so no judgement."""
    h.txn(p, [send(k, 1, 0), send(k, 2, 1)])
    h.subscribe(p + 1, [k])
    h.txn(
        p + 1,
        [poll({k: [(1, 2), (0, 1)]})],
        rebalance_log=[{"type": "assigned", "keys": [k]}],
    )


def near_poll_skip(h: History, k: int, p: int) -> None:
    """An aborted txn followed by a correct rewind, and a reassign that moves on."""
    _three(h, k, p)
    h.assign(p + 1, [k])
    h.txn(p + 1, [poll({k: [(0, 1)]})])
    h.txn(p + 1, [poll({k: [(1, 2)]}), send(k + 1, 9, None)], "fail")
    h.txn(p + 1, [poll({k: [(1, 2)]})])
    h.assign(p + 1, [k])
    h.txn(p + 1, [poll({k: [(0, 1), (1, 2), (2, 3)]})])


def near_nonmonotonic_poll(h: History, k: int, p: int) -> None:
    """A reassign that legitimately rewinds (assign restarts from the committed
    position), and a subscriber whose key was rebalanced mid-stream."""
    h.txn(p, [send(k, 1, 0), send(k, 2, 1)])
    h.assign(p + 1, [k])
    h.txn(p + 1, [poll({k: [(0, 1), (1, 2)]})])
    h.assign(p + 1, [k])
    h.txn(p + 1, [poll({k: [(0, 1)]})])
    h.subscribe(p + 2, [k])
    h.txn(p + 2, [poll({k: [(0, 1), (1, 2)]})])
    h.txn(p + 2, [poll({k: [(1, 2)]})], rebalance_log=[{"type": "assigned", "keys": [k]}])


def near_nonmonotonic_send(h: History, k: int, p: int) -> None:
    """Two concurrent producers may land in either order; one producer across
    two keys too."""
    a = h.invoke(p, "send", [send(k, 1, 1)])
    h.txn(p + 1, [send(k, 2, 0)])
    h.complete(a, "ok", [send(k, 1, 1)])
    h.txn(p, [send(k + 1, 3, 0)])
    _drain(h, p + 2, k, [(0, 2), (1, 1)])
    _drain(h, p + 3, k + 1, [(0, 3)])


def near_int_send_skip(h: History, k: int, p: int) -> None:
    """A transaction's sends around a marker offset are still adjacent."""
    h.txn(p, [send(k, 1, 0), send(k, 2, 2)])
    _drain(h, p + 1, k, [(0, 1), (2, 2)])


def near_int_nonmonotonic_send(h: History, k: int, p: int) -> None:
    """Sends to different keys in one txn are not ordered against each other."""
    h.txn(p, [send(k, 1, 1), send(k + 1, 2, 0)])
    _drain(h, p + 1, k, [(1, 1)])
    _drain(h, p + 2, k + 1, [(0, 2)])


def subscribed_poll_skip(h: History, k: int, p: int) -> None:
    """A skip on a subscribed key: reported, but allowed (rebalances move positions)."""
    _three(h, k, p)
    h.subscribe(p + 1, [k])
    h.txn(p + 1, [poll({k: [(0, 1)]})])
    h.txn(p + 1, [poll({k: [(2, 3)]})])
    _drain(h, p + 2, k, [(0, 1), (1, 2), (2, 3)])


def logged_offset_reset(h: History, k: int, p: int) -> None:
    """A consumer moved back by auto.offset.reset, which it logged: its polls
    that go back, across ops and inside one, are reported but allowed."""
    h.txn(p, [send(k, 1, 0), send(k, 2, 1)])
    h.assign(p + 1, [k])
    h.txn(p + 1, [poll({k: [(0, 1), (1, 2)]})])
    reset = [{"key": k, "from": 2, "to": 0}]
    h.txn(p + 1, [poll({k: [(0, 1)]})], offset_resets=reset)
    h.txn(p + 1, [poll({k: [(1, 2)]}), poll({k: [(0, 1), (1, 2)]})], offset_resets=reset)


def offset_reset_on_a_failed_op(h: History, k: int, p: int) -> None:
    """The reset logged on a failed transaction between two OK polls: the
    second, going back, is reported but allowed too."""
    h.txn(p, [send(k, 1, 0), send(k, 2, 1)])
    h.assign(p + 1, [k])
    h.txn(p + 1, [poll({k: [(0, 1), (1, 2)]})])
    reset = [{"key": k, "from": 2, "to": 0}]
    h.txn(p + 1, [poll({k: [(0, 1)]})], op_type="fail", offset_resets=reset)
    h.txn(p + 1, [poll({k: [(0, 1), (1, 2)]})])


def near_hanging_transaction(h: History, k: int, p: int) -> None:
    """Transactions open at offsets 1 and 2, each for less than the timeout
    and its slack (10 s, then 10 s more at the next offset), then aborted:
    the end reaches the high watermark and the record after them is read."""
    h.txn(p, [send(k, 1, 0)])
    h.txn(p + 1, [send(k, 2, 3)])
    readers = [p + 2, p + 3]
    for r in readers:
        _drain(h, r, k, [(0, 1)])
    _final_reads(h, readers, k, 1, 4)
    _final_reads(h, readers, k, 1, 4, after_s=10)
    _final_reads(h, readers, k, 2, 4, after_s=1)
    _final_reads(h, readers, k, 2, 4, after_s=10)
    for r in readers:
        h.txn(r, [poll({k: [(3, 2)]})], ends={str(k): [4, 4]}, txn_timeout_ms=1000)


def an_aborted_send_in_the_log(h: History, k: int, p: int) -> None:
    """A transaction aborted after its send reached the log: the record keeps
    its offset (2; 1 and 3 hold the markers), read_committed readers pass
    over it, and it is neither lost nor unseen nor a skip."""
    h.txn(p, [send(k, 1, 0)])
    h.txn(p, [send(k, 7, 2)], "fail")
    h.txn(p, [send(k, 3, 4)])
    _drain(h, p + 1, k, [(0, 1), (4, 3)])


def _stuck(h: History, ps: list[int], k: int, end: int, high: int, every_s: float, n: int):
    """``n`` rounds of final reads ``every_s`` apart, by consumers whose
    fetches stopped: each reports the same end again."""
    for _ in range(n):
        _final_reads(h, ps, k, end, high, after_s=every_s)


def a_consumer_stuck_at_an_open_transaction(h: History, k: int, p: int) -> None:
    """One consumer keeps reporting the end it last reached for 25 s, while
    another had read past it before: one witness is not enough."""
    h.txn(p, [send(k, 1, 0)])
    h.txn(p + 1, [send(k, 2, 2)])
    _drain(h, p + 2, k, [(0, 1)])
    h.txn(p + 3, [poll({k: [(0, 1), (2, 2)]})], ends={str(k): [3, 3]}, txn_timeout_ms=1000)
    _stuck(h, [p + 2], k, 1, 3, every_s=5, n=6)


def two_consumers_stuck_while_a_third_reads_on(h: History, k: int, p: int) -> None:
    """Two consumers keep reporting the end they last reached for 25 s; a
    third reads past it 5 s in: the last stable offset moved on."""
    h.txn(p, [send(k, 1, 0)])
    h.txn(p + 1, [send(k, 2, 2)])
    for r in (p + 2, p + 3, p + 4):
        _drain(h, r, k, [(0, 1)])
    _final_reads(h, [p + 2, p + 3, p + 4], k, 1, 3)
    _final_reads(h, [p + 2, p + 3], k, 1, 3, after_s=5)
    h.txn(p + 4, [poll({k: [(2, 2)]})], ends={str(k): [3, 3]}, txn_timeout_ms=1000)
    _stuck(h, [p + 2, p + 3], k, 1, 3, every_s=5, n=5)


NEAR_MISSES: dict[str, Scenario] = {
    "inconsistent-offsets": near_inconsistent_offsets,
    "duplicate": near_duplicate,
    "lost-write": near_lost_write,
    "unseen": near_unseen,
    "hanging-transaction": near_hanging_transaction,
    "G1a": near_g1a,
    "refused-send-read": near_refused_send_read,
    "precommitted-read": near_precommitted_read,
    "int-poll-skip": near_int_poll_skip,
    "int-nonmonotonic-poll": near_int_nonmonotonic_poll,
    "poll-skip": near_poll_skip,
    "nonmonotonic-poll": near_nonmonotonic_poll,
    "nonmonotonic-send": near_nonmonotonic_send,
    "int-send-skip": near_int_send_skip,
    "int-nonmonotonic-send": near_int_nonmonotonic_send,
}


def build(scenarios: dict[str, Scenario]) -> tuple[History, dict[str, int]]:
    """One history holding every scenario; returns it and each scenario's key."""
    h = History()
    keys = {}
    for i, (name, scenario) in enumerate(scenarios.items()):
        keys[name] = 10 * i
        scenario(h, 10 * i, 10 * i)
    return h, keys
