#!/bin/sh
# Container entry: start the broker as a detached child with a pidfile, the
# same layout the harness uses on every backend (so it can kill, pause and
# restart the broker inside a live container), then idle. The container runs
# with an init (compose `init: true`) that reaps children.
#   /data/broker.pid  /data/broker.stdout  /data/faketime  /data/data/ (broker data)
# With JEPKA_REPLICATED=1 the nodes form one combined-mode cluster of
# JEPKA_VOTERS.
set -eu
mkdir -p /data/data
[ "${JEPKA_REPLICATED:-0}" = 1 ] || JEPKA_VOTERS=
cd /data
[ -f faketime ] || echo "+0" > faketime
preload=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n1 || true)
env LD_PRELOAD="$preload" FAKETIME_TIMESTAMP_FILE=/data/faketime FAKETIME_NO_CACHE=1 \
    FAKETIME_DONT_FAKE_MONOTONIC=1 \
    setsid python3 -m broker --node-id "${JEPKA_NODE_ID:?}" --listen "${JEPKA_LISTEN:-0.0.0.0:9092}" \
    --data-dir /data/data ${JEPKA_VOTERS:+--voters "$JEPKA_VOTERS"} ${JEPKA_BROKER_ARGS:-} >>/data/broker.stdout 2>&1 </dev/null &
# the pid and its start time, as the harness writes them (control/remote.py)
pid=$!
start=$(sed 's/.*) //' /proc/$pid/stat 2>/dev/null | cut -d' ' -f20)
echo "$pid ${start:-0}" > /data/broker.pid
exec sleep infinity
