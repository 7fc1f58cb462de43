"""KIP-890 (part 1) verification of transactional writes, on the partition leader.

A transactional batch that would start a transaction on a partition (its producer
has none open there at this epoch) is appended only once the transaction
coordinator confirms the partition is in the producer's ongoing transaction, at
this epoch (AddPartitionsToTxn with ``verify_only``). Without it a write that
arrives after its transaction ended (a delayed produce, a retry behind a pause)
opens a transaction of its own on the partition, which the producer's next
transaction's marker then resolves: an aborted write committed, or a later
transaction's outcome decided by an earlier one (hanging and zombie
transactions, KAFKA-14402). A marker for
the producer landing while the coordinator is asked clears the producer's
verification guard, and the write is refused (Kafka's VerificationGuard).
The ``delayed-endtxn`` bug mode skips this check.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kio.schema.add_partitions_to_txn.v4 import request as apt_req
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32

from broker import bugs
from broker.coordinator.partitioning import CoordinatorType
from broker.coordinator.txn.coordinator import TransactionCoordinator
from broker.coordinator.txn.peers import PeerPool
from broker.errors import ErrorCode, KafkaError
from broker.log.batch import CorruptBatch, parse_header
from broker.replication.peer_client import PeerError
from broker.server.metadata_cache import Node
from broker.server.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
TIMEOUT_S = 5.0

# The coordinator answered for the transaction: the write is refused with its answer.
_DEFINITE = frozenset(
    {
        ErrorCode.invalid_txn_state,
        ErrorCode.producer_fenced,
        ErrorCode.invalid_producer_epoch,
        ErrorCode.invalid_producer_id_mapping,
    }
)


def verify_request(
    transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition
) -> apt_req.AddPartitionsToTxnRequest:
    return apt_req.AddPartitionsToTxnRequest(
        transactions=(
            apt_req.AddPartitionsToTxnTransaction(
                transactional_id=TransactionalId(transactional_id),
                producer_id=ProducerId(producer_id),
                producer_epoch=i16(epoch),
                verify_only=True,
                topics=(
                    apt_req.AddPartitionsToTxnTopic(
                        name=TopicName(tp[0]), partitions=(i32(tp[1]),)
                    ),
                ),
            ),
        )
    )


class TxnVerifier:
    def __init__(
        self,
        node_id: int,
        replica_manager: ReplicaManager,
        txn: TransactionCoordinator,
        coordinator_for: Callable[[CoordinatorType, str], Node | None],
    ) -> None:
        """``txn`` answers for the transactional ids coordinated here,
        ``coordinator_for`` names the node that coordinates one."""
        self._node_id = node_id
        self._replica_manager = replica_manager
        self._txn = txn
        self._coordinator_for = coordinator_for
        self._peers = PeerPool(f"jepka-txn-verify-{node_id}")

    async def check_append(
        self, transactional_id: str | None, topic: str, partition: int, records: bytes
    ) -> None:
        """Raises ``KafkaError`` unless the batch may be appended: INVALID_TXN_STATE
        (or the fencing error) for a write outside its transaction, the retriable
        NOT_ENOUGH_REPLICAS while the coordinator cannot be asked."""
        if bugs.active("delayed-endtxn") or not transactional_id:
            return
        try:
            header = parse_header(records)
        except CorruptBatch:
            return  # the append refuses it with the proper error
        if not header.is_transactional or header.is_control:
            return
        hosted = self._replica_manager.partitions.get((topic, partition))
        if hosted is None:
            return
        entry = hosted.log.producer_state.producers.get(header.producer_id)
        open_here = entry is not None and entry.txn_first_offset is not None
        if open_here and entry.epoch == header.producer_epoch:
            return  # the transaction is open here already: verified when it began
        tp = (topic, partition)
        state = hosted.log.producer_state
        guard = state.start_verification(header.producer_id)
        code = await self._ask(transactional_id, header.producer_id, header.producer_epoch, tp)
        if code is ErrorCode.none and state.verifying.get(header.producer_id) is not guard:
            # a marker ended the transaction while the coordinator was asked: the
            # write is late (its caller appends right after this returns)
            raise KafkaError(ErrorCode.invalid_txn_state, f"{topic}-{partition}: txn ended")
        if code is ErrorCode.none:
            return
        if code in _DEFINITE:
            raise KafkaError(code, f"{topic}-{partition} is not in the ongoing transaction")
        raise KafkaError(ErrorCode.not_enough_replicas, f"cannot verify: {code.name}")

    async def _ask(
        self, transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition
    ) -> ErrorCode:
        where = self._coordinator_for(CoordinatorType.TRANSACTION, transactional_id)
        if where is None:
            return ErrorCode.coordinator_not_available
        if where[0] == self._node_id:
            try:
                return self._txn.verify(transactional_id, producer_id, epoch, {tp})[tp]
            except KafkaError as exc:
                return exc.code
        request = verify_request(transactional_id, producer_id, epoch, tp)
        try:
            answer: Any = await self._peers.get(*where).request(request, TIMEOUT_S)
        except PeerError as exc:
            log.info("verifying %s with node %d: %s", transactional_id, where[0], exc)
            return ErrorCode.request_timed_out
        for txn in answer.results_by_transaction:
            for topic in txn.topic_results:
                for p in topic.results_by_partition:
                    return ErrorCode(int(p.partition_error_code))
        return ErrorCode(int(answer.error_code)) or ErrorCode.unknown_server_error

    def close(self) -> None:
        self._peers.close()
