#!/usr/bin/env bash
# Installs the system packages jepka needs (Java 17 for Spark, and what later
# parts add below). Installs with apt when running as root; otherwise it says
# exactly what to install and fails.
set -euo pipefail

missing=()
need() { # need COMMAND DEBIAN-PACKAGE
    command -v "$1" >/dev/null 2>&1 || missing+=("$2")
}

java_ok() {
    command -v java >/dev/null 2>&1 || return 1
    local v
    v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)
    [ -n "$v" ] && [ "$v" -ge 17 ]
}

java_ok || missing+=("openjdk-17-jre-headless")
need ip iproute2
need iptables iptables
need chromium chromium # headless browser for the report tests
# Clusters and faults: namespaces, containers, SSH nodes, clocks, offline images.
need dockerd docker.io
need sshd openssh-server
need sudo sudo # the ssh backend's non-root path is tested with a sudo login
need ssh-keygen openssh-client
need faketime faketime
ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || missing+=("libfaketime")
need debootstrap debootstrap
need ps procps
compose_ok() { docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1; }
compose_ok || missing+=("COMPOSE")

# Starts the Docker engine when it is installed but not running (root only).
start_dockerd() {
    command -v dockerd >/dev/null 2>&1 || return 0
    docker info >/dev/null 2>&1 && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "the Docker engine is not running: start dockerd for the docker tests" >&2
        return 0
    fi
    setsid nohup dockerd >/var/log/jepka-dockerd.log 2>&1 </dev/null &
    for _ in $(seq 1 120); do
        docker info >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    echo "dockerd did not start; see /var/log/jepka-dockerd.log" >&2
    return 1
}

if [ ${#missing[@]} -eq 0 ]; then
    start_dockerd
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "jepka needs these Debian packages: ${missing[*]/COMPOSE/docker-compose}" >&2
    echo "install them with: sudo apt-get install -y ${missing[*]/COMPOSE/docker-compose}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Compose: the v2 plugin where Debian offers it, else its docker-compose package.
if apt-cache policy docker-compose-plugin 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    missing=("${missing[@]/COMPOSE/docker-compose-plugin}")
else
    missing=("${missing[@]/COMPOSE/docker-compose}")
fi
echo "installing: ${missing[*]}"
apt-get install -y -qq --no-install-recommends "${missing[@]}"
start_dockerd
