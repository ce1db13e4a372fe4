#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Tests of the products service (examples/products), run as the real binary
# and driven with curl.
#
#   bash products_test.sh PATH/TO/bloomgate-products CASE
#
# Each CASE is one function (case_<name>) and one ctest test
# (products.<name>, CMakeLists.txt here). This file holds the assertions
# and helpers; the cases are in products_cases_*.sh beside it, by concern:
# http.sh (options, startup, endpoints, malformed requests, connection
# limits), filter.sh (metrics, the filter's behaviours, the demo),
# lifecycle.sh (rebuilds, signals, draining), outages.sh (SQLite, Redis,
# PostgreSQL and MariaDB going away) and remote.sh (the filter in Redis and
# on a Redis Cluster). Each case runs in its own mktemp -d, removed on exit
# with every process it started, and fails (exit 1) at the first assertion
# that does not hold, printing what was expected, what came instead and
# the service's log.
#
# Environment (set by ctest): REDIS_SERVER (redis-server), DBCTL
# (bg-products-dbctl: PostgreSQL and MariaDB that can be stopped and
# started), SRC and BUILD (the source and build trees, for the demo case).
# Needs curl and jq.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SVC=${1:?usage: products_test.sh BLOOMGATE_PRODUCTS CASE}
CASE=${2:?usage: products_test.sh BLOOMGATE_PRODUCTS CASE}
case $SVC in /*) ;; *) SVC=$PWD/$SVC ;; esac
[ -x "$SVC" ] || { echo "not executable: $SVC" >&2; exit 1; }
for tool in curl jq; do
    command -v $tool >/dev/null || { echo "FAIL [$CASE]: $tool is missing (scripts/deps.sh installs it)" >&2; exit 1; }
done

T=$(mktemp -d "${TMPDIR:-/tmp}/bloomgate-products.XXXXXX")
PIDS=()
DB_PID=
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    if [ -n "$DB_PID" ]; then kill -TERM "$DB_PID" 2>/dev/null || true; wait "$DB_PID" 2>/dev/null || true; fi
    rm -rf "$T"
}
trap cleanup EXIT
trap "exit 1" INT TERM HUP
cd "$T"

# ---- assertions -----------------------------------------------------------

fail() {
    echo "FAIL [$CASE]: $*" >&2
    if [ -f "$T/body" ]; then echo "--- last body:" >&2; head -c 2000 "$T/body" >&2 || true; echo >&2; fi
    if [ -f "$T/svc.log" ]; then echo "--- service log:" >&2; tail -n 40 "$T/svc.log" >&2 || true; fi
    exit 1
}

eq() { [ "$1" == "$2" ] || fail "$3: got '$1', want '$2'"; }
ge() { [ "$1" -ge "$2" ] || fail "$3: got $1, want >= $2"; }
gt() { [ "$1" -gt "$2" ] || fail "$3: got $1, want > $2"; }
has() { grep -qF -- "$2" "$1" || fail "$1 does not contain '$2'"; }

# ---- the service ----------------------------------------------------------

SVC_PID=
PORT=
BASE=
# start ARGS...: the service on a free port with a 1000-product SQLite db
# (unless ARGS say otherwise); waits until it listens.
start() {
    : >"$T/svc.log"
    "$SVC" --port 0 --db-path "$T/products.db" --seed 1000 "$@" 2>"$T/svc.log" &
    start_wait "$!"
}
# start_raw ARGS...: no defaults added.
start_raw() {
    : >"$T/svc.log"
    "$SVC" --port 0 "$@" 2>"$T/svc.log" &
    start_wait "$!"
}
start_wait() {
    SVC_PID=$1
    PIDS+=("$SVC_PID")
    PORT=
    for _ in $(seq 1 600); do
        PORT=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9][0-9]*\) .*/\1/p' "$T/svc.log")
        [ -z "$PORT" ] || break
        kill -0 "$SVC_PID" 2>/dev/null || fail "the service exited at startup"
        sleep 0.1
    done
    [ -n "$PORT" ] || fail "the service did not listen within 60 s"
    BASE=http://127.0.0.1:$PORT
}
# start_ranged ARGS...: start ARGS on a free port of 47400-47499 (the
# cases that need a port known before it listens, or that run under a
# changed ulimit, use this range). SVC_ULIMIT_N, when set, is the
# open-file limit (soft and hard) the service runs under; SVC_ULIMIT_SN
# the soft one only.
start_ranged() {
    local p
    for _ in $(seq 1 20); do
        p=$((47400 + RANDOM % 100))
        if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then continue; fi
        : >"$T/svc.log"
        if [ -n "${SVC_ULIMIT_N:-}" ]; then
            bash -c 'ulimit -n "$1" && shift && exec "$@"' _ "$SVC_ULIMIT_N" \
                "$SVC" --port "$p" --db-path "$T/products.db" --seed 1000 "$@" 2>"$T/svc.log" &
        elif [ -n "${SVC_ULIMIT_SN:-}" ]; then
            bash -c 'ulimit -Sn "$1" && shift && exec "$@"' _ "$SVC_ULIMIT_SN" \
                "$SVC" --port "$p" --db-path "$T/products.db" --seed 1000 "$@" 2>"$T/svc.log" &
        else
            "$SVC" --port "$p" --db-path "$T/products.db" --seed 1000 "$@" 2>"$T/svc.log" &
        fi
        SVC_PID=$!
        PIDS+=("$SVC_PID")
        for _ in $(seq 1 600); do
            grep -q "listening on http://" "$T/svc.log" && break
            kill -0 "$SVC_PID" 2>/dev/null || break
            sleep 0.1
        done
        if grep -q "listening on http://" "$T/svc.log"; then
            PORT=$p
            BASE=http://127.0.0.1:$PORT
            return 0
        fi
        wait "$SVC_PID" 2>/dev/null || true
        grep -q "Address already in use" "$T/svc.log" || fail "the service did not start"
    done
    fail "no free port in 47400-47499"
}
stop() { stop_within 60; }

# stop_within SECONDS: stop, failing (not hanging) if the service takes
# longer than that to exit.
stop_within() {
    kill -TERM "$SVC_PID"
    local i
    for i in $(seq 1 $(($1 * 10))); do
        kill -0 "$SVC_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$SVC_PID" 2>/dev/null; then
        kill -KILL "$SVC_PID"
        fail "the service did not stop within $1 s of SIGTERM"
    fi
    local rc=0
    wait "$SVC_PID" || rc=$?
    eq "$rc" 0 "exit status after SIGTERM"
    SVC_PID=
}

# req METHOD PATH [curl args...]: the status code; body in $T/body,
# headers in $T/headers.
req() {
    local m=$1 p=$2
    shift 2
    curl -sS -o "$T/body" -D "$T/headers" -w '%{http_code}' --max-time 30 -X "$m" "$@" "$BASE$p" ||
        fail "curl $m $p failed"
}
expect() { # expect CODE METHOD PATH [curl args...]
    local want=$1 got
    shift
    got=$(req "$@")
    eq "$got" "$want" "status of $*"
}
json_error() { # the body is {"error": ...}
    jq -e '.error | type == "string"' "$T/body" >/dev/null || fail "body is not a JSON error"
}
ctype() { # ctype TEXT: the Content-Type header starts with TEXT
    grep -qi "^content-type: $1" "$T/headers" || fail "Content-Type is not $1: $(cat "$T/headers")"
}

metrics() { curl -sS --max-time 10 "$BASE/metrics" >"$T/metrics" || fail "GET /metrics failed"; }
# m NAME[{labels}]: one series' value from the last metrics() (0 if absent).
m() { awk -v n="$1" '$1 == n { v = $2 } END { print (v == "" ? 0 : v) }' "$T/metrics"; }

# raw METHOD TARGET: sends exactly this request line (no client rewriting
# of the target) and prints the status code; the body lands in $T/body.
raw() {
    local line
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || fail "cannot connect for $1 $2"
    printf '%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' "$1" "$2" >&3
    timeout 10 cat <&3 >"$T/raw" || true
    exec 3<&-
    line=$(head -n 1 "$T/raw")
    sed '1,/^\r\{0,1\}$/d' "$T/raw" >"$T/body"
    [[ $line =~ ^HTTP/1\.1\ ([0-9]{3}) ]] || fail "no status line for $1 $2: '$line'"
    echo "${BASH_REMATCH[1]}"
}
expect_raw() { # expect_raw CODE METHOD TARGET
    eq "$(raw "$2" "$3")" "$1" "status of raw $2 $3"
}

post() { # post JSON: POST /products, status code
    req POST /products -H 'Content-Type: application/json' --data-binary "$1"
}

# ---- waiting for events -----------------------------------------------------
# A case waits for what it needs (a metric, a log line), never for a fixed
# time: a loaded machine may take seconds for what an idle one does in
# milliseconds. Each wait fails after 60 s.

# wait_metric NAME MIN: until NAME (as m reads it) is at least MIN.
wait_metric() {
    local end=$((SECONDS + 60))
    while :; do
        metrics
        [ "$(m "$1")" -lt "$2" ] || return 0
        [ "$SECONDS" -lt "$end" ] || fail "$1 did not reach $2 within 60 s (it is $(m "$1"))"
        sleep 0.1
    done
}
# wait_rebuilds N: until N more rebuilds than now have completed. After a
# change, N = 2 means a whole rebuild that began after it (the one running
# meanwhile, if any, may have read the source before it).
wait_rebuilds() {
    metrics
    wait_metric bloomgate_guard_rebuilds_total $(($(m bloomgate_guard_rebuilds_total) + $1))
}
# wait_log TEXT: until the service's log holds TEXT.
wait_log() {
    local end=$((SECONDS + 60))
    until grep -qF -- "$1" "$T/svc.log"; do
        [ "$SECONDS" -lt "$end" ] || fail "the service's log did not say '$1' within 60 s"
        sleep 0.1
    done
}

# ---- the filter after a rebuild -------------------------------------------

# deleted_filtered_then_posts ID [FIRST]: the deleted ID is filtered by the
# rebuilt filter (metrics() taken after a rebuild), then 40 POSTs of new ids
# FIRST.. (default 3001) while rebuilds run every second are each found
# afterwards.
deleted_filtered_then_posts() {
    local f0 i
    f0=$(m bloomgate_guard_filtered_total)
    expect 404 GET "/products/$1"
    metrics
    eq "$(m bloomgate_guard_filtered_total)" $((f0 + 1)) "the deleted id is filtered after a rebuild"
    local first=${2:-3001}
    for i in $(seq "$first" $((first + 39))); do
        eq "$(post "{\"id\":$i,\"name\":\"n$i\",\"price_cents\":1}")" 201 "POST $i"
        sleep 0.05 # spread over the rebuilds
    done
    wait_rebuilds 2
    for i in $(seq "$first" $((first + 39))); do expect 200 GET "/products/$i"; done
}

# ---- Redis -----------------------------------------------------------------

REDIS_PID=
REDIS_PORT=
free_port() { # a free port in 25000-25999
    local p
    for _ in $(seq 1 200); do
        p=$((25000 + RANDOM % 1000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
    done
    fail "no free port in 25000-25999"
}
redis_start() { # on REDIS_PORT, with the options in REDIS_ARGS
    local try
    for try in $(seq 1 20); do
        "${REDIS_SERVER:-redis-server}" --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
            --dir "$T" ${REDIS_ARGS[@]+"${REDIS_ARGS[@]}"} >"$T/redis.log" 2>&1 &
        REDIS_PID=$!
        PIDS+=("$REDIS_PID")
        for _ in $(seq 1 100); do
            (exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT") 2>/dev/null && return 0
            kill -0 "$REDIS_PID" 2>/dev/null || break
            sleep 0.1
        done
        # A restart on the same port can find it briefly taken (another
        # test's client or server got it meanwhile): try again.
        kill -0 "$REDIS_PID" 2>/dev/null && fail "redis-server does not listen"
        grep -q "Address already in use" "$T/redis.log" ||
            { cat "$T/redis.log" >&2; fail "redis-server did not start"; }
        sleep 0.25
    done
    cat "$T/redis.log" >&2
    fail "redis-server: port $REDIS_PORT stayed taken"
}
redis_stop() {
    kill -TERM "$REDIS_PID"
    wait "$REDIS_PID" 2>/dev/null || true
}

# ---- cases ----------------------------------------------------------------

for cases in "$HERE"/products_cases_*.sh; do
    # shellcheck source=/dev/null
    source "$cases"
done

declare -F "case_$CASE" >/dev/null || { echo "unknown case: $CASE" >&2; exit 2; }
"case_$CASE"
echo "ok [$CASE]"
