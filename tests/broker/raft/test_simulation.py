"""Seeded chaos runs of 3 and 5 voters: drops, delays, partitions (also one-way) and
crash/restarts, with the safety invariants checked after every 10 ms of virtual time
(``SimCluster.check_invariants``) and liveness checked after the final heal."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.raft.file_log import FileLog
from broker.raft.quorum_state import Role
from broker.raft.simulation import TICK_MS, InvariantViolation, SimCluster

LIVENESS_BOUND_MS = 15_000


FAULTS = ["isolate", "split", "one-way", "drop", "crash", "restart", "heal", "slow"]


def inject_fault(cluster: SimCluster, rng: random.Random, kind: str | None = None) -> str:
    """Apply ``kind`` (or a random fault), choosing its victims with ``rng``."""
    ids = sorted(cluster.ids)
    crashed = [i for i in ids if cluster.nodes[i].client is None]
    kind = kind or rng.choice(FAULTS)
    if kind == "isolate":
        victim = rng.choice(ids)
        cluster.network.partition([{victim}, set(ids) - {victim}])
    elif kind == "split":
        shuffled = rng.sample(ids, len(ids))
        cut = rng.randint(1, len(ids) - 1)
        cluster.network.partition([set(shuffled[:cut]), set(shuffled[cut:])])
    elif kind == "one-way":
        a, b = rng.sample(ids, 2)
        cluster.network.blocked.add((a, b))
    elif kind == "drop":
        cluster.network.drop_rate = rng.choice([0.05, 0.2, 0.4])
    elif kind == "crash" and len(crashed) < len(ids) - 1:
        cluster.crash(rng.choice([i for i in ids if i not in crashed]))
    elif kind == "restart" and crashed:
        cluster.start(rng.choice(crashed))
    elif kind == "slow":
        cluster.network.max_delay_ms = rng.choice([30, 80, 200])
    else:
        cluster.network.heal()
    return kind


def heal_all(cluster: SimCluster) -> None:
    cluster.network.heal()
    cluster.network.max_delay_ms = 30
    for node_id in sorted(cluster.ids):
        if cluster.nodes[node_id].client is None:
            cluster.start(node_id)


def wait_for_convergence(cluster: SimCluster) -> int:
    """Virtual ms until one ready leader whose log end every node has committed."""
    for elapsed in range(0, LIVENESS_BOUND_MS, TICK_MS):
        cluster.step()
        leader = cluster.leader()
        if leader is None or leader.high_watermark != leader.log.end_offset:
            continue
        end = leader.log.end_offset
        if all(n.client and n.client.high_watermark == end for n in cluster.live()):
            return elapsed
    raise InvariantViolation(f"no converged leader within {LIVENESS_BOUND_MS} ms after heal")


def run_chaos(cluster: SimCluster, seed: int, duration_ms: int = 60_000) -> dict[str, int]:
    rng = random.Random(seed)
    faults: dict[str, int] = {}
    for tick in range(duration_ms // TICK_MS):
        if tick % 40 == 0:
            kind = inject_fault(cluster, rng)
            faults[kind] = faults.get(kind, 0) + 1
        if rng.random() < 0.3:
            cluster.append_value()
        cluster.step()
    heal_all(cluster)
    wait_for_convergence(cluster)
    offsets = []
    for _ in range(20):
        offsets.append(cluster.append_value())
        cluster.step()
    wait_for_convergence(cluster)
    assert None not in offsets, "no leader to append to after the heal"
    assert all(cluster.committed[o].data.startswith(b"v") for o in offsets)  # type: ignore[index]
    cluster.check_nothing_committed_lost()
    return faults


@pytest.mark.parametrize("seed", range(1, 11))
def test_three_voters_stay_safe_and_live_under_chaos(seed: int) -> None:
    cluster = SimCluster(3, seed)
    faults = run_chaos(cluster, seed)
    assert faults.get("crash", 0) and faults.get("split", 0) + faults.get("isolate", 0)
    assert max(cluster.epochs.values()) > 3, "the run hardly changed leaders"


@pytest.mark.parametrize("seed", range(11, 21))
def test_five_voters_stay_safe_and_live_under_chaos(seed: int) -> None:
    cluster = SimCluster(5, seed)
    run_chaos(cluster, seed)
    assert max(cluster.epochs.values()) > 1, "the run never changed leaders"


@pytest.mark.slow
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    voters=st.sampled_from([3, 5]),
    schedule=st.lists(
        st.tuples(st.sampled_from(FAULTS), st.integers(0, 2**16), st.integers(50, 1500)),
        min_size=1,
        max_size=25,
    ),
)
def test_generated_fault_schedules_keep_the_invariants(
    voters: int, schedule: list[tuple[str, int, int]]
) -> None:
    """Hypothesis draws whole schedules (fault, victim choice, time until the next);
    a failure shrinks to the shortest schedule that breaks an invariant."""
    cluster = SimCluster(voters, seed=len(schedule))
    load = random.Random(voters)
    for kind, choice, gap_ms in schedule:
        inject_fault(cluster, random.Random(choice), kind)
        for _ in range(gap_ms // TICK_MS):
            if load.random() < 0.3:
                cluster.append_value()
            cluster.step()
    heal_all(cluster)
    wait_for_convergence(cluster)
    cluster.check_nothing_committed_lost()


@pytest.mark.slow
def test_chaos_over_file_logs_with_recovery(tmp_path: Path) -> None:
    """The same run on the real file-backed log: every restart reopens and recovers it."""
    cluster = SimCluster(3, 21, log_factory=lambda i: FileLog(tmp_path / f"node-{i}", 4096))
    run_chaos(cluster, 21, duration_ms=30_000)
    assert len(cluster.committed) > 30


def test_leader_elected_quickly_from_cold_start() -> None:
    cluster = SimCluster(5, 31)
    elapsed = wait_for_convergence(cluster)
    assert elapsed <= 2 * cluster.config.election_timeout_ms + 500
    leaders = [n for n in cluster.live() if n.client and n.client.role is Role.LEADER]
    assert len(leaders) == 1


def test_minority_cannot_commit_and_rejoins_by_truncating() -> None:
    """An isolated leader keeps appending but never commits; after the heal its
    uncommitted suffix is truncated in favour of the majority's log."""
    cluster = SimCluster(3, 41)
    wait_for_convergence(cluster)
    old = cluster.leader()
    assert old is not None
    old_epoch = old.epoch
    others = set(cluster.ids) - {old.node_id}
    cluster.network.partition([{old.node_id}, others])
    hw_before = old.high_watermark
    for _ in range(10):
        old.append([b"doomed"])
        cluster.step()
    assert old.high_watermark == hw_before
    cluster.run_for(3000)
    new = cluster.leader()
    assert new is not None and new.node_id != old.node_id and new.epoch > old_epoch
    cluster.append_value()
    cluster.network.heal()
    wait_for_convergence(cluster)
    node = cluster.nodes[old.node_id]
    start = node.log.start_offset
    assert b"doomed" not in [e.data for e in node.log.read(start, node.log.end_offset - start)]
    cluster.check_nothing_committed_lost()


def test_invariant_checker_catches_two_leaders_in_one_epoch() -> None:
    """The checker itself must be able to fail."""
    cluster = SimCluster(3, 51)
    wait_for_convergence(cluster)
    leader = cluster.leader()
    assert leader is not None
    cluster.leaders[leader.epoch] = 99
    with pytest.raises(InvariantViolation, match="leaders 99"):
        cluster.check_invariants()
