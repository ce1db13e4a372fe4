#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The cache-penetration demo (`make demo`): the products service under load,
# first without a Bloom filter, then with one, side by side.
#
#   examples/products/demo.sh BUILD_DIR [options]
#
# BUILD_DIR is a built tree (make demo builds it first): it needs
# BUILD_DIR/examples/products/bloomgate-products, and for --db postgres or
# mariadb BUILD_DIR/tests/integration/store/bg-dbserver, and for
# --filter-remote module BUILD_DIR/src/redis_module/bloomgate.so.
#
# Options (each also an environment variable; the option wins):
#   --db sqlite|postgres|mariadb   DEMO_DB (sqlite). postgres and mariadb are
#                                  started on loopback in a temporary
#                                  directory as an unprivileged user
#   --cache none|redis             DEMO_CACHE (none). redis: a redis-server
#                                  on loopback is the service's cache
#   --filter-remote bitmap|module  DEMO_FILTER_REMOTE (off): the filter run
#                                  keeps its filter in a redis-server
#   --products N                   DEMO_PRODUCTS (1000000): ids 1..N exist
#   --seconds S                    DEMO_SECONDS (10) per measured run
#   --warmup S                     DEMO_WARMUP (2) before each run
#   --connections C                DEMO_CONNECTIONS (32), wrk's connections
#   --wrk-threads T                DEMO_WRK_THREADS (2)
#   --threads T                    DEMO_THREADS (the service's default)
#   --existing-pct P               DEMO_EXISTING_PCT (3): share of ids that exist
#   --error-rate P                 DEMO_ERROR_RATE (0.01): the filter's rate
#                                  at its capacity
#   --headroom X                   DEMO_HEADROOM (2): the filter's capacity is
#                                  X times the products (room for growth
#                                  between rebuilds, so at N keys its rate is
#                                  below P); 1 fills it to capacity, rate P
#   --scenario products|seen       DEMO_SCENARIO (products). seen: the
#                                  recommender case instead
#                                  (examples/seen/demo_seen.sh; the options
#                                  after it are bloomgate-seen's)
#
# What it does: seeds the database once (SQLite: cached as
# BUILD_DIR/demo-data/products-N.db, so reruns start at once), starts the
# service on a free loopback port with --filter none, warms up, reads
# /metrics, drives it with wrk and examples/products/load.lua (EXISTING_PCT
# of ids in 1..N, the rest outside it), reads /metrics again; then the same
# with the filter. Everything it starts is stopped on exit, Ctrl-C included.
#
# HOW THE TABLE IS MEASURED
# Latencies and requests/s are wrk's (client side). Everything else is the
# difference of the service's counters (/metrics) across the run:
#   absent-id requests   = guard requests - found (database or cache) - errors
#   absent-id db queries = database lookups that found nothing
#                          (source_queries - source_found - source_errors)
#   share reaching db    = database lookups / guard requests
#   false-positive rate  = false positives / absent-id requests
#   filter check         = the mean of bloomgate_guard_filter_check_seconds
#                          (the guard's own cost), against wrk's p50
# The last line compares absent-id db queries per absent-id request in the
# two runs (the runs serve different numbers of requests):
#   cut = 1 - (db_f / absent_f) / (db_n / absent_n), rounded down.
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

die() {
    echo "demo: $*" >&2
    exit 1
}

[ $# -ge 1 ] || { usage >&2; exit 2; }
case $1 in -h|--help) usage; exit 0 ;; esac
BUILD=$1
shift
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)

# The second case from the field has its own driver.
SCENARIO=${DEMO_SCENARIO:-products}
if [ "${1:-}" = --scenario ]; then
    [ $# -ge 2 ] || { echo "demo: --scenario needs a value" >&2; exit 2; }
    SCENARIO=$2
    shift 2
fi
case $SCENARIO in
    products) ;;
    seen) exec "$HERE/../seen/demo_seen.sh" "$BUILD" "$@" ;;
    *) echo "demo: --scenario: products or seen, not '$SCENARIO'" >&2; exit 2 ;;
esac

DB=${DEMO_DB:-sqlite}
CACHE=${DEMO_CACHE:-none}
FILTER_REMOTE=${DEMO_FILTER_REMOTE:-}
PRODUCTS=${DEMO_PRODUCTS:-1000000}
SECONDS_RUN=${DEMO_SECONDS:-10}
WARMUP=${DEMO_WARMUP:-2}
CONNECTIONS=${DEMO_CONNECTIONS:-32}
WRK_THREADS=${DEMO_WRK_THREADS:-2}
THREADS=${DEMO_THREADS:-}
EXISTING_PCT=${DEMO_EXISTING_PCT:-3}
ERROR_RATE=${DEMO_ERROR_RATE:-0.01}
HEADROOM=${DEMO_HEADROOM:-2}

while [ $# -gt 0 ]; do
    opt=$1
    case $opt in -h|--help) usage; exit 0 ;; esac
    [ $# -ge 2 ] || die "$opt needs a value (see --help)"
    case $opt in
    --db) DB=$2 ;;
    --cache) CACHE=$2 ;;
    --filter-remote) FILTER_REMOTE=$2 ;;
    --products) PRODUCTS=$2 ;;
    --seconds) SECONDS_RUN=$2 ;;
    --warmup) WARMUP=$2 ;;
    --connections) CONNECTIONS=$2 ;;
    --wrk-threads) WRK_THREADS=$2 ;;
    --threads) THREADS=$2 ;;
    --existing-pct) EXISTING_PCT=$2 ;;
    --error-rate) ERROR_RATE=$2 ;;
    --headroom) HEADROOM=$2 ;;
    *) die "unknown option '$opt' (see --help)" ;;
    esac
    shift 2
done

isnum() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
case $DB in sqlite|postgres|mariadb) ;; *) die "--db '$DB': want sqlite, postgres or mariadb" ;; esac
case $CACHE in none|redis) ;; *) die "--cache '$CACHE': want none or redis" ;; esac
case $FILTER_REMOTE in ''|bitmap|module) ;; *) die "--filter-remote '$FILTER_REMOTE': want bitmap or module" ;; esac
isnum "$PRODUCTS" || die "--products '$PRODUCTS': want a positive integer"
isnum "$SECONDS_RUN" || die "--seconds '$SECONDS_RUN': want a positive integer"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "--warmup '$WARMUP': want an integer >= 0"
isnum "$CONNECTIONS" || die "--connections '$CONNECTIONS': want a positive integer"
isnum "$WRK_THREADS" || die "--wrk-threads '$WRK_THREADS': want a positive integer"
[ -z "$THREADS" ] || isnum "$THREADS" || die "--threads '$THREADS': want a positive integer"
[[ $EXISTING_PCT =~ ^[0-9]+$ ]] && [ "$EXISTING_PCT" -le 100 ] ||
    die "--existing-pct '$EXISTING_PCT': want 0..100"

# ---- tools ----------------------------------------------------------------

SVC=$BUILD/examples/products/bloomgate-products
[ -x "$SVC" ] || die "$SVC not found: build first (make demo does)"
need() {
    command -v "$1" >/dev/null 2>&1 ||
        die "'$1' is missing: $2 (scripts/deps.sh installs it)"
}
need wrk "the load generator (Debian package wrk)"
need curl "reads the service's /metrics (Debian package curl)"
need awk "computes the table"
USE_REDIS=0
if [ "$CACHE" = redis ] || [ -n "$FILTER_REMOTE" ]; then
    USE_REDIS=1
    need redis-server "--cache redis and --filter-remote need it (Debian package redis-server)"
    need redis-cli "talks to it (Debian package redis-tools)"
fi
DBSERVER=$BUILD/tests/integration/store/bg-dbserver
if [ "$DB" != sqlite ]; then
    [ -x "$DBSERVER" ] || die "$DBSERVER not found: it starts $DB (built with the tests, BG_BUILD_TESTS=ON)"
fi
MODULE=$BUILD/src/redis_module/bloomgate.so
if [ "$FILTER_REMOTE" = module ]; then
    [ -f "$MODULE" ] || die "$MODULE not found: --filter-remote module needs the Redis module (BG_BUILD_REDIS=ON)"
fi

# ---- cleanup --------------------------------------------------------------

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bloomgate-demo.XXXXXX")
SVC_PID=
REDIS_PID=
DB_PID=
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [ -z "$SVC_PID" ] || { kill -TERM "$SVC_PID" 2>/dev/null; wait "$SVC_PID" 2>/dev/null; } || true
    [ -z "$REDIS_PID" ] || { kill -TERM "$REDIS_PID" 2>/dev/null; wait "$REDIS_PID" 2>/dev/null; } || true
    [ -z "$DB_PID" ] || { kill -TERM "$DB_PID" 2>/dev/null; wait "$DB_PID" 2>/dev/null; } || true
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'echo "demo: interrupted" >&2; exit 130' INT TERM

say() { echo "demo: $*" >&2; }

# ---- servers --------------------------------------------------------------

DB_ARGS=()
case $DB in
sqlite)
    CACHE_DIR=$BUILD/demo-data
    mkdir -p "$CACHE_DIR"
    DB_FILE=$CACHE_DIR/products-$PRODUCTS.db
    DB_ARGS=(--db sqlite --db-path "$DB_FILE")
    ;;
postgres|mariadb)
    say "starting $DB on loopback ($DBSERVER)"
    coproc DBSRV { exec "$DBSERVER" "$DB" 2>"$WORK/dbserver.log"; }
    DB_PID=$DBSRV_PID
    CONNINFO=
    read -r -t 180 CONNINFO <&"${DBSRV[0]}" || true
    [ -n "$CONNINFO" ] || { cat "$WORK/dbserver.log" >&2; die "$DB did not start"; }
    say "$DB: $CONNINFO"
    DB_ARGS=(--db "$DB" --db-url "$CONNINFO")
    ;;
esac

free_port() { # a loopback port nobody listens on
    local p
    for _ in $(seq 1 200); do
        p=$((20000 + RANDOM % 10000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
    done
    die "no free port"
}

REDIS_PORT=
if [ "$USE_REDIS" = 1 ]; then
    REDIS_PORT=$(free_port)
    rargs=(--port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK"
        --maxmemory 512mb --maxmemory-policy allkeys-lru)
    [ "$FILTER_REMOTE" != module ] || rargs+=(--loadmodule "$MODULE")
    redis-server "${rargs[@]}" >"$WORK/redis.log" 2>&1 &
    REDIS_PID=$!
    for _ in $(seq 1 100); do
        redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
        kill -0 "$REDIS_PID" 2>/dev/null || { cat "$WORK/redis.log" >&2; die "redis-server did not start"; }
        sleep 0.1
    done
    redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 || die "redis-server does not answer"
    say "redis-server on 127.0.0.1:$REDIS_PORT${FILTER_REMOTE:+ (filter: $FILTER_REMOTE)}"
fi
CACHE_ARGS=()
[ "$CACHE" = none ] || CACHE_ARGS=(--cache redis --redis-url "redis://127.0.0.1:$REDIS_PORT")

# ---- the service -----------------------------------------------------------

PORT=
# start_service LOG ARGS...: starts the service on a free port, waits until it
# listens (seeding and the filter build can take a while).
start_service() {
    local log=$1
    shift
    local extra=()
    [ -z "$THREADS" ] || extra=(--threads "$THREADS")
    "$SVC" --port 0 --seed "$PRODUCTS" "${DB_ARGS[@]}" "${CACHE_ARGS[@]}" "${extra[@]}" "$@" \
        2>"$log" &
    SVC_PID=$!
    PORT=
    local i
    for i in $(seq 1 18000); do
        PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
        [ -z "$PORT" ] || break
        if ! kill -0 "$SVC_PID" 2>/dev/null; then
            cat "$log" >&2
            SVC_PID=
            die "the service exited"
        fi
        [ "$i" -ne 30 ] || say "waiting for the service (seeding, building the filter)..."
        sleep 0.1
    done
    [ -n "$PORT" ] || die "the service did not start listening (log: $log)"
    sed 's/^/  | /' "$log" >&2
}

stop_service() {
    kill -TERM "$SVC_PID"
    wait "$SVC_PID" || die "the service exited with status $? (log above)"
    SVC_PID=
}

# SQLite: seed once into a file of its own, keep it for the next runs.
if [ "$DB" = sqlite ] && [ ! -f "$DB_FILE" ]; then
    say "creating $DB_FILE with $PRODUCTS products (once; reruns reuse it)"
    rm -f "$DB_FILE.partial" "$DB_FILE.partial-wal" "$DB_FILE.partial-shm" "$DB_FILE.partial-journal"
    DB_ARGS=(--db sqlite --db-path "$DB_FILE.partial")
    start_service "$WORK/seed.log" --filter none
    grep -q "sqlite .*, $PRODUCTS products" "$WORK/seed.log" || die "seeding went wrong (log above)"
    stop_service
    mv "$DB_FILE.partial" "$DB_FILE"
    DB_ARGS=(--db sqlite --db-path "$DB_FILE")
fi

metric() { # metric FILE NAME: the value of an unlabelled series (0 if absent)
    awk -v n="$2" '$1 == n { v = $2 } END { print (v == "" ? 0 : v) }' "$1"
}

scrape() {
    curl -sS --max-time 10 "http://127.0.0.1:$PORT/metrics" >"$1" || die "cannot read /metrics"
}

LOAD=$HERE/load.lua
[ -f "$LOAD" ] || die "$LOAD not found"

# run NAME ARGS...: one measured run; leaves NAME.before/.after/.wrk in WORK.
run() {
    local name=$1
    shift
    # A cold cache for each run, emptied before the service starts: a remote
    # filter lives in the same Redis, and the service creates it at start.
    [ "$CACHE" = none ] || redis-cli -p "$REDIS_PORT" flushall >/dev/null
    start_service "$WORK/$name.log" "$@"
    local url=http://127.0.0.1:$PORT
    export LOAD_PRODUCTS=$PRODUCTS LOAD_EXISTING_PCT=$EXISTING_PCT
    if [ "$WARMUP" -gt 0 ]; then
        say "$name: warming up for ${WARMUP}s"
        LOAD_SEED=7 wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${WARMUP}s" -s "$LOAD" "$url" >/dev/null
    fi
    scrape "$WORK/$name.before"
    say "$name: wrk -t$WRK_THREADS -c$CONNECTIONS -d${SECONDS_RUN}s -s load.lua ($EXISTING_PCT% existing ids)"
    LOAD_SEED=1 wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${SECONDS_RUN}s" --latency -s "$LOAD" "$url" \
        >"$WORK/$name.wrk" || die "wrk failed: $(cat "$WORK/$name.wrk")"
    scrape "$WORK/$name.after"
    grep -q '^LOAD ' "$WORK/$name.wrk" || die "wrk printed no LOAD line: $(cat "$WORK/$name.wrk")"
    stop_service
}

run nofilter --filter none
if [ -n "$FILTER_REMOTE" ]; then
    FILTER_DESC="remote $FILTER_REMOTE, p=$ERROR_RATE at ${HEADROOM}xN"
    run filter --filter remote --filter-backend "$FILTER_REMOTE" \
        --filter-url "redis://127.0.0.1:$REDIS_PORT" --filter-name products-demo \
        --error-rate "$ERROR_RATE" --headroom "$HEADROOM"
else
    FILTER_DESC="local blocked, p=$ERROR_RATE at ${HEADROOM}xN"
    run filter --filter local --error-rate "$ERROR_RATE" --headroom "$HEADROOM"
fi

# ---- the table ------------------------------------------------------------

# stats NAME: one line of name=value pairs for awk.
stats() {
    local n=$1 b=$WORK/$1.before a=$WORK/$1.after k
    local out
    out=$(sed -n 's/^LOAD //p' "$WORK/$n.wrk")
    for k in bloomgate_guard_requests_total bloomgate_guard_source_queries_total \
        bloomgate_guard_source_found_total bloomgate_guard_source_errors_total \
        bloomgate_guard_cache_hits_total bloomgate_guard_false_positives_total \
        bloomgate_guard_negative_hits_total bloomgate_guard_filtered_total \
        bloomgate_db_queries_total bloomgate_guard_filter_check_seconds_sum \
        bloomgate_guard_filter_check_seconds_count; do
        out+=" ${k#bloomgate_}=$(awk -v x="$(metric "$a" "$k")" -v y="$(metric "$b" "$k")" \
            'BEGIN { printf "%.9f", x - y }')"
    done
    echo "$out"
}

DESC="$DB, $PRODUCTS products, cache $CACHE, $((100 - EXISTING_PCT))% absent ids, wrk $WRK_THREADS threads $CONNECTIONS connections ${SECONDS_RUN}s per run"
awk -v nf="$(stats nofilter)" -v wf="$(stats filter)" -v desc="$DESC" -v fdesc="$FILTER_DESC" '
function load(line, arr,   n, i, kv, parts) {
    n = split(line, parts, " ")
    for (i = 1; i <= n; i++) {
        split(parts[i], kv, "=")
        arr[kv[1]] = kv[2] + 0
    }
}
function derive(s) {
    s["secs"] = s["duration_us"] / 1e6
    s["found"] = s["guard_source_found_total"] + s["guard_cache_hits_total"]
    s["absent"] = s["guard_requests_total"] - s["found"] - s["guard_source_errors_total"]
    s["absent_db"] = s["guard_source_queries_total"] - s["guard_source_found_total"] - s["guard_source_errors_total"]
    s["dbqps"] = s["db_queries_total"] / s["secs"]
    s["reach"] = s["guard_requests_total"] > 0 ? s["guard_source_queries_total"] / s["guard_requests_total"] : 0
    s["absent_reach"] = s["absent"] > 0 ? s["absent_db"] / s["absent"] : 0
    s["fp"] = s["absent"] > 0 ? s["guard_false_positives_total"] / s["absent"] : 0
    s["check_ns"] = s["guard_filter_check_seconds_count"] > 0 ? 1e9 * s["guard_filter_check_seconds_sum"] / s["guard_filter_check_seconds_count"] : -1
}
function us(v) { return v >= 1000 ? sprintf("%.2f ms", v / 1000) : sprintf("%d us", v) }
function pct(v) { return sprintf("%.3f%%", 100 * v) }
function row(label, a, b) { printf "%-34s %18s   %18s\n", label, a, b }
BEGIN {
    load(nf, n); load(wf, f); derive(n); derive(f)
    print ""
    print "bloomgate products demo: " desc
    print ""
    row("", "no filter", "filter")
    row("", "", "(" fdesc ")")
    row("requests/s", sprintf("%.0f", n["rps"]), sprintf("%.0f", f["rps"]))
    row("latency p50", us(n["p50_us"]), us(f["p50_us"]))
    row("latency p95", us(n["p95_us"]), us(f["p95_us"]))
    row("latency p99", us(n["p99_us"]), us(f["p99_us"]))
    row("database queries/s", sprintf("%.0f", n["dbqps"]), sprintf("%.0f", f["dbqps"]))
    row("requests reaching the database", pct(n["reach"]), pct(f["reach"]))
    row("absent-id requests", sprintf("%d", n["absent"]), sprintf("%d", f["absent"]))
    row("absent-id database queries", sprintf("%d", n["absent_db"]), sprintf("%d", f["absent_db"]))
    row("  per absent-id request", pct(n["absent_reach"]), pct(f["absent_reach"]))
    row("observed false-positive rate", "-", pct(f["fp"]))
    if (f["check_ns"] >= 0) {
        row("filter check (guard cost, mean)", "-", sprintf("%.0f ns", f["check_ns"]))
        row("  share of p50 latency", "-", sprintf("%.4f%%", 100 * f["check_ns"] / (f["p50_us"] * 1000)))
    }
    bad = n["status_other"] + f["status_other"] + n["errors"] + f["errors"]
    if (bad > 0)
        printf "warning: %d responses other than 200/404 or socket errors during the runs\n", bad
    if (bad > 0.01 * (n["guard_requests_total"] + f["guard_requests_total"])) {
        print "demo: over 1% of the responses were errors (see the service logs): the figures would not compare answers" > "/dev/stderr"
        exit 1
    }
    if (n["absent"] <= 0 || f["absent"] <= 0 || n["absent_reach"] <= 0) {
        print "demo: no absent-id requests reached the database without the filter: nothing to compare" > "/dev/stderr"
        exit 1
    }
    cut = 100 * (1 - f["absent_reach"] / n["absent_reach"])
    if (cut < 0) cut = 0
    cut = int(cut * 10) / 10   # rounded down: never claims more than measured
    print ""
    printf "absent-id database queries cut by %.1f%%\n", cut
}'
