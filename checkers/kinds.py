"""Every anomaly kind the checker can report, by name: the one list of kinds.

Each record (:class:`checkers.kind.Kind`) is defined beside its finder; the
per-key and workload check tables, the cycle search, the sentences, the
allowances and the reports' paragraphs all read it from here. The order is
the order the checks run and report kinds in.
"""

from __future__ import annotations

from checkers.cycles import kinds as cycles
from checkers.kind import Case, Kind
from checkers.queue import (
    aborted_reads,
    hanging,
    internal_order,
    lost_writes,
    poll_order,
    unseen,
    version_order,
)
from checkers.workloads import eos, group

KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        version_order.INCONSISTENT_OFFSETS,
        version_order.DUPLICATE,
        lost_writes.LOST_WRITE,
        unseen.UNSEEN,
        hanging.HANGING_TRANSACTION,
        aborted_reads.G1A,
        aborted_reads.PRECOMMITTED_READ,
        internal_order.INT_POLL_SKIP,
        internal_order.INT_NONMONOTONIC_POLL,
        poll_order.POLL_SKIP,
        poll_order.NONMONOTONIC_POLL,
        poll_order.NONMONOTONIC_SEND,
        internal_order.INT_SEND_SKIP,
        internal_order.INT_NONMONOTONIC_SEND,
        eos.EOS_LOST,
        eos.EOS_DUPLICATE,
        group.COMMITTED_OFFSET_REGRESSION,
        group.SPLIT_OWNERSHIP,
        group.RESUME_SKIP,
        cycles.G0,
        cycles.G1C,
        cycles.G0_PROCESS,
        cycles.G1C_PROCESS,
        cycles.G0_REALTIME,
        cycles.G1C_REALTIME,
        cycles.SEARCH_TIMEOUT,
    )
}


def explain(kind: str, case: Case) -> str:
    """One instance of ``kind`` in a plain sentence, from its data alone."""
    return KINDS[kind].sentence(case)
