"""The ``group`` workload's ops: consumer-group members that poll, commit what
they polled and, now and then, re-subscribe to random keys.

A group only makes progress between rebalances, and a rebalance only
completes once every member has served its callbacks inside a poll: members
re-subscribing every few ops (or polling for a moment only) keep the group
rebalancing forever, so nothing is ever assigned, polled or committed. Churn
is therefore ``--sub-p`` per op (1/64 by default: a re-subscribe every few
seconds) and a poll with nothing fetched waits long enough for a rebalance's
callbacks to run. Commits
and rebalance callbacks are recorded by the client (``commit``,
``rebalance_log``) for the checks of ``checkers.workloads.group``.
"""

from __future__ import annotations

from generator import Generator, Rand, map_ops
from workloads.generators import AssignNewProcesses, QueueOps

POLL_MS = 500  # the most a member's poll waits: long enough for a rebalance's callbacks


def _long_polls(op: dict) -> dict:
    return {**op, "poll_ms": POLL_MS} if op.get("f") == "poll" else op


def generator(keys: list[int], seed: int, sub_p: float) -> Generator:
    """Single sends and polls over ``keys`` by subscribed members; a member
    re-subscribes with chance ``sub_p`` per op."""
    ops = QueueOps(
        tuple(keys),
        Rand.derive(seed, "group/ops"),
        sub_p=sub_p,
        sub_via=("subscribe",),
    )
    return AssignNewProcesses(map_ops(_long_polls, ops), keys, "subscribe")
