"""A consume-transform-produce worker, run as its own process so a test can
kill it mid-transaction: ``python ctp_worker.py BOOTSTRAP [CRASH_IN_TXN]``.

It copies topic ``in`` to topic ``out`` in transactions of up to five records,
committing the input offsets with ``send_offsets_to_transaction``, and exits 0
once it has consumed ``in`` to its end. With ``CRASH_IN_TXN`` it SIGKILLs
itself in that transaction, after its outputs and offsets reached the broker
but before the commit.
"""

from __future__ import annotations

import os
import signal
import sys

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from workloads.handles import Clients

INPUT, OUTPUT, GROUP, TRANSACTIONAL_ID = "in", "out", "ctp", "ctp-worker"
PER_TXN = 5


def main(bootstrap: str, crash_in_txn: int | None) -> int:
    with Clients() as clients:
        producer = clients.producer(
            {"bootstrap.servers": bootstrap, "transactional.id": TRANSACTIONAL_ID}
        )
        producer.init_transactions(30)  # fences and aborts whatever a crashed run left open
        consumer = clients.consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
        return copy(producer, consumer, crash_in_txn)


def copy(producer: Producer, consumer: Consumer, crash_in_txn: int | None) -> int:
    """Copies ``in`` to ``out`` from the committed offsets; 0 once at the input's end."""
    partitions = len(consumer.list_topics(INPUT, 30).topics[INPUT].partitions)
    tps = [TopicPartition(INPUT, p) for p in range(partitions)]
    ends = {tp.partition: consumer.get_watermark_offsets(tp, 30)[1] for tp in tps}
    start = consumer.committed(tps, 30)
    consumer.assign(
        [
            TopicPartition(INPUT, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING)
            for tp in start
        ]
    )
    txn = 0
    while True:
        positions = {tp.partition: tp.offset for tp in consumer.position(tps)}
        if all(positions[p] >= ends[p] for p in ends):
            return 0
        batch = [m for m in consumer.consume(PER_TXN, 1.0) if m.error() is None]
        if not batch:
            continue
        txn += 1
        producer.begin_transaction()
        for message in batch:
            producer.produce(OUTPUT, value=message.value(), partition=message.partition())
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
        )
        if txn == crash_in_txn:
            producer.flush(30)
            os.kill(os.getpid(), signal.SIGKILL)
        producer.commit_transaction(30)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None))
