"""A stand-in Apache Kafka installation: a directory laid out as Kafka's
(``bin/kafka-storage.sh``, ``bin/kafka-server-start.sh``, the core jar in
``libs/`` naming the version) whose scripts run the reference broker on
Kafka's own arguments and ``server.properties``, so the Kafka adapter is
exercised end to end without a JVM Kafka.

As Kafka 4.x does, a dynamic quorum (``controller.quorum.bootstrap.servers``)
must be formatted with its first voters (``--initial-controllers`` or
``--standalone``), which the storage keeps; the reference broker, static
only, is then started with those voters as ``controller.quorum.voters``."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

STORAGE = """#!/bin/sh
# kafka-storage.sh format -t CLUSTER_ID -c server.properties
#     [--initial-controllers ID@HOST:PORT:DIRECTORY_ID,... | --standalone]:
# writes each log directory's meta.properties, and a dynamic quorum's first
# voters, refusing what Kafka's formatter refuses
set -e
[ "$1" = format ] || { echo "kafka-storage.sh: only format is supported" >&2; exit 1; }
shift
initial= standalone=
while [ $# -gt 0 ]; do
  case "$1" in
    -t|--cluster-id) id=$2; shift 2 ;;
    -c|--config) config=$2; shift 2 ;;
    --initial-controllers) initial=$2; shift 2 ;;
    --standalone) standalone=1; shift ;;
    *) shift ;;
  esac
done
setting() { sed -n "s/^$1=//p" "$config"; }
node=$(setting 'node\\.id')
if [ -n "$(setting 'controller\\.quorum\\.voters')" ]; then
  [ -z "$initial$standalone" ] || {
    echo "--initial-controllers and --standalone are for a dynamic quorum" >&2; exit 1; }
elif [ -n "$standalone" ]; then
  voters="$node@$(setting listeners | sed -n 's/.*CONTROLLER:\\/\\/\\([^,]*\\).*/\\1/p')"
  directory=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)
elif [ -n "$initial" ]; then
  voters=$(printf '%s' "$initial" | sed 's/:[^:,]*\\(,\\|$\\)/\\1/g')
  directory=$(printf '%s\\n' "$initial" | tr , '\\n' | sed -n "s/^$node@.*:\\([^:]*\\)$/\\1/p")
else
  echo "controller.quorum.voters is not set: give --standalone or --initial-controllers" >&2
  exit 1
fi
for dir in $(setting 'log\\.dirs' | tr , ' '); do
  mkdir -p "$dir"
  printf 'version=1\\ncluster.id=%s\\nnode.id=%s\\n' "$id" "$node" > "$dir/meta.properties"
  [ -z "${directory:-}" ] || echo "directory.id=$directory" >> "$dir/meta.properties"
  [ -z "${voters:-}" ] || echo "$voters" > "$dir/bootstrap.voters"
done
echo "Formatting $dir"
"""

START = """#!/bin/sh
# kafka-server-start.sh server.properties
mkdir -p "${{LOG_DIR:-/tmp}}"
config=$1
if grep -q '^controller\\.quorum\\.bootstrap\\.servers=' "$config"; then
  dir=$(sed -n 's/^log\\.dirs=//p' "$config" | cut -d, -f1)
  config=$dir/static.properties
  grep -v '^controller\\.quorum\\.bootstrap\\.servers=' "$1" > "$config"
  echo "controller.quorum.voters=$(cat "$dir/bootstrap.voters")" >> "$config"
fi
exec {python} -m broker --config "$config"
"""


def make_kafka_home(root: Path, version: str = "3.7.0") -> Path:
    """A stand-in Kafka installation of ``version`` under ``root``; returns
    its directory."""
    home = root / f"kafka_2.13-{version}"
    (home / "bin").mkdir(parents=True)
    (home / "libs").mkdir()
    (home / "libs" / f"kafka_2.13-{version}.jar").touch()
    scripts = {
        "kafka-storage.sh": STORAGE,
        "kafka-server-start.sh": START.format(python=shlex.quote(sys.executable)),
    }
    for name, text in scripts.items():
        path = home / "bin" / name
        path.write_text(text)
        path.chmod(0o755)
    return home
