"""The two KIP-101 scenarios of the design digest (section 2.7, M-7.2 and M-7.3),
staged step by step with real broker processes, once with the ``hw-truncation`` bug
(pre-KIP-101: a replica truncates to its high watermark on restart and on a leader
change, without leader epochs) and once without it (M-7.4: a follower asks the
leader with OffsetForLeaderEpoch where its epoch ends; a leader never truncates).

Scenario A (data loss): follower A holds m1 and m2 but has only checkpointed HW=1
when it restarts; the leader B has acknowledged m2 and crashes before A fetches it
again; A, still in the ISR, is elected. With the bug m2 is gone; without it A keeps
m2. Scenario B (log divergence): leader A has flushed m2, follower B has not; both
crash and B loses its copy; B comes back first, leads and takes m3 at offset 1;
A restarts with HW=2. With the bug A keeps m2 at offset 1 while B has m3 there;
without it A truncates offset 1 and copies m3.

Why staged this way:

- The controller fences a broker whose heartbeats stop and takes it out of every
  ISR unless it is the last member (as KRaft does), and a restarted follower gets
  back in only once it has caught up. So the replica that must lead later has to
  be the last one fenced: the other one is stopped (SIGSTOP) first, the one that
  stays is stopped or killed more than a heartbeat interval later, and neither is
  the active controller (a new controller restarts every broker's session, which
  would undo that order). Each test asserts the ISR the fencing left.
- Scenario A therefore stops B (its crash; stopped, B cannot hand m2 to A again)
  before A goes down for its restart, and A comes back once B is fenced, as the
  last in-sync replica, and leads at once. The pre-KIP-101 rule of M-7.1 (truncate
  to the HW on restart) is what ``hw-truncation`` does to a replica recovered at
  start, whatever its role; with KIP-101 a replica that leads never truncates.
- "A restarts before it learns HW=2" is a restart before the learned HW reaches the
  ``replication-offset-checkpoint`` (what a restarted replica starts from): the test
  sees A's periodic checkpoint write HW=1 and kills A well within the next interval;
  it reads that file and A's segments before restarting it.
- In scenario B both are stopped a little apart and then killed, and only B loses
  power: its unfsynced bytes are cut from its data directory after the kill, from
  its fsync ledger, as the ``lose-unfsynced`` nemesis does; A's kill is a process
  crash, so its page cache (m2) survives, like A's flushed copy in the digest.
  ``segment.bytes`` holds one batch, so appending m2 rolls the segment and flushes
  m1 on both replicas: B loses m2 only.

Five nodes, RF 2 and ``min.insync.replicas=1``, as in the digest, so the controller
quorum survives both replicas being down."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from broker.log.checkpoint_file import read_checkpoint
from broker.log.hw_checkpoint import CHECKPOINT_NAME
from broker.log.ledger import read_ledger
from broker.replication.local_cluster import LocalCluster
from nemesis.disk import truncation_plan
from tests.broker.batches import read_values
from tests.broker.cluster.clients import (
    create_topic,
    metadata,
    produce,
    read_partition,
    wait_state,
)
from tests.eventually import eventually

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]
SESSION_MS = 2000
HEARTBEAT_S = 0.5  # broker.heartbeat.interval.ms: how stale a last heartbeat can be
#: the gap between stopping the replica fenced first and the one that stays in the ISR
FENCE_GAP_S = 1.2
SETTINGS = (f"broker.session.timeout.ms={SESSION_MS}",)
#: scenario A's HW checkpoint interval: the staging from A's checkpoint of HW=1 to its
#: kill takes a fraction of it
CHECKPOINT_MS = 8000


def topic_off_the_controller(cluster: LocalCluster, **configs: str) -> tuple[str, list[int]]:
    """Creates RF-2 topics until one has neither replica on the active controller;
    returns it and its replicas, leader first."""
    for attempt in range(10):
        name = f"kip101-{attempt}"
        create_topic(cluster.bootstrap, name, 1, 2, **configs)
        answer = metadata(cluster.bootstrap, name)
        partition = answer.topics[name].partitions[0]
        if answer.controller_id not in partition.replicas:
            follower = next(r for r in partition.replicas if r != partition.leader)
            return name, [partition.leader, follower]
    raise AssertionError("every topic got a replica on the active controller")


def checkpointed_hw(cluster: LocalCluster, node: int, topic: str) -> int | None:
    rows = read_checkpoint(cluster.nodes[node].data_dir / CHECKPOINT_NAME, 3) or []
    return next((int(o) for t, p, o in rows if t == topic and p == "0"), None)


def log_on_disk(cluster: LocalCluster, node: int, topic: str) -> list[tuple[int, str]]:
    """(offset, value) of every record in the node's segment files of ``topic``-0."""
    directory = cluster.nodes[node].data_dir / f"{topic}-0"
    data = b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))
    return [(offset, value.decode()) for offset, value in read_values(data)]


def lose_power(data_dir: Path) -> dict[str, tuple[int, int]]:
    """What the node's disk keeps after a power loss: every file cut back to the size
    its fsync ledger last recorded (never-synced files to nothing). The broker must
    already be dead. Returns ``{path: (size before, size after)}`` of what was cut."""
    sizes = {
        p.relative_to(data_dir).as_posix(): p.stat().st_size
        for p in data_dir.rglob("*")
        if p.is_file()
    }
    plan = truncation_plan(read_ledger(data_dir), sizes)
    for path, (_, keep) in plan.items():
        os.truncate(data_dir / path, keep)
    return plan


def addresses(cluster: LocalCluster, nodes: list[int]) -> str:
    return ",".join(cluster.nodes[n].address for n in nodes)


@pytest.mark.parametrize("bug", [False, True], ids=["correct", "hw-truncation"])
def test_scenario_a_restart_to_a_stale_hw_loses_an_acknowledged_record(
    start_cluster: Callable[..., LocalCluster], bug: bool
) -> None:
    cluster = start_cluster(
        size=5,
        settings=(*SETTINGS, f"replica.high.watermark.checkpoint.interval.ms={CHECKPOINT_MS}"),
        bugs=("hw-truncation",) if bug else (),
    )
    topic, (b, a) = topic_off_the_controller(cluster, **{"min.insync.replicas": "1"})
    bystanders = [n for n in cluster.nodes if n not in (a, b)]
    live = addresses(cluster, bystanders)

    # m1 committed on both; A checkpoints HW=1 at one of its periodic ticks.
    assert produce(cluster.bootstrap, topic, {0: ["m1"]}) == [None]
    eventually(
        lambda: checkpointed_hw(cluster, a, topic) == 1,
        CHECKPOINT_MS / 1000 + 10,
        interval=0.02,
        what=lambda: f"A's checkpointed HW 1, not {checkpointed_hw(cluster, a, topic)}",
    )

    # Steps 1-3: B appends m2, A copies it and fetches again, B's HW becomes 2 and B
    # acknowledges m2; A's checkpoint still says 1.
    assert produce(cluster.bootstrap, topic, {0: ["m2"]}) == [None]

    # Steps 4-5: B is about to crash (stopped, so A cannot fetch m2 again) when A
    # goes down for its restart; the controller fences B first, so A stays in the
    # ISR, and A comes back and leads.
    cluster.nodes[b].pause()
    time.sleep(FENCE_GAP_S)
    cluster.kill(a)
    # A's next checkpoint, CHECKPOINT_MS after the one of HW=1, came after its kill
    assert checkpointed_hw(cluster, a, topic) == 1, "the staging outlasted A's checkpoint interval"
    assert log_on_disk(cluster, a, topic) == [(0, "m1"), (1, "m2")]
    _, isr = wait_state(live, topic, lambda leader, _isr: leader != b)
    assert isr == [a], "B was not fenced before A: A left the ISR"
    cluster.restart(a)
    assert wait_state(live, topic, lambda leader, _isr: leader == a) == (a, [a])
    assert log_on_disk(cluster, b, topic) == [(0, "m1"), (1, "m2")]  # B had m2 and acked it

    served = read_partition(addresses(cluster, [a, *bystanders]), topic, 0, 2, timeout=10)
    if bug:  # A cut its log to its stale HW on restart: the acknowledged m2 is lost
        assert served == ["m1"]
        assert log_on_disk(cluster, a, topic) == [(0, "m1")]
    else:  # nothing asked A to truncate and a leader never does: m2 survives
        assert served == ["m1", "m2"]
        assert log_on_disk(cluster, a, topic) == [(0, "m1"), (1, "m2")]


@pytest.mark.parametrize("bug", [False, True], ids=["correct", "hw-truncation"])
def test_scenario_b_restart_with_an_unflushed_follower_diverges_the_logs(
    start_cluster: Callable[..., LocalCluster], bug: bool
) -> None:
    cluster = start_cluster(
        size=5,
        settings=(*SETTINGS, "replica.high.watermark.checkpoint.interval.ms=200"),
        bugs=("hw-truncation",) if bug else (),
    )
    topic, (a, b) = topic_off_the_controller(
        cluster, **{"min.insync.replicas": "1", "segment.bytes": "100"}
    )
    bystanders = [n for n in cluster.nodes if n not in (a, b)]
    live = addresses(cluster, bystanders)

    # Steps 1-2: m1 and m2 committed (HW=2 checkpointed on A); appending m2 rolled
    # the segment, so m1 is flushed on both replicas and m2 on neither.
    assert produce(cluster.bootstrap, topic, {0: ["m1"]}) == [None]
    assert produce(cluster.bootstrap, topic, {0: ["m2"]}) == [None]
    eventually(
        lambda: checkpointed_hw(cluster, a, topic) == 2,
        10,
        interval=0.1,
        what=lambda: f"A's checkpointed HW 2, not {checkpointed_hw(cluster, a, topic)}",
    )

    # Step 3: both crash; A is fenced first, so B stays the last in-sync replica.
    cluster.nodes[a].pause()
    time.sleep(FENCE_GAP_S)
    cluster.nodes[b].pause()
    wait_state(live, topic, lambda leader, isr: (leader, isr) == (-1, [b]))
    cluster.kill(a)
    cluster.kill(b)
    assert log_on_disk(cluster, b, topic) == [(0, "m1"), (1, "m2")]
    lost = lose_power(cluster.nodes[b].data_dir)  # B's unflushed m2 is gone
    assert f"{topic}-0/00000000000000000001.log" in lost, lost
    assert log_on_disk(cluster, b, topic) == [(0, "m1")]
    assert log_on_disk(cluster, a, topic) == [(0, "m1"), (1, "m2")]
    assert checkpointed_hw(cluster, a, topic) == 2

    # Step 4: B comes back first and leads; m3 takes offset 1.
    cluster.restart(b)
    wait_state(live, topic, lambda leader, _isr: leader == b)
    with_b = addresses(cluster, [b, *bystanders])
    assert produce(with_b, topic, {0: ["m3"]}) == [None]

    # Step 5: A restarts as B's follower with HW=2 and rejoins the ISR.
    cluster.restart(a)
    wait_state(live, topic, lambda leader, isr: (leader, isr) == (b, sorted([a, b])))
    assert read_partition(with_b, topic, 0, 3, timeout=5) == ["m1", "m3"]

    # What A holds shows once it leads: B crashes and A, in the ISR, takes over.
    cluster.kill(b)
    wait_state(live, topic, lambda leader, _isr: leader == a)
    served = read_partition(addresses(cluster, [a, *bystanders]), topic, 0, 3, timeout=5)
    assert log_on_disk(cluster, b, topic) == [(0, "m1"), (1, "m3")]
    if bug:  # nothing above HW=2 to cut: offset 1 is m2 on A and m3 on B
        assert served == ["m1", "m2"]
        assert log_on_disk(cluster, a, topic) == [(0, "m1"), (1, "m2")]
    else:  # B said epoch 0 ends at 1: A cut m2 and copied m3, the logs agree
        assert served == ["m1", "m3"]
        assert log_on_disk(cluster, a, topic) == [(0, "m1"), (1, "m3")]
