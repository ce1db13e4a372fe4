#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The "seen" scenario end to end: starts a redis-server with bloomgate.so on
# a free loopback port in a temporary directory (stopped on exit), loads the
# users into it, runs the four columns (in-process and Redis, each without
# and with filters) plus a fifth, in-process filters in front of the Redis
# SETs, and prints the table.
#
#   examples/seen/demo_seen.sh BUILD_DIR [bloomgate-seen options...]
#
# BUILD_DIR is a CMake build tree of this repository (bloomgate-seen in
# BUILD_DIR/examples/seen, bloomgate.so in BUILD_DIR/src/redis_module); the
# environment variables SEEN_EXE and BLOOMGATE_SO override those two paths,
# REDIS_SERVER the server binary (default redis-server). Options after
# BUILD_DIR go to bloomgate-seen, after the defaults (--mode all,hybrid
# --load), so they win: e.g. --seconds 5, --users 1000, --threads 2, or
# --mode all for exactly the four columns.
# Exit status: bloomgate-seen's (0 ok, 1 failure or mismatch, 2 usage).
set -euo pipefail

usage() { echo "usage: $0 BUILD_DIR [bloomgate-seen options...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
build=$1
shift

exe=${SEEN_EXE:-$build/examples/seen/bloomgate-seen}
so=${BLOOMGATE_SO:-$build/src/redis_module/bloomgate.so}
server=${REDIS_SERVER:-redis-server}
[ -x "$exe" ] || { echo "$0: no bloomgate-seen at $exe (build target bloomgate-seen)" >&2; exit 2; }
[ -f "$so" ] || { echo "$0: no bloomgate.so at $so (build target bloomgate_redis)" >&2; exit 2; }
command -v "$server" >/dev/null || { echo "$0: $server not found" >&2; exit 2; }
so=$(cd "$(dirname "$so")" && pwd)/$(basename "$so")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bloomgate-seen.XXXXXX")
pid=
run=
cleanup() {
    if [ -n "$run" ]; then
        kill "$run" 2>/dev/null || true
        wait "$run" 2>/dev/null || true
    fi
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A port in 22000-22999 nobody listens on (the remote tests use 21000-21999);
# if another process takes it before the server binds, try another.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
started=
for attempt in 1 2 3 4 5 6 7 8; do
    port=$((22000 + RANDOM % 1000))
    port_busy "$port" && continue
    "$server" --port "$port" --bind 127.0.0.1 --dir "$tmp" --save "" --appendonly no \
        --loadmodule "$so" --logfile "$tmp/redis.log" --daemonize no &
    pid=$!
    for _ in $(seq 100); do
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid" 2>/dev/null || true
            pid=
            break
        fi
        if redis-cli -p "$port" PING 2>/dev/null | grep -q PONG; then
            started=1
            break
        fi
        sleep 0.05
    done
    [ -n "$started" ] && break
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        pid=
    fi
done
if [ -z "$started" ]; then
    echo "$0: could not start $server with $so:" >&2
    tail -n 5 "$tmp/redis.log" >&2 2>/dev/null || true
    exit 1
fi

# In the background and waited for, so that a signal reaches the trap at
# once (bash runs traps only between foreground commands).
"$exe" --mode all,hybrid --load --redis "127.0.0.1:$port" "$@" &
run=$!
rc=0
wait "$run" || rc=$?
run=
exit "$rc"
