"""Who holds a Kafka role right now, asked of the cluster like a client would.

Partition leaders come from a Metadata request; the active controller from
a DescribeQuorum request, which brokers forward to it (Metadata names a
broker as controller when the controllers are nodes of their own);
coordinators from a FindCoordinator request (key type 0 for a group, 1 for a
transactional id). Each goes to every broker at once, one connection each,
so that brokers paused or cut off hold the nemesis for one short timeout in
all; the first broker in node order that answers is believed, as a client
believes the broker it asks, however stale its view. Broker ids map to nodes
by `Node.node_id`.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, TypeVar

from control.backends.base import Node

T = TypeVar("T")

KEY_TYPES = {"group": 0, "transaction": 1}


class RoleLookupError(RuntimeError):
    """The cluster could not say who holds a role."""


def _exchange(address: str, port: int, request: Any, timeout: float) -> Any:
    """``request``'s response from the broker at ``address``. The wire code
    is imported here, when first asked: importing kio registers hypothesis
    strategies when hypothesis is installed, which brokers started through
    the CLI must not do."""
    from broker.replication.peer_client import decode_response, encode_request

    with socket.create_connection((address, port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(encode_request(request, 1, "jepka-nemesis"))
        size = struct.unpack(">i", _recv(s, 4))[0]
        _, response = decode_response(_recv(s, size), request)
    return response


def find_coordinator(address: str, port: int, kind: str, key: str, timeout: float = 5.0) -> int:
    """The broker id coordinating a group or transactional id (FindCoordinator v1)."""
    from kio.schema.find_coordinator.v1.request import FindCoordinatorRequest
    from kio.static.primitive import i8

    request = FindCoordinatorRequest(key=key, key_type=i8(KEY_TYPES[kind]))
    response = _exchange(address, port, request, timeout)
    if response.error_code:
        code = int(response.error_code)
        raise RoleLookupError(f"FindCoordinator({kind} {key!r}) failed with error code {code}")
    return int(response.node_id)


def quorum_leader(address: str, port: int, timeout: float = 5.0) -> int:
    """The metadata quorum's leader, the active controller, by DescribeQuorum v1."""
    from broker.replication.controller_apis import describe_quorum_request

    response = _exchange(address, port, describe_quorum_request(), timeout)
    partitions = [p for t in response.topics for p in t.partitions]
    if response.error_code or not partitions or partitions[0].error_code:
        code = response.error_code or (partitions[0].error_code if partitions else "no partition")
        raise RoleLookupError(f"DescribeQuorum failed: {code}")
    if partitions[0].leader_id < 0:
        raise RoleLookupError("DescribeQuorum: no leader known")
    return int(partitions[0].leader_id)


def partition_leaders(address: str, port: int, timeout: float = 5.0) -> list[tuple[str, int, int]]:
    """``(topic, partition, leader id)`` of every partition with a leader, by
    Metadata v9 (Kafka 2.4 on) for every topic."""
    from kio.schema.metadata.v9.request import MetadataRequest

    request = MetadataRequest(
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    response = _exchange(address, port, request, timeout)
    return sorted(
        (str(t.name), int(p.partition_index), int(p.leader_id))
        for t in response.topics
        if not t.error_code
        for p in t.partitions
        if p.leader_id >= 0
    )


def _recv(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise RoleLookupError("connection closed mid-response")
        data += chunk
    return data


#: how long one broker may take to answer a role lookup: a paused one takes
#: the connection and never answers
ASK_NODE_S = 2.0


#: how long past its timeout an ask is waited for, to give its own error
GRACE_S = 0.5


def first_answer(
    nodes: Sequence[Node], ask: Callable[[Node], T], what: str, timeout: float = ASK_NODE_S
) -> T:
    """The answer ``ask`` gets from the first of ``nodes``, in their order, that
    answers within ``timeout`` seconds (and a moment's grace, so that an ask
    that times out itself says so). All are asked at once, so that paused
    or cut-off brokers hold the caller (the nemesis, which waits before its
    next fault) for one timeout in all, not one each; a RoleLookupError
    naming each node's failure when none answers."""
    errors = []
    deadline = time.monotonic() + timeout + GRACE_S
    pool = ThreadPoolExecutor(max_workers=max(1, len(nodes)), thread_name_prefix="jepka-role")
    try:
        asked = [(node, pool.submit(ask, node)) for node in nodes]
        for node, future in asked:
            if not wait([future], timeout=max(0.0, deadline - time.monotonic())).done:
                errors.append(f"{node.name}: no answer in {timeout:g} s")
                continue
            try:
                return future.result()
            except Exception as e:  # a garbled answer too: the next node may answer
                errors.append(f"{node.name}: {e}")
    finally:
        pool.shutdown(wait=False)  # an ask still waiting is left to its socket's timeouts
    raise RoleLookupError(f"no broker answered {what}: " + "; ".join(errors or ["none asked"]))


class KafkaRoles:
    """`nemesis.targets.Roles` backed by the live cluster: asked of its
    `brokers` (all `nodes` unless controllers run on nodes of their own)."""

    def __init__(
        self,
        nodes: Sequence[Node],
        port: int,
        rng: random.Random | None = None,
        timeout: float = 10.0,
        brokers: Sequence[Node] | None = None,
    ) -> None:
        self.nodes = list(nodes)
        self.brokers = list(nodes if brokers is None else brokers)
        self.port = port
        self.rng = rng or random.Random(0)
        self.timeout = timeout

    def close(self) -> None:
        """Nothing to drop: every ask opens its own connections and closes them."""

    def _name(self, broker_id: int) -> str:
        for n in self.nodes:
            if n.node_id == broker_id:
                return n.name
        raise RoleLookupError(f"broker id {broker_id} is not a node of this cluster")

    def _ask_brokers(self, ask: Callable[[Node, float], T], what: str) -> T:
        """What the first broker that answers says."""
        timeout = min(self.timeout, ASK_NODE_S)
        return first_answer(self.brokers, lambda node: ask(node, timeout), what, timeout)

    def controller(self) -> str:
        return self._ask_brokers(
            lambda node, timeout: self._name(quorum_leader(node.address, self.port, timeout)),
            "DescribeQuorum",
        )

    def _partitions(self, internal: bool = False) -> list[tuple[str, int, int]]:
        every = self._ask_brokers(
            lambda node, timeout: partition_leaders(node.address, self.port, timeout), "Metadata"
        )
        return [x for x in every if internal or not x[0].startswith("__")]

    def leader(self, topic: str | None = None, partition: int | None = None) -> str:
        parts = [
            x
            for x in self._partitions(internal=topic is not None)
            if (topic is None or x[0] == topic) and (partition is None or x[1] == partition)
        ]
        if not parts:
            raise RoleLookupError(
                f"no leader known for {topic or 'any topic'}"
                + (f" partition {partition}" if partition is not None else "")
            )
        return self._name(self.rng.choice(parts)[2])

    def leaders(self) -> list[str]:
        ids = {leader for _, _, leader in self._partitions()}
        return [n.name for n in self.nodes if n.node_id in ids]

    def coordinator(self, kind: str, key: str) -> str:
        if kind not in KEY_TYPES:
            raise RoleLookupError(f"unknown coordinator kind {kind!r}; known: group, transaction")
        return self._ask_brokers(
            lambda node, timeout: self._name(
                find_coordinator(node.address, self.port, kind, key, timeout)
            ),
            "FindCoordinator",
        )
