#!/usr/bin/env bash
# `make demo`: the main job on the embedded default — transactions of sends
# and polls against a replicated 3-node reference cluster (RF 3, min ISR 2,
# each node in its own network namespace) while the network between the
# brokers is partitioned — ending with a verdict, a stored run and the path
# of its report. Extra arguments go to `jepka test`.
# (The shipped example histories are checked with `jepka check examples/...`.)
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/jepka test --workload txn --nemesis partition --time-limit 30 "$@"
