"""Model-based property test of the transaction and group coordinators together.

Hypothesis draws sequences of client operations on two transactional ids —
InitProducerId, AddPartitionsToTxn, transactional offset commits, EndTxn,
requests from a fenced epoch — and broker restarts, and runs them against the
real coordinators on real storage (in-process). After every step the
coordinators must agree with a small model: each id's state and epoch, and the
group's committed offset, which only committed transactions may move.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.coordinator.group.offsets import CommittedOffset
from broker.coordinator.service import CoordinatorService
from broker.coordinator.txn.state import TransactionState
from broker.errors import ErrorCode, KafkaError
from tests.broker.coordinator.test_loading import close_broker, open_broker

S = TransactionState
IDS = ("tx-a", "tx-b")
GROUP, TP = "g", ("d", 0)


@dataclass
class TxnModel:
    epoch: int = -1
    state: str = "none"  # none | empty | ongoing | committed | aborted
    offset: int | None = None  # pending transactional offset


@dataclass
class Model:
    txns: dict[str, TxnModel] = field(default_factory=lambda: {i: TxnModel() for i in IDS})
    committed: int | None = None


ops = st.lists(
    st.one_of(
        st.tuples(st.just("init"), st.sampled_from(IDS)),
        st.tuples(st.just("add"), st.sampled_from(IDS)),
        st.tuples(st.just("offsets"), st.sampled_from(IDS), st.integers(0, 1000)),
        st.tuples(st.just("end"), st.sampled_from(IDS), st.booleans()),
        st.tuples(st.just("stale"), st.sampled_from(IDS)),
        st.tuples(st.just("restart")),
    ),
    min_size=1,
    max_size=25,
)


async def settled(service: CoordinatorService, txn_id: str) -> None:
    """Waits for markers and the Complete record after a decision."""
    shard = service.txn.runtime.shard_for(txn_id)
    for _ in range(500):
        md = shard.transactions.get(txn_id)
        if md is None or not (md.state.is_prepare or md.pending):
            return
        await asyncio.sleep(0.002)
    raise AssertionError(f"{txn_id} never completed")


async def apply(service: CoordinatorService, model: Model, op: tuple) -> None:
    kind, txn_id = op[0], op[1] if len(op) > 1 else ""
    txn, m = service.txn, model.txns.get(txn_id, TxnModel())
    pid = txn.describe(txn_id).producer_id if m.state != "none" else -1
    if kind == "init":
        try:
            await txn.init_producer_id(txn_id, 60_000, -1, -1)
        except KafkaError as exc:
            assert exc.code == ErrorCode.concurrent_transactions and m.state == "ongoing"
            await settled(service, txn_id)
            await txn.init_producer_id(txn_id, 60_000, -1, -1)
            m.epoch += 1  # the fence
        m.epoch, m.state, m.offset = m.epoch + 1, "empty", None
    elif kind in ("add", "offsets") and m.state != "none":
        if kind == "add":
            await txn.add_partitions(txn_id, pid, m.epoch, {TP})
        else:
            await txn.add_offsets(txn_id, pid, m.epoch, GROUP)
            result = await service.group.commit_txn_offsets(
                GROUP, pid, m.epoch, -1, "", None, {TP: CommittedOffset(op[2], -1, "", 0)}
            )
            assert result == {TP: ErrorCode.none}
            m.offset = op[2]
        m.state = "ongoing"
    elif kind == "end" and m.state != "none":
        commit = op[2]
        try:
            await txn.end_txn(txn_id, pid, m.epoch, commit)
        except KafkaError as exc:
            done = "committed" if commit else "aborted"
            assert exc.code == ErrorCode.invalid_txn_state and m.state not in ("ongoing", done)
            return
        if m.state == "ongoing":
            await settled(service, txn_id)
            if commit and m.offset is not None:
                model.committed = m.offset
            m.state, m.offset = ("committed" if commit else "aborted"), None
        else:
            assert m.state == ("committed" if commit else "aborted")  # a retried EndTxn
    elif kind == "stale" and m.epoch > 0:
        try:
            await txn.add_partitions(txn_id, pid, m.epoch - 1, {TP})
            raise AssertionError("an older epoch was accepted")
        except KafkaError as exc:
            assert exc.code == ErrorCode.producer_fenced


def check(service: CoordinatorService, model: Model) -> None:
    names = {
        "empty": S.EMPTY,
        "ongoing": S.ONGOING,
        "committed": S.COMPLETE_COMMIT,
        "aborted": S.COMPLETE_ABORT,
    }
    for txn_id, m in model.txns.items():
        if m.state == "none":
            continue
        snapshot = service.txn.describe(txn_id)
        assert (snapshot.state, snapshot.producer_epoch) == (names[m.state], m.epoch), txn_id
    found = service.group.fetch_offsets(GROUP, [TP], require_stable=False)[TP][0]
    assert (found.offset if found else None) == model.committed
    unstable = any(m.state == "ongoing" and m.offset is not None for m in model.txns.values())
    stable = service.group.fetch_offsets(GROUP, [TP], require_stable=True)[TP][1]
    assert (stable == ErrorCode.unstable_offset_commit) == unstable


async def run(steps: list[tuple], data_dir: Path) -> None:
    broker, service = await open_broker(data_dir)
    broker.replica_manager.create_topic("d", 1, 1, {})
    model = Model()
    for op in steps:
        if op[0] == "restart":
            await close_broker(broker, service)
            broker, service = await open_broker(data_dir)
        else:
            await apply(service, model, op)
        check(service, model)
    await close_broker(broker, service)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_coordinators_agree_with_the_model(steps: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(asyncio.wait_for(run(steps, Path(tmp)), 60))
