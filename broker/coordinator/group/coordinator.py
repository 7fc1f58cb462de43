"""The group coordinator's API surface (Kafka's ``GroupCoordinatorService``):
finds the shard owning a group, runs the rebalance protocol on it, and stores
offsets, which are written to ``__consumer_offsets`` before they are visible."""

from __future__ import annotations

from broker.coordinator.group import records
from broker.coordinator.group.membership import (
    GroupConfig,
    JoinRequest,
    RebalanceEngine,
    SyncRequest,
)
from broker.coordinator.group.offsets import CommittedOffset, TopicPartition
from broker.coordinator.group.shard import GroupShard, group_to_record
from broker.coordinator.group.state import Group, GroupState, JoinResult
from broker.coordinator.partitioning import GROUP_TOPIC
from broker.coordinator.runtime import CoordinatorLog, CoordinatorRuntime
from broker.errors import ErrorCode, KafkaError

MAX_METADATA_BYTES = 4096


class GroupCoordinator:
    def __init__(self, config: GroupConfig, log_: CoordinatorLog) -> None:
        self.config = config
        self.runtime: CoordinatorRuntime[GroupShard] = CoordinatorRuntime(
            GROUP_TOPIC, config.num_partitions, log_, lambda p: GroupShard(p, self._activate)
        )
        self.engine = RebalanceEngine(config, self._persist_group)

    def _activate(self, shard: GroupShard) -> None:
        for group in shard.groups.values():
            self.engine.start_sessions(group)

        def shutdown() -> None:
            for group in shard.groups.values():
                self.engine.shutdown(group)

        shard.on_deactivate(shutdown)

    def stop(self) -> None:
        self.runtime.unload_all()

    def _group(self, group_id: str, create: bool) -> tuple[GroupShard, Group | None]:
        if not group_id:
            raise KafkaError(ErrorCode.invalid_group_id)
        shard = self.runtime.shard_for(group_id)
        group = shard.groups.get(group_id)
        if group is None and create:
            group = shard.groups[group_id] = Group(group_id)
        return shard, group

    async def _persist_group(self, group: Group) -> None:
        partition = self.runtime.partition_for(group.group_id)
        value = records.group_value(group_to_record(group))
        await self.runtime.write(partition, [(records.group_key(group.group_id), value)])

    # ---- membership ------------------------------------------------------------------

    async def join(self, group_id: str, request: JoinRequest) -> JoinResult:
        _, group = self._group(group_id, create=request.member_id == "")
        if group is None:
            return JoinResult(ErrorCode.unknown_member_id, request.member_id)
        return await self.engine.join(group, request)

    async def sync(self, group_id: str, request: SyncRequest) -> tuple[ErrorCode, bytes]:
        _, group = self._group(group_id, create=False)
        if group is None:
            return ErrorCode.unknown_member_id, b""
        return await self.engine.sync(group, request)

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        _, group = self._group(group_id, create=False)
        if group is None:
            return ErrorCode.unknown_member_id
        return self.engine.heartbeat(group, generation, member_id, group_instance_id)

    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
        """Per-member errors; an unknown group raises UNKNOWN_MEMBER_ID for all."""
        _, group = self._group(group_id, create=False)
        if group is None:
            raise KafkaError(ErrorCode.unknown_member_id)
        return [self.engine.leave(group, member_id, instance) for member_id, instance in members]

    # ---- offsets ---------------------------------------------------------------------

    async def commit_offsets(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: dict[TopicPartition, CommittedOffset],
    ) -> dict[TopicPartition, ErrorCode]:
        shard, group = self._group(group_id, create=generation < 0)
        if group is None:
            raise KafkaError(ErrorCode.illegal_generation)
        error = self.engine.validate_commit(group, generation, member_id, group_instance_id)
        if error is not ErrorCode.none:
            raise KafkaError(error)
        return await self._write_offsets(shard, group_id, offsets)

    async def commit_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: dict[TopicPartition, CommittedOffset],
    ) -> dict[TopicPartition, ErrorCode]:
        """Written now as transactional records, visible once the COMMIT marker lands."""
        shard, group = self._group(group_id, create=True)
        assert group is not None
        if shard.offsets.is_fenced(producer_id, producer_epoch):
            raise KafkaError(ErrorCode.producer_fenced)
        if member_id and member_id not in group.members:
            raise KafkaError(ErrorCode.unknown_member_id)
        if member_id and generation >= 0 and generation != group.generation:
            raise KafkaError(ErrorCode.illegal_generation)
        if group_instance_id and group.static_members.get(group_instance_id) not in (
            None,
            member_id,
        ):
            raise KafkaError(ErrorCode.fenced_instance_id)
        return await self._write_offsets(shard, group_id, offsets, producer_id, producer_epoch)

    async def _write_offsets(
        self,
        shard: GroupShard,
        group_id: str,
        offsets: dict[TopicPartition, CommittedOffset],
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> dict[TopicPartition, ErrorCode]:
        errors: dict[TopicPartition, ErrorCode] = {}
        valid: dict[TopicPartition, CommittedOffset] = {}
        for tp, committed in offsets.items():
            if len(committed.metadata.encode()) > MAX_METADATA_BYTES:
                errors[tp] = ErrorCode.offset_metadata_too_large
            else:
                valid[tp] = committed
        if valid:
            batch = [
                (
                    records.offset_key(group_id, topic, partition),
                    records.offset_value(c.offset, c.leader_epoch, c.metadata, c.timestamp_ms),
                )
                for (topic, partition), c in valid.items()
            ]
            await self.runtime.write(shard.partition, batch, producer_id, producer_epoch)
            if producer_id >= 0:
                shard.offsets.add_pending(producer_id, producer_epoch, group_id, valid)
            else:
                shard.offsets.commit(group_id, valid)
        return {**errors, **dict.fromkeys(valid, ErrorCode.none)}

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None, require_stable: bool
    ) -> dict[TopicPartition, tuple[CommittedOffset | None, ErrorCode]]:
        """Committed offsets (all of the group's when ``partitions`` is None)."""
        shard, _ = self._group(group_id, create=False)
        committed = shard.offsets.fetch(group_id)
        wanted = sorted(committed) if partitions is None else partitions
        result: dict[TopicPartition, tuple[CommittedOffset | None, ErrorCode]] = {}
        for tp in wanted:
            if require_stable and shard.offsets.has_pending(group_id, tp):
                result[tp] = (None, ErrorCode.unstable_offset_commit)
            else:
                result[tp] = (committed.get(tp), ErrorCode.none)
        return result

    def on_offsets_marker(self, partition: int, producer_id: int, epoch: int, commit: bool) -> None:
        """A transaction marker landed in ``__consumer_offsets``-``partition``."""
        if self.runtime.owns(partition):
            try:
                self.runtime.shard(partition).offsets.complete(producer_id, epoch, commit)
            except KafkaError:
                return

    # ---- deletion --------------------------------------------------------------------

    async def delete_group(self, group_id: str) -> None:
        """DeleteGroups for one group, as Kafka's classic coordinator: only an
        empty group (no members) goes, its metadata and committed offsets
        written away as tombstones; GROUP_ID_NOT_FOUND for a group with neither,
        NON_EMPTY_GROUP for one with members."""
        shard, group = self._group(group_id, create=False)
        committed = shard.offsets.fetch(group_id)
        if group is None and not committed:
            raise KafkaError(ErrorCode.group_id_not_found, group_id)
        if group is not None and group.state not in (GroupState.EMPTY, GroupState.DEAD):
            raise KafkaError(ErrorCode.non_empty_group, f"{group_id} is {group.state.value}")
        tombstones: list[tuple[bytes, bytes | None]] = [
            (records.offset_key(group_id, topic, partition), None)
            for topic, partition in sorted(committed)
        ]
        tombstones.append((records.group_key(group_id), None))
        await self.runtime.write(shard.partition, tombstones)
        for tp in list(committed):
            shard.offsets.delete(group_id, tp)
        shard.groups.pop(group_id, None)

    # ---- inspection ------------------------------------------------------------------

    def describe(self, group_id: str) -> Group | None:
        _, group = self._group(group_id, create=False)
        return group

    def list_groups(self, states: set[str] | None) -> list[Group]:
        groups: list[Group] = []
        for shard in self.runtime.active_shards():
            for group in shard.groups.values():
                if not states or group.state.value.lower() in states:
                    groups.append(group)
        return groups
