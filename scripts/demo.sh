#!/usr/bin/env bash
# `make demo`: the main job on the embedded default — transactions of sends
# and polls against the reference broker while the network is partitioned
# (between brokers, and between the clients and the brokers, which is what
# bites on a one-node cluster) — ending with a verdict, a stored run and the
# path of its report. Extra arguments go to `jepka test`.
# (The shipped example histories are checked with `jepka check examples/...`.)
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/jepka test --workload txn --nemesis partition,clients --time-limit 30 "$@"
