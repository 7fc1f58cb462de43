"""The workload checks' case finders, by kind, for ``checkers.queue.check``."""

from __future__ import annotations

from checkers.workloads import eos, group

FINDERS = {
    "eos-lost": eos.eos_lost,
    "eos-duplicate": eos.eos_duplicate,
    "committed-offset-regression": group.committed_offset_regression,
    "split-ownership": group.split_ownership,
    "resume-skip": group.resume_skip,
}
