"""Switchable historical bugs of Kafka-compatible systems, off by default.

Each is switched on for one broker process with ``--bug NAME`` (repeatable) so that
jepka can show, end to end, that its checkers catch what these bugs break. Every
entry names the public bug it reproduces and the anomaly a checker should report.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.config import ConfigError


@dataclass(frozen=True, slots=True)
class Bug:
    name: str
    reproduces: str
    anomaly: str
    behaviour: str


BUGS: dict[str, Bug] = {
    b.name: b
    for b in (
        Bug(
            "early-ack",
            "acks=all answered at append time, before the ISR has the batch (the class of "
            "bug KIP-101 and Jepsen's 2013 Kafka analysis describe: an acknowledged write "
            "held by the leader alone)",
            "lost-write once the leader fails and a follower without the batch takes over",
            "the leader answers an acks=all produce without waiting for the high watermark",
        ),
        Bug(
            "unclean-election",
            "unclean.leader.election.enable=true forced on: the behaviour Kafka had by "
            "default before 0.11 (KAFKA-1211 era, Jepsen's 2013 Kafka analysis)",
            "lost-write and inconsistent-offsets: an out-of-sync replica leads and the old "
            "leader's acknowledged tail is truncated away",
            "the controller elects any live replica when no in-sync replica is left",
        ),
        Bug(
            "read-above-hw",
            "fetches served past the high watermark (Redpanda #3003-like)",
            "reads of records later truncated away (G1a-like aborted reads, inconsistent-offsets)",
            "consumer fetches read up to the leader's log end instead of its high watermark",
        ),
        Bug(
            "hw-truncation",
            "pre-KIP-101 replication (Kafka before 0.11): a replica truncates to its high "
            "watermark on restart and after a leader change, and reconciles without leader "
            "epochs",
            "lost-write and inconsistent-offsets: the replica drops an acknowledged tail "
            "above its stale HW (lost if it leads next), or keeps a diverged one",
            "a replica recovered at start cuts its log to its checkpointed HW, and on a leader "
            "change a follower cuts its log to its own HW, instead of asking the leader with "
            "OffsetForLeaderEpoch where its epoch ends",
        ),
        Bug(
            "lso-off-by-one",
            "the last stable offset one past the first offset of an open transaction "
            "(Redpanda #3036)",
            "G1a aborted read: a read_committed consumer sees a record of a transaction that "
            "is still open and later aborted",
            "the LSO is the first unstable offset plus one, so a read_committed fetch returns "
            "the open transaction's first batch",
        ),
        Bug(
            "no-dedup",
            "no window of recent batches to deduplicate retries against (Redpanda #3039)",
            "G1a: librdkafka reports the refused retry as the send's failure, yet the first "
            "attempt is in the log; a client that bumps its epoch and resends (as Redpanda's "
            "Java clients did) writes it twice: duplicate",
            "the leader keeps no recent batches per producer, so a retry of a batch already "
            "appended is answered OUT_OF_ORDER_SEQUENCE_NUMBER",
        ),
        Bug(
            "delayed-endtxn",
            "hanging and zombie transactions without KIP-890 part 1 (KAFKA-14402): a delayed "
            "transactional write opens a transaction of its own after its transaction "
            "ended, which the producer's next marker on the partition then resolves",
            "G1a and lost-write (torn transactions): an aborted transaction's write is "
            "committed by the next transaction's marker; hanging-transaction where no "
            "later marker comes",
            "a partition leader appends a transactional batch that starts a transaction "
            "without asking the coordinator whether the partition is in the producer's "
            "ongoing transaction at this epoch",
        ),
        Bug(
            "min-isr-ignored",
            "acks=all acknowledged by a leader alone in its ISR, and any live replica elected "
            "once that leader fails: Jepsen's 2013 Kafka analysis (Kafka 0.8), which led to "
            "min.insync.replicas (KAFKA-1555) and the switch for unclean elections (KAFKA-1028)",
            "lost-write and inconsistent-offsets: writes the lone leader acknowledged are "
            "truncated away when an out-of-sync replica takes over, and later writes take "
            "their offsets",
            "the leader accepts acks=all produces, acknowledges them and advances its high "
            "watermark with an ISR below min.insync.replicas, and the controller elects any "
            "live replica when no in-sync replica is left",
        ),
        Bug(
            "no-epoch-fencing",
            "split brain through ISR changes that no epoch fences: Kafka makes every ISR "
            "change a conditional update of the controller's state (the ZooKeeper version "
            "before 2.7, the leader and partition epochs of AlterPartition since KIP-497), "
            "so a leader cut off from the controller cannot shrink its ISR to the followers "
            "cut off with it",
            "inconsistent-offsets (lost-write where nobody read them first): acks=all writes "
            "a leader cut off with one follower acknowledged are truncated away once the "
            "controller's new leader, the third replica, is back in reach, and its own "
            "writes take their offsets",
            "a leader takes lagging followers out of its ISR at once, on its own authority, "
            "instead of when the controller commits the change",
        ),
    )
}


_active: frozenset[str] = frozenset()


def enable(names: list[str]) -> None:
    """Switches bugs on for this process; an unknown name is an error naming the choices."""
    global _active
    unknown = [n for n in names if n not in BUGS]
    if unknown:
        raise ConfigError(f"--bug: unknown bug {unknown[0]!r} (known: {', '.join(BUGS)})")
    _active = frozenset(names)


def active(name: str) -> bool:
    assert name in BUGS, name
    return name in _active
