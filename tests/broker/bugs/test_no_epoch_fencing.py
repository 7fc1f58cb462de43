"""no-epoch-fencing: a leader cut off from the controller together with one
follower takes its other, silent follower out of its ISR on its own authority,
and acknowledges an acks=all write that only the two of them hold; without the
bug the shrink waits for the controller, which it cannot reach, so the write
stays unacknowledged (and times out) while the controller elects the silent
follower."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker import bugs
from broker.log.ledger import FsyncLedger
from broker.replication.controller_channel import ControllerUnavailable
from broker.replication.isr import IsrManager
from tests.broker.batches import make_batch
from tests.broker.replication.test_partition import replica

TOPIC_ID = str(uuid.uuid4())


def committed_image() -> Any:
    """The controller's image as node 1 last saw it: it leads t-0, ISR [1, 2, 3]."""
    reg = SimpleNamespace(leader=1, isr=[1, 2, 3], leader_epoch=0, partition_epoch=0)
    topic = SimpleNamespace(topic_id=TOPIC_ID, partitions={0: reg})
    return SimpleNamespace(topic={"t": topic}.get)


@pytest.mark.parametrize("bug", [True, False], ids=["no-epoch-fencing", "correct"])
def test_a_leader_cut_off_with_one_follower_acknowledges_alone(
    tmp_path: Path, ledger: FsyncLedger, bug: bool
) -> None:
    bugs.enable(["no-epoch-fencing"] if bug else [])
    leader = replica(tmp_path, ledger, 1, min_isr=2)
    asked: list[Any] = []

    async def unreachable(request: Any, _timeout: float) -> Any:
        asked.append(request)
        raise ControllerUnavailable("cut off")

    async def scenario() -> bool:
        isr = IsrManager(1, {("t", 0): leader}, committed_image, lambda: 1, unreachable, 10)
        leader.log.append(bytearray(make_batch([b"split"])), 0)
        acked = asyncio.ensure_future(leader.wait_replicated(1, timeout_s=0.5))
        await asyncio.sleep(0.02)  # node 3 has not fetched for longer than the 10 ms lag
        leader.update_follower(2, 1)  # the follower cut off with the leader fetches on
        isr.shrink_lagging()
        await asyncio.sleep(0.05)
        try:
            await acked
            return True
        except Exception:
            return False

    try:
        acknowledged = asyncio.run(scenario())
    finally:
        bugs.enable([])
    assert len(asked) == 1  # the shrink was asked of the controller either way
    if bug:
        assert acknowledged and leader.assignment.isr == [1, 2]
        assert leader.high_watermark == 1  # held by nodes 1 and 2 alone
        leader.update_follower(3, 1)  # back and caught up: the committed ISR never lost it
        assert leader.assignment.isr == [1, 2, 3] and not leader.unfenced_out
    else:
        assert not acknowledged and leader.assignment.isr == [1, 2, 3]
        assert leader.high_watermark == 0
