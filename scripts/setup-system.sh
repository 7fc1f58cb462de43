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

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "jepka needs these Debian packages: ${missing[*]}" >&2
    echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
