"""A stand-in Apache Kafka installation: a directory laid out as Kafka's
(``bin/kafka-storage.sh``, ``bin/kafka-server-start.sh``) whose scripts run
the reference broker on Kafka's own arguments and ``server.properties``, so
the Kafka adapter is exercised end to end without a JVM Kafka."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

STORAGE = """#!/bin/sh
# kafka-storage.sh format -t CLUSTER_ID -c server.properties: writes each
# log directory's meta.properties, as Kafka's does
set -e
[ "$1" = format ] || { echo "kafka-storage.sh: only format is supported" >&2; exit 1; }
shift
while [ $# -gt 0 ]; do
  case "$1" in
    -t|--cluster-id) id=$2; shift 2 ;;
    -c|--config) config=$2; shift 2 ;;
    *) shift ;;
  esac
done
node=$(sed -n 's/^node\\.id=//p' "$config")
for dir in $(sed -n 's/^log\\.dirs=//p' "$config" | tr , ' '); do
  mkdir -p "$dir"
  printf 'version=1\\ncluster.id=%s\\nnode.id=%s\\n' "$id" "$node" > "$dir/meta.properties"
done
echo "Formatting $dir with metadata.version 3.7-IV4."
"""

START = """#!/bin/sh
# kafka-server-start.sh server.properties
mkdir -p "${{LOG_DIR:-/tmp}}"
exec {python} -m broker --config "$1"
"""


def make_kafka_home(root: Path) -> Path:
    """A stand-in Kafka installation under ``root``; returns its directory."""
    home = root / "kafka_2.13-3.7.0"
    (home / "bin").mkdir(parents=True)
    scripts = {
        "kafka-storage.sh": STORAGE,
        "kafka-server-start.sh": START.format(python=shlex.quote(sys.executable)),
    }
    for name, text in scripts.items():
        path = home / "bin" / name
        path.write_text(text)
        path.chmod(0o755)
    return home
