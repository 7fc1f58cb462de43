#!/bin/sh
# Turns every KAFKA_* variable but the JVM's into a line of server.properties
# (KAFKA_FOO_BAR is foo.bar, `__` is `_`, `___` is `-`), as apache/kafka's
# image does, then runs the broker in the foreground with that file.
#   run --print   prints the file instead
set -eu
props=/opt/kafka/config/server.properties
jvm='^KAFKA_(VERSION|HEAP_OPTS|LOG4J_OPTS|OPTS|JMX_OPTS|JVM_PERFORMANCE_OPTS|GC_LOG_OPTS|LOG4J_ROOT_LOGLEVEL|LOG4J_LOGGERS|TOOLS_LOG4J_LOGLEVEL)='

render() {
    env | grep '^KAFKA_' | grep -Ev "$jvm" | sort | while IFS='=' read -r name value; do
        key=$(printf '%s' "${name#KAFKA_}" \
            | sed -e 's/___/-/g' -e 's/__/@/g' -e 's/_/./g' -e 's/@/_/g' \
            | tr '[:upper:]' '[:lower:]')
        printf '%s=%s\n' "$key" "$value"
    done
}

if [ "${1:-}" = --print ]; then
    render
    exit 0
fi
if [ -n "${KAFKA_PROCESS_ROLES:-}" ] && [ -z "${CLUSTER_ID:-}" ]; then
    echo "CLUSTER_ID environment variable not set" >&2
    exit 1
fi
render > "$props"
exec python3 -m broker --config "$props"
