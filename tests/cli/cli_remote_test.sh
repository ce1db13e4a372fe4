#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Tests of the bloomgate command-line tool on remote filters (redis:// URLs,
# docs/CLI.md "Remote filters"), run as a real binary against real
# redis-server processes.
#
#   bash cli_remote_test.sh PATH/TO/bloomgate CASE
#
# Each CASE is one function (case_<name>) and one ctest test
# (cli.remote.<name>, tests/cli/CMakeLists.txt). This file holds the
# assertions and helpers; the cases are beside it, by concern:
# cli_remote_cases.sh (URLs, create, add, check, info, push, pull, sharded
# and module filters, failures) and cli_remote_rebuild_cases.sh (rebuild).
# Each case runs in its own mktemp -d and starts its own plain
# redis-server (no module: the bitmap backend needs none) on a free
# loopback port in 22000-22999, killed on exit.
# Exit status 77 means skipped (ctest SKIP_RETURN_CODE): the module case
# without BLOOMGATE_MODULE (the path of bloomgate.so).
#
# Environment: REDIS_SERVER (default: redis-server on PATH), BLOOMGATE_MODULE.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

BG=${1:?usage: cli_remote_test.sh BLOOMGATE CASE}
CASE=${2:?usage: cli_remote_test.sh BLOOMGATE CASE}
case $BG in /*) ;; *) BG=$PWD/$BG ;; esac
[ -x "$BG" ] || { echo "not executable: $BG" >&2; exit 1; }
REDIS_SERVER=${REDIS_SERVER:-redis-server}

T=$(mktemp -d "${TMPDIR:-/tmp}/bloomgate-cli-remote.XXXXXX")
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do
        kill -CONT "$p" 2>/dev/null || true
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$T"
}
trap cleanup EXIT
cd "$T"

# ---- assertions (as in cli_test.sh) ----------------------------------------

fail() {
    echo "FAIL [remote.$CASE]: $*" >&2
    if [ -f "$T/out" ]; then echo "--- stdout:" >&2; head -c 2000 "$T/out" >&2 || true; fi
    if [ -f "$T/err" ]; then echo "--- stderr:" >&2; head -c 2000 "$T/err" >&2 || true; fi
    exit 1
}

skip() {
    echo "skipped: cli.remote.$CASE: $*"
    exit 77
}

run() { # run WANT_RC CMD...: stdout in $T/out, stderr in $T/err
    local want=$1 rc=0
    shift
    "$@" >"$T/out" 2>"$T/err" || rc=$?
    [ "$rc" -eq "$want" ] || fail "exit status $rc, want $want: $*"
}

eq() { [ "$1" == "$2" ] || fail "$3: got '$1', want '$2'"; }
has() { grep -qF -- "$2" "$1" || fail "$1 does not contain '$2'"; }
hasnt() { if grep -qF -- "$2" "$1"; then fail "$1 contains '$2'"; fi; }
json_ok() { jq -e . "$1" >/dev/null || fail "$1 is not valid JSON"; }
jget() { jq -r ".$2" "$1"; }
keys() { seq -f "${3:-key}-%.0f" "$1" "$2"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# wait_until WHAT CMD...: until CMD succeeds, polled every 50 ms; fails,
# naming WHAT, after WAIT_S seconds. Every wait for an event (a server
# state, a key, a log line, a process) goes through it: the deadline is
# generous so that a loaded machine only makes a case slower, never fail.
WAIT_S=${WAIT_S:-60}
wait_until() {
    local what=$1 deadline=$((SECONDS + WAIT_S))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "waited $WAIT_S s for $what"
        sleep 0.05
    done
}

# ---- redis-server ------------------------------------------------------------

# start_redis [ARG...]: a redis-server on a free loopback port; sets PORT
# and RPID. A port somebody else holds makes the server exit: try another.
start_redis() {
    command -v "$REDIS_SERVER" >/dev/null || fail "redis-server not found ($REDIS_SERVER)"
    local try dir
    for try in 1 2 3 4 5 6 7 8 9 10; do
        PORT=$((22000 + RANDOM % 1000))
        dir="$T/redis-$PORT"
        mkdir -p "$dir"
        "$REDIS_SERVER" --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
            --dir "$dir" --logfile "$dir/log" --daemonize no "$@" &
        RPID=$!
        PIDS+=("$RPID")
        local deadline=$((SECONDS + WAIT_S))
        while [ "$SECONDS" -lt "$deadline" ]; do
            kill -0 "$RPID" 2>/dev/null || break
            if grep -q "Ready to accept connections" "$dir/log" 2>/dev/null; then return 0; fi
            sleep 0.05
        done
        kill -KILL "$RPID" 2>/dev/null || true
        wait "$RPID" 2>/dev/null || true
    done
    fail "could not start redis-server on a port in 22000-22999"
}

# ---- cases -------------------------------------------------------------------

for cases in "$HERE"/cli_remote_cases.sh "$HERE"/cli_remote_rebuild_cases.sh; do
    # shellcheck source=/dev/null
    source "$cases"
done

fn="case_$CASE"
declare -F "$fn" >/dev/null || { echo "no such case: $CASE" >&2; exit 1; }
"$fn"
echo "ok: cli.remote.$CASE"
