#!/usr/bin/env bash
# Runs every benchmark under bench/ (bench_*.py); each prints its figures and
# the command that made them.
set -euo pipefail
cd "$(dirname "$0")/.."
for b in bench/bench_*.py; do
    echo "== $b"
    .venv/bin/python "$b" "$@"
done
