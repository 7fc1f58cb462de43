"""A replica that copied a marker from its leader (or replayed one at recovery) knows
the coordinator epoch that wrote it: once it leads, a late marker from a deposed
coordinator is refused with TRANSACTION_COORDINATOR_FENCED, as on the old leader,
instead of resolving the producer's next transaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import TOPIC_KEYS
from broker.errors import ErrorCode, KafkaError
from broker.log.ledger import FsyncLedger
from broker.log.log import Log
from tests.broker.batches import make_batch

PID, EPOCH = 7, 0


def open_log(directory: Path, ledger: FsyncLedger) -> Log:
    settings = {name: key.default for name, key in TOPIC_KEYS.items()}
    return Log.open(directory, settings, ledger, False)


def test_copied_and_replayed_markers_fence_a_deposed_coordinator(tmp_path: Path) -> None:
    ledger = FsyncLedger(tmp_path)
    leader, follower = open_log(tmp_path / "l-0", ledger), open_log(tmp_path / "f-0", ledger)
    try:
        leader.append(bytearray(make_batch([b"t1"], PID, EPOCH, 0, transactional=True)), 0)
        leader.append_marker(PID, EPOCH, commit=True, coordinator_epoch=4, leader_epoch=0)
        follower.append_replicated(bytearray(leader.read(0, 1 << 20, leader.next_offset)))

        # The next transaction opens on the follower, which now leads...
        follower.append(bytearray(make_batch([b"t2"], PID, EPOCH, 1, transactional=True)), 1)
        # ...and a marker from the coordinator deposed before epoch 4 arrives late.
        with pytest.raises(KafkaError) as refused:
            follower.append_marker(PID, EPOCH, commit=True, coordinator_epoch=3, leader_epoch=1)
        assert refused.value.code == ErrorCode.transaction_coordinator_fenced
        assert follower.producer_state.first_unstable_offset() == 2  # t2 still open

        follower.close()
        follower = open_log(tmp_path / "f-0", ledger)  # recovery replays the marker
        with pytest.raises(KafkaError) as again:
            follower.append_marker(PID, EPOCH, commit=False, coordinator_epoch=3, leader_epoch=1)
        assert again.value.code == ErrorCode.transaction_coordinator_fenced
        follower.append_marker(PID, EPOCH, commit=False, coordinator_epoch=4, leader_epoch=1)
        assert follower.producer_state.first_unstable_offset() is None
    finally:
        leader.close()
        follower.close()
        ledger.close()
