"""A client's CreateTopics, CreatePartitions, DeleteTopics and DescribeQuorum, and
Metadata's auto-creation, forwarded to the active controller (Kafka's ``ForwardingManager``
and ``AutoTopicCreationManager``). A creation is answered once this broker's
metadata holds the new topics or partitions, so the client's next request sees
them."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from kio.schema.errors import ErrorCode

from broker.controller import requests as c
from broker.controller.topic_configs import Op
from broker.replication import controller_apis as apis
from broker.replication.controller_channel import ControllerChannel, ControllerUnavailable
from broker.server.topics import TopicStore

log = logging.getLogger(__name__)


class ForwardingManager:
    def __init__(
        self, channel: ControllerChannel, topics: TopicStore, reads: ControllerChannel
    ) -> None:
        """``channel`` is the forwarding channel; ``reads`` the channel DescribeQuorum
        goes over, whose short attempts neither wait behind a slow forwarded request
        nor mind being sent twice; ``topics`` is the table the metadata publisher
        keeps."""
        self._channel = channel
        self._topics = topics
        self._reads = reads

    async def create_topics(self, topics: list[c.CreatableTopic], timeout: float = 30) -> Any:
        """Forwards to the controller, then waits (up to ``timeout``) until this broker's
        metadata holds the created topics, so a client's next request sees them."""
        answer = await self._channel.call(apis.create_topics_request(topics), timeout)
        created = {r.name for r in answer.topics if r.error_code is ErrorCode.none}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not created <= set(self._topics.topics) and loop.time() < deadline:
            await asyncio.sleep(0.02)
        return answer

    async def auto_create(self, name: str) -> None:
        """Asks the controller for a topic a client's Metadata request named."""
        try:
            await self.create_topics([c.CreatableTopic(name)], timeout=5)
        except ControllerUnavailable as e:
            log.info("auto-creating %s: %s", name, e)

    async def forward_create_topics(self, request: Any) -> dict[str, Any]:
        """A client's CreateTopics, answered with the controller's results."""
        topics = apis.creatable_topics(request)
        try:
            timeout = max(request.timeout.total_seconds(), 5.0)
            answer = await self.create_topics(topics, timeout)
            results = [
                {
                    "name": r.name,
                    "error_code": r.error_code,
                    "error_message": r.error_message,
                    "num_partitions": r.num_partitions,
                    "replication_factor": r.replication_factor,
                    "configs": [],
                }
                for r in answer.topics
            ]
        except ControllerUnavailable as e:
            results = [
                {"name": t.name, "error_code": ErrorCode.request_timed_out, "error_message": str(e)}
                for t in topics
            ]
        return {"throttle_time": 0, "topics": results}

    async def forward_create_partitions(self, counts: dict[str, int], timeout: float) -> Any:
        """A client's CreatePartitions, answered once this broker's metadata
        holds the new partitions; ``[(name, error, message)]``."""
        try:
            answer = await self._channel.call(apis.create_partitions_request(counts), timeout)
        except ControllerUnavailable as e:
            return [(n, ErrorCode.request_timed_out, str(e)) for n in counts]
        grown = {r.name: counts[r.name] for r in answer.results if r.error_code is ErrorCode.none}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline and not all(
            (t := self._topics.topics.get(n)) is not None and len(t.partitions) >= k
            for n, k in grown.items()
        ):
            await asyncio.sleep(0.02)
        return [(r.name, r.error_code, r.error_message) for r in answer.results]

    async def forward_alter_configs(
        self, changes: dict[str, list[Op]], incremental: bool
    ) -> list[tuple[str, ErrorCode, str | None]]:
        """A client's topic config changes, answered once the controller committed
        them (other brokers learn them from the metadata log, as in Kafka)."""
        request = apis.alter_configs_request(changes, incremental)
        try:
            answer = await self._channel.call(request, timeout=30)
        except ControllerUnavailable as e:
            return [(n, ErrorCode.request_timed_out, str(e)) for n in changes]
        return [(r.resource_name, r.error_code, r.error_message) for r in answer.responses]

    async def forward_describe_quorum(self) -> dict[str, Any]:
        """A client's DescribeQuorum, answered by the active controller."""
        try:
            answer = await self._reads.call(apis.describe_quorum_request(), timeout=5)
        except ControllerUnavailable:
            return {"error_code": ErrorCode.request_timed_out, "topics": []}
        return dataclasses.asdict(answer)

    async def forward_delete_topics(self, names: list[str]) -> dict[str, Any]:
        """A client's DeleteTopics, answered with the controller's results."""
        try:
            answer = await self._channel.call(apis.delete_topics_request(names), timeout=30)
            results = [(r.name, r.error_code) for r in answer.responses]
        except ControllerUnavailable:
            results = [(n, ErrorCode.request_timed_out) for n in names]
        return {
            "throttle_time": 0,
            "responses": [
                {"name": n, "error_code": code, "error_message": None} for n, code in results
            ],
        }
