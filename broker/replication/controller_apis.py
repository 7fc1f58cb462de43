"""The controller's Kafka APIs between kio entities and ``broker.controller``'s
requests: BrokerRegistration, BrokerHeartbeat, AlterPartition, and CreateTopics,
DeleteTopics and DescribeQuorum (forwarded by brokers to the active controller, as
KRaft brokers do).
Builders for the broker side and handlers for the controller side live together so
the two cannot drift apart."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from kio.schema.alter_configs.v2 import request as ac_req
from kio.schema.alter_configs.v2 import response as ac_resp
from kio.schema.alter_partition.v2 import request as ap_req
from kio.schema.alter_partition.v2 import response as ap_resp
from kio.schema.broker_heartbeat.v0 import request as hb_req
from kio.schema.broker_heartbeat.v0 import response as hb_resp
from kio.schema.broker_registration.v0 import request as reg_req
from kio.schema.broker_registration.v0 import response as reg_resp
from kio.schema.create_partitions.v3 import request as cp_req
from kio.schema.create_partitions.v3 import response as cp_resp
from kio.schema.create_topics.v7 import request as ct_req
from kio.schema.create_topics.v7 import response as ct_resp
from kio.schema.delete_topics.v4 import request as dt_req
from kio.schema.delete_topics.v4 import response as dt_resp
from kio.schema.describe_quorum.v1 import request as dq_req
from kio.schema.describe_quorum.v1 import response as dq_resp
from kio.schema.errors import ErrorCode
from kio.schema.incremental_alter_configs.v1 import request as iac_req
from kio.schema.incremental_alter_configs.v1 import response as iac_resp
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64, u16

from broker.controller import requests as c
from broker.controller.quorum_controller import NotControllerError, QuorumController
from broker.controller.topic_configs import Op
from broker.raft.client import RaftClient

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


async def outcome(future: Future[object]) -> tuple[ErrorCode, Any]:
    """The controller's answer, or NOT_CONTROLLER if it is not (or stopped being) active."""
    try:
        return ErrorCode.none, await asyncio.wrap_future(future)
    except NotControllerError:
        return ErrorCode.not_controller, None


# -- BrokerRegistration --------------------------------------------------------------------
def registration_request(
    broker_id: int, cluster_id: str, incarnation: uuid.UUID, host: str, port: int
) -> Any:
    listener = reg_req.Listener(
        name="PLAINTEXT", host=host, port=u16(port), security_protocol=i16(0)
    )
    return reg_req.BrokerRegistrationRequest(
        broker_id=BrokerId(broker_id),
        cluster_id=cluster_id,
        incarnation_id=incarnation,
        listeners=(listener,),
        features=(),
        rack=None,
    )


async def handle_registration(controller: QuorumController, request: Any) -> Any:
    if not request.listeners:
        return reg_resp.BrokerRegistrationResponse(
            throttle_time=NO_THROTTLE, error_code=ErrorCode.invalid_request, broker_epoch=i64(-1)
        )
    listener = request.listeners[0]
    code, answer = await outcome(
        controller.register_broker(
            c.BrokerRegistrationRequest(
                request.broker_id,
                str(request.incarnation_id),
                listener.host,
                listener.port,
                request.rack,
            )
        )
    )
    if answer is not None:
        code = answer.error_code
    return reg_resp.BrokerRegistrationResponse(
        throttle_time=NO_THROTTLE,
        error_code=code,
        broker_epoch=i64(answer.broker_epoch if answer is not None else -1),
    )


# -- BrokerHeartbeat -----------------------------------------------------------------------
def heartbeat_request(broker_id: int, broker_epoch: int, metadata_offset: int) -> Any:
    return hb_req.BrokerHeartbeatRequest(
        broker_id=BrokerId(broker_id),
        broker_epoch=i64(broker_epoch),
        current_metadata_offset=i64(metadata_offset),
        want_fence=False,
        want_shut_down=False,
    )


async def handle_heartbeat(controller: QuorumController, request: Any) -> Any:
    code, answer = await outcome(
        controller.broker_heartbeat(
            c.BrokerHeartbeatRequest(
                request.broker_id,
                request.broker_epoch,
                request.current_metadata_offset,
                request.want_fence,
            )
        )
    )
    if answer is not None:
        code = answer.error_code
    return hb_resp.BrokerHeartbeatResponse(
        throttle_time=NO_THROTTLE,
        error_code=code,
        is_caught_up=True,
        is_fenced=answer.is_fenced if answer is not None else True,
        should_shut_down=False,
    )


# -- AlterPartition ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class IsrItem:
    """One partition's ISR change in an AlterPartition request."""

    topic: str
    topic_id: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    new_isr: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


def alter_partition_request(broker_id: int, broker_epoch: int, items: list[IsrItem]) -> Any:
    by_topic: dict[str, list[IsrItem]] = {}
    for item in items:
        by_topic.setdefault(item.topic_id, []).append(item)
    return ap_req.AlterPartitionRequest(
        broker_id=BrokerId(broker_id),
        broker_epoch=i64(broker_epoch),
        topics=tuple(
            ap_req.TopicData(
                topic_id=uuid.UUID(topic_id),
                partitions=tuple(
                    ap_req.PartitionData(
                        partition_index=i32(item.partition),
                        leader_epoch=i32(item.leader_epoch),
                        new_isr=tuple(BrokerId(b) for b in item.new_isr),
                        leader_recovery_state=i8(0),
                        partition_epoch=i32(item.partition_epoch),
                    )
                    for item in topic_items
                ),
            )
            for topic_id, topic_items in by_topic.items()
        ),
    )


async def handle_alter_partition(controller: QuorumController, request: Any) -> Any:
    """Every partition's change is applied in request order (the controller fences
    each by epochs) before any is awaited, so all commit in one metadata round."""
    pending = [
        (
            topic.topic_id,
            p.partition_index,
            controller.alter_partition(
                c.AlterPartitionRequest(
                    request.broker_id,
                    request.broker_epoch,
                    str(topic.topic_id),
                    p.partition_index,
                    p.leader_epoch,
                    p.partition_epoch,
                    tuple(p.new_isr),
                )
            ),
        )
        for topic in request.topics
        for p in topic.partitions
    ]
    answers: dict[Any, list[Any]] = {}
    for topic_id, index, future in pending:
        code, answer = await outcome(future)
        answer = answer or c.AlterPartitionResponse(code)
        answers.setdefault(topic_id, []).append(
            ap_resp.PartitionData(
                partition_index=index,
                error_code=answer.error_code,
                leader_id=BrokerId(answer.leader),
                leader_epoch=i32(answer.leader_epoch),
                isr=tuple(BrokerId(b) for b in answer.isr),
                leader_recovery_state=i8(0),
                partition_epoch=i32(answer.partition_epoch),
            )
        )
    return ap_resp.AlterPartitionResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        topics=tuple(
            ap_resp.TopicData(topic_id=topic_id, partitions=tuple(parts))
            for topic_id, parts in answers.items()
        ),
    )


# -- DeleteTopics --------------------------------------------------------------------------
def delete_topics_request(names: list[str]) -> Any:
    return dt_req.DeleteTopicsRequest(
        topic_names=tuple(TopicName(n) for n in names),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
    )


async def handle_delete_topics(controller: QuorumController, request: Any) -> Any:
    names = list(request.topic_names)
    code, answer = await outcome(controller.delete_topics(names))
    results = answer or dict.fromkeys(names, code)
    return dt_resp.DeleteTopicsResponse(
        throttle_time=NO_THROTTLE,
        responses=tuple(
            dt_resp.DeletableTopicResult(name=TopicName(n), error_code=c)
            for n, c in results.items()
        ),
    )


# -- IncrementalAlterConfigs and AlterConfigs of topics -----------------------------------
TOPIC_RESOURCE = 2


def alter_configs_request(changes: dict[str, list[Op]], incremental: bool) -> Any:
    """The controller's request for topic config changes: IncrementalAlterConfigs
    with each operation, or AlterConfigs with the whole new set."""
    if incremental:
        return iac_req.IncrementalAlterConfigsRequest(
            resources=tuple(
                iac_req.AlterConfigsResource(
                    resource_type=i8(TOPIC_RESOURCE),
                    resource_name=name,
                    configs=tuple(
                        iac_req.AlterableConfig(name=k, config_operation=i8(op), value=v)
                        for k, op, v in ops
                    ),
                )
                for name, ops in changes.items()
            ),
            validate_only=False,
        )
    return ac_req.AlterConfigsRequest(
        resources=tuple(
            ac_req.AlterConfigsResource(
                resource_type=i8(TOPIC_RESOURCE),
                resource_name=name,
                configs=tuple(ac_req.AlterableConfig(name=k, value=v) for k, _, v in ops),
            )
            for name, ops in changes.items()
        ),
        validate_only=False,
    )


def config_changes(request: Any) -> dict[str, list[Op]]:
    """The topic changes of either request (AlterConfigs' entries as SETs)."""
    return {
        r.resource_name: [
            (cfg.name, int(getattr(cfg, "config_operation", 0)), cfg.value) for cfg in r.configs
        ]
        for r in request.resources
    }


async def handle_alter_configs(
    controller: QuorumController, request: Any, incremental: bool
) -> Any:
    changes = config_changes(request)
    code, answer = await outcome(controller.alter_configs(changes, incremental))
    results = answer or dict.fromkeys(changes, (code, None))
    module = iac_resp if incremental else ac_resp
    response = (
        iac_resp.IncrementalAlterConfigsResponse if incremental else ac_resp.AlterConfigsResponse
    )
    return response(
        throttle_time=NO_THROTTLE,
        responses=tuple(
            module.AlterConfigsResourceResponse(
                error_code=error,
                error_message=message,
                resource_type=i8(TOPIC_RESOURCE),
                resource_name=name,
            )
            for name, (error, message) in results.items()
        ),
    )


# -- CreatePartitions ----------------------------------------------------------------------
def create_partitions_request(counts: dict[str, int]) -> Any:
    return cp_req.CreatePartitionsRequest(
        topics=tuple(
            cp_req.CreatePartitionsTopic(name=TopicName(n), count=i32(k), assignments=None)
            for n, k in counts.items()
        ),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        validate_only=False,
    )


async def handle_create_partitions(controller: QuorumController, request: Any) -> Any:
    counts = {t.name: int(t.count) for t in request.topics}
    code, answer = await outcome(controller.create_partitions(counts))
    results = answer or dict.fromkeys(counts, (code, None))
    return cp_resp.CreatePartitionsResponse(
        throttle_time=NO_THROTTLE,
        results=tuple(
            cp_resp.CreatePartitionsTopicResult(
                name=TopicName(n), error_code=error, error_message=message
            )
            for n, (error, message) in results.items()
        ),
    )


# -- CreateTopics --------------------------------------------------------------------------
def create_topics_request(topics: list[c.CreatableTopic]) -> Any:
    return ct_req.CreateTopicsRequest(
        topics=tuple(
            ct_req.CreatableTopic(
                name=TopicName(t.name),
                num_partitions=i32(t.num_partitions),
                replication_factor=i16(t.replication_factor),
                assignments=(),
                configs=tuple(
                    ct_req.CreatableTopicConfig(name=k, value=v) for k, v in t.configs.items()
                ),
            )
            for t in topics
        ),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        validate_only=False,
    )


def creatable_topics(request: Any) -> list[c.CreatableTopic]:
    """The topics of any CreateTopics version, as the controller takes them."""
    return [
        c.CreatableTopic(
            t.name,
            t.num_partitions,
            t.replication_factor,
            {cfg.name: cfg.value for cfg in t.configs if cfg.value is not None},
        )
        for t in request.topics
    ]


async def handle_create_topics(controller: QuorumController, request: Any) -> Any:
    topics = creatable_topics(request)
    code, answer = await outcome(controller.create_topics(topics))
    results = answer or [c.CreatableTopicResult(t.name, code) for t in topics]
    return ct_resp.CreateTopicsResponse(
        throttle_time=NO_THROTTLE,
        topics=tuple(
            ct_resp.CreatableTopicResult(
                name=TopicName(r.name),
                topic_id=uuid.UUID(r.topic_id) if r.topic_id else None,
                error_code=r.error_code,
                error_message=r.error_message,
                topic_config_error_code=i16(0),
                num_partitions=i32(r.num_partitions),
                replication_factor=i16(r.replication_factor),
                configs=(),
            )
            for r in results
        ),
    )


# -- DescribeQuorum ------------------------------------------------------------------------
METADATA_TOPIC = "__cluster_metadata"


def describe_quorum_request() -> Any:
    partition = dq_req.PartitionData(partition_index=i32(0))
    topic = dq_req.TopicData(topic_name=TopicName(METADATA_TOPIC), partitions=(partition,))
    return dq_req.DescribeQuorumRequest(topics=(topic,))


async def handle_describe_quorum(raft: RaftClient, request: Any) -> Any:
    """The quorum as its leader sees it: who leads in which epoch, the high
    watermark, and each voter's and observer's matched log end offset (-1 for a
    voter not heard from; fetch times are not kept, so reported unknown). Any
    other voter answers NOT_CONTROLLER, so the asking broker tries the leader."""
    offsets = raft.replica_end_offsets()
    if offsets is None:
        return dq_resp.DescribeQuorumResponse(error_code=ErrorCode.not_controller, topics=())

    def states(ids: list[int]) -> tuple[Any, ...]:
        return tuple(
            dq_resp.ReplicaState(replica_id=BrokerId(r), log_end_offset=i64(offsets.get(r, -1)))
            for r in ids
        )

    partition = dq_resp.PartitionData(
        partition_index=i32(0),
        error_code=ErrorCode.none,
        leader_id=BrokerId(raft.node_id),
        leader_epoch=i32(raft.epoch),
        high_watermark=i64(raft.high_watermark if raft.high_watermark is not None else -1),
        current_voters=states(sorted(raft.voters)),
        observers=states(sorted(set(offsets) - raft.voters)),
    )
    topic = dq_resp.TopicData(topic_name=TopicName(METADATA_TOPIC), partitions=(partition,))
    return dq_resp.DescribeQuorumResponse(error_code=ErrorCode.none, topics=(topic,))
