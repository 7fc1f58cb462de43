"""The classic rebalance protocol (Kafka's ``GroupCoordinator`` join/sync/heartbeat/leave).

Members join (PreparingRebalance); when all known members have rejoined, or
the rebalance timeout ends, the generation advances and the leader receives
the member list (CompletingRebalance); the leader's SyncGroup carries every
assignment, which is written to ``__consumer_offsets`` before the group is
Stable. Heartbeats keep a member alive for its session timeout; timers run on
the asyncio loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from broker.coordinator.group.state import Group, GroupState, JoinResult, Member, new_member_id
from broker.errors import ErrorCode

log = logging.getLogger(__name__)
G = GroupState


@dataclass(frozen=True, slots=True)
class GroupConfig:
    num_partitions: int = 50
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1


@dataclass(frozen=True, slots=True)
class JoinRequest:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    require_known_member_id: bool


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """A SyncGroup as the engine needs it; the leader's carries every assignment."""

    generation: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]


PersistGroup = Callable[[Group], Awaitable[None]]


class RebalanceEngine:
    def __init__(self, config: GroupConfig, persist: PersistGroup) -> None:
        self.config = config
        self._persist = persist
        self._tasks: set[asyncio.Task[None]] = set()

    # ---- JoinGroup -------------------------------------------------------------------

    async def join(self, group: Group, req: JoinRequest) -> JoinResult:
        cfg = self.config
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            return JoinResult(ErrorCode.invalid_session_timeout, req.member_id)
        if group.state is G.DEAD:
            return JoinResult(ErrorCode.coordinator_not_available, req.member_id)
        if not group.supports(req.protocol_type, req.protocols):
            return JoinResult(ErrorCode.inconsistent_group_protocol, req.member_id)
        if req.member_id == "":
            return await self._join_unknown(group, req)
        if req.member_id in group.pending_members:
            group.pending_members.discard(req.member_id)
            return await self._add_and_wait(group, req, req.member_id)
        member = group.members.get(req.member_id)
        if member is None:
            return JoinResult(ErrorCode.unknown_member_id, req.member_id)
        if self._fenced(group, req.member_id, req.group_instance_id):
            return JoinResult(ErrorCode.fenced_instance_id, req.member_id)
        changed = member.protocols != req.protocols
        member.protocols = list(req.protocols)
        member.session_timeout_ms = req.session_timeout_ms
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if group.state is G.COMPLETING_REBALANCE and not changed:
            return self._current_result(group, member)
        if group.state is G.STABLE and not changed and member.member_id != group.leader_id:
            return self._current_result(group, member)
        if group.state is not G.PREPARING_REBALANCE:
            self._prepare_rebalance(group, f"{member.member_id} rejoined")
        return await self._wait_for_join(group, member)

    async def _join_unknown(self, group: Group, req: JoinRequest) -> JoinResult:
        new_id = new_member_id(req.client_id)
        if req.group_instance_id and req.group_instance_id in group.static_members:
            return await self._replace_static(group, req, new_id)
        if req.group_instance_id is None and req.require_known_member_id:
            # JoinGroup v4+: hand out the id first, so a lost response leaves no ghost member.
            group.pending_members.add(new_id)
            return JoinResult(ErrorCode.member_id_required, new_id)
        if len(group.members) >= self.config.max_size:
            return JoinResult(ErrorCode.group_max_size_reached, new_id)
        return await self._add_and_wait(group, req, new_id)

    async def _replace_static(self, group: Group, req: JoinRequest, new_id: str) -> JoinResult:
        """A static member came back under a new member id: the old id is fenced and
        the new one takes its place (and assignment) without a rebalance if possible."""
        assert req.group_instance_id is not None
        old = group.members.pop(group.static_members[req.group_instance_id])
        self._cancel_session(old)
        self._resolve_waiters(old, ErrorCode.fenced_instance_id)
        member = self._new_member(req, new_id)
        member.assignment = old.assignment
        group.members[new_id] = member
        group.static_members[req.group_instance_id] = new_id
        if group.leader_id == old.member_id:
            group.leader_id = new_id
        if group.state is G.STABLE and old.protocols == req.protocols:
            self._start_session(group, member)
            return self._current_result(group, member)
        if group.state is not G.PREPARING_REBALANCE:
            self._prepare_rebalance(group, f"static member {req.group_instance_id} rejoined")
        return await self._wait_for_join(group, member)

    async def _add_and_wait(self, group: Group, req: JoinRequest, member_id: str) -> JoinResult:
        member = self._new_member(req, member_id)
        group.members[member_id] = member
        if req.group_instance_id:
            group.static_members[req.group_instance_id] = member_id
        if not group.protocol_type:
            group.protocol_type = req.protocol_type
        if group.state is not G.PREPARING_REBALANCE:
            self._prepare_rebalance(group, f"{member_id} joined")
        return await self._wait_for_join(group, member)

    @staticmethod
    def _new_member(req: JoinRequest, member_id: str) -> Member:
        return Member(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=list(req.protocols),
        )

    async def _wait_for_join(self, group: Group, member: Member) -> JoinResult:
        waiter: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        if member.join_waiter is not None and not member.join_waiter.done():
            member.join_waiter.set_result(JoinResult(ErrorCode.unknown_member_id, member.member_id))
        member.join_waiter = waiter
        if group.all_joined() and not group.initial_delay:
            self._complete_join(group)
        return await waiter

    def _current_result(self, group: Group, member: Member) -> JoinResult:
        """The JoinGroup answer for ``member`` in the group's current generation
        (the member list goes to the leader only)."""
        is_leader = member.member_id == group.leader_id
        return JoinResult(
            ErrorCode.none,
            member.member_id,
            group.generation,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            self._member_list(group) if is_leader else [],
        )

    @staticmethod
    def _member_list(group: Group) -> list[tuple[str, str | None, bytes]]:
        protocol = group.protocol_name or ""
        return [
            (m.member_id, m.group_instance_id, m.metadata_for(protocol))
            for m in group.members.values()
        ]

    # ---- rebalance -------------------------------------------------------------------

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        log.info("group %s: rebalancing (%s)", group.group_id, reason)
        if group.state is G.COMPLETING_REBALANCE:
            for m in group.members.values():
                m.assignment = b""
                if m.sync_waiter is not None and not m.sync_waiter.done():
                    m.sync_waiter.set_result((ErrorCode.rebalance_in_progress, b""))
                m.sync_waiter = None
        group.initial_delay = group.state is G.EMPTY
        group.transition(G.PREPARING_REBALANCE)
        if group.join_timer is not None:
            group.join_timer.cancel()
        if group.initial_delay:
            delay = self.config.initial_rebalance_delay_ms / 1000
        else:
            delay = group.rebalance_timeout_s()
        group.join_deadline = time.monotonic() + delay
        loop = asyncio.get_running_loop()
        group.join_timer = loop.call_later(delay, self._join_deadline_passed, group)

    def _join_deadline_passed(self, group: Group) -> None:
        group.join_timer = None
        if group.state is G.PREPARING_REBALANCE:
            group.initial_delay = False
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        group.initial_delay = False
        group.pending_members.clear()
        for member in [m for m in group.members.values() if m.join_waiter is None]:
            self._remove(group, member)
        if not group.members:
            group.transition(G.EMPTY)
            group.generation += 1
            group.protocol_name = None
            group.leader_id = None
            self._spawn_persist(group)
            return
        group.generation += 1
        group.protocol_name = group.select_protocol()
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.transition(G.COMPLETING_REBALANCE)
        for member in group.members.values():
            waiter, member.join_waiter = member.join_waiter, None
            if waiter is not None and not waiter.done():
                waiter.set_result(self._current_result(group, member))
            self._start_session(group, member)

    # ---- SyncGroup -------------------------------------------------------------------

    async def sync(self, group: Group, req: SyncRequest) -> tuple[ErrorCode, bytes]:
        member = group.members.get(req.member_id)
        if member is None or group.state in (G.EMPTY, G.DEAD):
            return ErrorCode.unknown_member_id, b""
        if self._fenced(group, req.member_id, req.group_instance_id):
            return ErrorCode.fenced_instance_id, b""
        if req.generation != group.generation:
            return ErrorCode.illegal_generation, b""
        if (req.protocol_type and req.protocol_type != group.protocol_type) or (
            req.protocol_name and req.protocol_name != group.protocol_name
        ):
            return ErrorCode.inconsistent_group_protocol, b""
        if group.state is G.PREPARING_REBALANCE:
            return ErrorCode.rebalance_in_progress, b""
        member.touch()
        if group.state is G.STABLE:
            return ErrorCode.none, member.assignment
        waiter: asyncio.Future[tuple[ErrorCode, bytes]] = asyncio.get_running_loop().create_future()
        member.sync_waiter = waiter
        if req.member_id == group.leader_id:
            await self._apply_assignments(group, req.assignments)
        return await waiter

    async def _apply_assignments(self, group: Group, assignments: dict[str, bytes]) -> None:
        generation = group.generation
        for m in group.members.values():
            m.assignment = assignments.get(m.member_id, b"")
        try:
            await self._persist(group)
            error = ErrorCode.none
        except Exception as exc:
            log.warning("group %s: storing assignments failed: %s", group.group_id, exc)
            error = ErrorCode.coordinator_not_available
        if group.state is not G.COMPLETING_REBALANCE or group.generation != generation:
            return  # a member left meanwhile; its rebalance already answered the waiters
        if error is ErrorCode.none:
            group.transition(G.STABLE)
        for m in group.members.values():
            if m.sync_waiter is not None and not m.sync_waiter.done():
                m.sync_waiter.set_result((error, m.assignment if error is ErrorCode.none else b""))
            m.sync_waiter = None

    # ---- Heartbeat, LeaveGroup, commits ----------------------------------------------------

    def heartbeat(
        self, group: Group, generation: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        if self._fenced(group, member_id, group_instance_id):
            return ErrorCode.fenced_instance_id
        member = group.members.get(member_id)
        if member is None or group.state in (G.EMPTY, G.DEAD):
            return ErrorCode.unknown_member_id
        if generation != group.generation:
            return ErrorCode.illegal_generation
        member.touch()
        if group.state is G.PREPARING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    def leave(self, group: Group, member_id: str, group_instance_id: str | None) -> ErrorCode:
        if group_instance_id:
            mapped = group.static_members.get(group_instance_id)
            if mapped is None:
                return ErrorCode.unknown_member_id
            if member_id not in ("", mapped):
                return ErrorCode.fenced_instance_id
            member_id = mapped
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._maybe_complete_join(group)
            return ErrorCode.none
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        self._remove_and_rebalance(group, member, f"{member_id} left")
        return ErrorCode.none

    def validate_commit(
        self, group: Group, generation: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        """Kafka's checks before an OffsetCommit: only the current generation's
        members may commit, except simple (generation -1) commits to an empty group."""
        if group.state is G.DEAD:
            return ErrorCode.coordinator_not_available
        if self._fenced(group, member_id, group_instance_id):
            return ErrorCode.fenced_instance_id
        if generation < 0 and group.state is G.EMPTY:
            return ErrorCode.none
        if group.state is G.COMPLETING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if generation != group.generation:
            return ErrorCode.illegal_generation
        member.touch()
        return ErrorCode.none

    # ---- sessions and removal ----------------------------------------------------------

    def _start_session(self, group: Group, member: Member) -> None:
        member.touch()
        self._schedule_session(group, member)

    def _schedule_session(self, group: Group, member: Member) -> None:
        self._cancel_session(member)
        loop = asyncio.get_running_loop()
        delay = max(0.0, member.heartbeat_deadline - time.monotonic())
        member.session_timer = loop.call_later(delay, self._session_check, group, member)

    def _session_check(self, group: Group, member: Member) -> None:
        member.session_timer = None
        if group.members.get(member.member_id) is not member:
            return
        if member.awaiting or time.monotonic() < member.heartbeat_deadline:
            if member.awaiting:
                member.touch()
            self._schedule_session(group, member)
            return
        self._remove_and_rebalance(group, member, f"{member.member_id} session expired")

    def start_sessions(self, group: Group) -> None:
        """After a load: every restored member gets a fresh session timer."""
        for member in group.members.values():
            self._start_session(group, member)

    @staticmethod
    def _cancel_session(member: Member) -> None:
        if member.session_timer is not None:
            member.session_timer.cancel()
            member.session_timer = None

    @staticmethod
    def _resolve_waiters(member: Member, error: ErrorCode) -> None:
        if member.join_waiter is not None and not member.join_waiter.done():
            member.join_waiter.set_result(JoinResult(error, member.member_id))
        if member.sync_waiter is not None and not member.sync_waiter.done():
            member.sync_waiter.set_result((error, b""))
        member.join_waiter = member.sync_waiter = None

    def _remove(self, group: Group, member: Member) -> None:
        self._cancel_session(member)
        self._resolve_waiters(member, ErrorCode.unknown_member_id)
        group.members.pop(member.member_id, None)
        if member.group_instance_id:
            group.static_members.pop(member.group_instance_id, None)
        if group.leader_id == member.member_id:
            group.leader_id = None

    def _remove_and_rebalance(self, group: Group, member: Member, reason: str) -> None:
        self._remove(group, member)
        if group.state in (G.STABLE, G.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason)
        self._maybe_complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if group.state is G.PREPARING_REBALANCE and not group.initial_delay and group.all_joined():
            self._complete_join(group)

    @staticmethod
    def _fenced(group: Group, member_id: str, group_instance_id: str | None) -> bool:
        if not group_instance_id:
            return False
        mapped = group.static_members.get(group_instance_id)
        return mapped is not None and mapped != member_id

    def _spawn_persist(self, group: Group) -> None:
        task = asyncio.get_running_loop().create_task(self._persist_quietly(group))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _persist_quietly(self, group: Group) -> None:
        try:
            await self._persist(group)
        except Exception as exc:
            log.warning("group %s: storing metadata failed: %s", group.group_id, exc)

    def shutdown(self, group: Group) -> None:
        """The shard is unloaded: answer every waiter and stop every timer."""
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        for member in group.members.values():
            self._cancel_session(member)
            self._resolve_waiters(member, ErrorCode.not_coordinator)
