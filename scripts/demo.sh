#!/usr/bin/env bash
# `make demo`: check the two example histories shipped in examples/ and show
# both verdicts. The anomalous one exits 1 (invalid), which is the point.
set -uo pipefail
cd "$(dirname "$0")/.."
JEPKA=.venv/bin/jepka

run() {
    echo
    echo "== jepka check $1"
    "$JEPKA" check "$1"
    code=$?
    echo "exit code: $code"
    return $code
}

run examples/valid.jsonl || { echo "expected examples/valid.jsonl to be valid" >&2; exit 1; }
run examples/anomalies.jsonl
case $? in
    1) echo; echo "demo: valid history passed; the anomalous one was caught (exit 1), as expected." ;;
    *) echo "expected examples/anomalies.jsonl to be invalid (exit 1)" >&2; exit 1 ;;
esac
