"""DescribeQuorum: the Raft leader describes its quorum (voters and observers
with their matched log end offsets), any other voter answers NOT_CONTROLLER so
a broker forwarding it tries the leader; a single node is its own quorum."""

from __future__ import annotations

import asyncio
import socket
import struct

from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from broker.raft.simulation import SimCluster
from broker.replication.controller_apis import describe_quorum_request, handle_describe_quorum
from broker.replication.peer_client import decode_response, encode_request
from tests.broker.raft.test_simulation import wait_for_convergence


def test_the_leader_describes_voters_and_observers() -> None:
    cluster = SimCluster(3, 29, observers=1)
    wait_for_convergence(cluster)
    cluster.run_for(100)  # the leader learns what each replica holds from its next fetch
    leader = cluster.leader()
    assert leader is not None
    answer = asyncio.run(handle_describe_quorum(leader, describe_quorum_request()))
    (partition,) = answer.topics[0].partitions
    assert (answer.error_code, partition.leader_id) == (ErrorCode.none, leader.node_id)
    assert partition.leader_epoch == leader.epoch
    end = leader.log.end_offset
    assert partition.high_watermark == end
    assert [(r.replica_id, r.log_end_offset) for r in partition.current_voters] == [
        (1, end),
        (2, end),
        (3, end),
    ]
    assert [(r.replica_id, r.log_end_offset) for r in partition.observers] == [(4, end)]
    follower = cluster.nodes[min(cluster.ids - {leader.node_id})].client
    assert follower is not None
    refused = asyncio.run(handle_describe_quorum(follower, describe_quorum_request()))
    assert (refused.error_code, refused.topics) == (ErrorCode.not_controller, ())


def test_a_single_node_names_itself(broker: BrokerProcess) -> None:
    request = describe_quorum_request()
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        s.sendall(encode_request(request, 7, "test"))
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        _, answer = decode_response(s.recv(size, socket.MSG_WAITALL), request)
    (partition,) = answer.topics[0].partitions
    assert (answer.error_code, partition.leader_id) == (ErrorCode.none, broker.node_id)
    assert [r.replica_id for r in partition.current_voters] == [broker.node_id]
