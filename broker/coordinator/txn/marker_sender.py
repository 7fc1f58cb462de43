"""WriteTxnMarkers to another node (the network half of the marker channel).

One connection per partition leader, reused across transactions; a leader that
cannot be reached or does not answer in time yields a retriable error for each
of its partitions, so the coordinator's retry loop tries again, asking for the
leader afresh."""

from __future__ import annotations

import logging

from kio.schema.types import ProducerId, TopicName
from kio.schema.write_txn_markers.v1 import request as wtm_req
from kio.static.primitive import i16, i32

from broker.coordinator.txn.markers import TxnMarker
from broker.coordinator.txn.peers import PeerPool
from broker.errors import ErrorCode
from broker.replication.peer_client import PeerError

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
REQUEST_TIMEOUT_S = 15.0  # the leader answers once its ISR has the markers


def write_txn_markers_request(
    marker: TxnMarker, partitions: list[TopicPartition]
) -> wtm_req.WriteTxnMarkersRequest:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    writable = wtm_req.WritableTxnMarker(
        producer_id=ProducerId(marker.producer_id),
        producer_epoch=i16(marker.producer_epoch),
        transaction_result=marker.commit,
        topics=tuple(
            wtm_req.WritableTxnMarkerTopic(
                name=TopicName(t), partition_indexes=tuple(i32(p) for p in ps)
            )
            for t, ps in by_topic.items()
        ),
        coordinator_epoch=i32(marker.coordinator_epoch),
    )
    return wtm_req.WriteTxnMarkersRequest(markers=(writable,))


class MarkerSender:
    def __init__(self, node_id: int, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self._timeout_s = timeout_s
        self._peers = PeerPool(f"jepka-txn-markers-{node_id}")

    async def write(
        self,
        leader: tuple[int, str, int],
        marker: TxnMarker,
        partitions: list[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        request = write_txn_markers_request(marker, partitions)
        try:
            answer = await self._peers.get(*leader).request(request, self._timeout_s)
        except PeerError as exc:
            log.info("WriteTxnMarkers to node %d: %s", leader[0], exc)
            return dict.fromkeys(partitions, ErrorCode.request_timed_out)
        results = dict.fromkeys(partitions, ErrorCode.unknown_server_error)
        for marker in answer.markers:
            for topic in marker.topics:
                for p in topic.partitions:
                    tp = (str(topic.name), int(p.partition_index))
                    if tp in results:
                        results[tp] = ErrorCode(int(p.error_code))
        return results

    def close(self) -> None:
        self._peers.close()
