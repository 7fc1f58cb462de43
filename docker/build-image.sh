#!/usr/bin/env bash
# Builds the jepka node image (default tag jepka-node:latest).
#   docker/build-image.sh            offline: debootstrap base + local wheelhouse
#   docker/build-image.sh --online   FROM the official Python image
# The debootstrap base is cached as docker image jepka-base:bookworm, so only
# the first offline build pays its ~1 minute. The image is labelled with a
# hash of the sources it was built from and not rebuilt while they are
# unchanged (JEPKA_FORCE_BUILD=1 rebuilds anyway).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tag=${JEPKA_IMAGE:-jepka-node:latest}
base_tag=jepka-base:bookworm
mode=offline
[ "${1:-}" = "--online" ] && mode=online
python=${PYTHON:-$root/.venv/bin/python}
[ -x "$python" ] || python=python3

src_hash=$(cd "$root" && find broker harness nemesis docker pyproject.toml -type f \
        -not -path '*/wheelhouse/*' -not -path '*/__pycache__/*' -not -name '*.pyc' -print0 \
    | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
current=$(docker image inspect -f '{{index .Config.Labels "jepka.source"}}' "$tag" 2>/dev/null || true)
if [ -z "${JEPKA_FORCE_BUILD:-}" ] && [ "$current" = "$src_hash-$mode" ]; then
    echo "$tag"
    exit 0
fi

# The wheelhouse: jepka itself (without its analysis stack) and what a node runs.
wheels="$here/wheelhouse"
rm -rf "$wheels" && mkdir -p "$wheels"
"$python" -m pip wheel -q --no-deps -w "$wheels" "$root" 2>/dev/null
"$python" -m pip download -q --only-binary=:all: -d "$wheels" pip
"$python" -m pip wheel -q -w "$wheels" -r "$here/requirements-node.txt" --find-links "$wheels"
cp "$here/requirements-node.txt" "$wheels/"

args=()
if [ "$mode" = offline ]; then
    if ! docker image inspect "$base_tag" >/dev/null 2>&1; then
        command -v debootstrap >/dev/null || { echo "build-image: debootstrap is missing (scripts/setup-system.sh installs it)" >&2; exit 1; }
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        debootstrap --variant=minbase \
            --include=python3,iptables,iproute2,procps,libfaketime bookworm "$tmp/rootfs" >"$tmp/debootstrap.log" 2>&1 \
            || { tail -n 20 "$tmp/debootstrap.log" >&2; exit 1; }
        tar -C "$tmp/rootfs" -c . | docker import - "$base_tag" >/dev/null
    fi
    args+=(--build-arg "BASE=$base_tag")
fi
docker build --force-rm -q --label "jepka.source=$src_hash-$mode" -t "$tag" "${args[@]}" "$here" >/dev/null
echo "$tag"
