#!/usr/bin/env bash
# Tests of the products service (examples/products), run as the real binary
# and driven with curl.
#
#   bash products_test.sh PATH/TO/bloomgate-products CASE
#
# Each CASE is one function below (case_<name>) and one ctest test
# (products.<name>, CMakeLists.txt here). Each runs in its own mktemp -d,
# removed on exit with every process it started, and fails (exit 1) at the
# first assertion that does not hold, printing what was expected, what came
# instead and the service's log.
#
# Environment (set by ctest): REDIS_SERVER (redis-server), DBCTL
# (bg-products-dbctl: PostgreSQL and MariaDB that can be stopped and
# started), SRC and BUILD (the source and build trees, for the demo case).
# Needs curl and jq.
set -euo pipefail

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

# ---- cases ----------------------------------------------------------------

case_help() {
    "$SVC" --help >"$T/out" 2>&1 || fail "--help exit status"
    local f
    for f in --port --bind --threads --max-connections --timeout --shutdown-timeout --db --db-path \
        --db-url --seed \
        --cache --redis-url --cache-ttl-ms --cache-timeout-ms --negative-ttl-ms --filter --variant --error-rate \
        --capacity --headroom --filter-backend --filter-url --filter-name --filter-shards \
        --rebuild-interval --check-sample --help --version; do
        grep -q -- "^  $f " "$T/out" || fail "--help does not list $f"
    done
    has "$T/out" "default 8080"
    has "$T/out" "redis+cluster://"
    "$SVC" --version >"$T/out" || fail "--version exit status"
    grep -q '^bloomgate-products [0-9]' "$T/out" || fail "--version output"
    # bad flags: exit 2 and a message naming the flag, nothing started
    local args
    while IFS='|' read -r args want; do
        local rc=0
        # shellcheck disable=SC2086
        "$SVC" $args >"$T/out" 2>"$T/err" || rc=$?
        eq "$rc" 2 "exit status of '$args'"
        has "$T/err" "$want"
        if grep -q "s3cret" "$T/err"; then fail "'$args': the message shows the password"; fi
    done <<'EOF'
--port 70000|--port '70000'
--port -1|--port '-1'
--port|--port needs a value
--threads 0|--threads '0'
--shutdown-timeout 3601|--shutdown-timeout '3601'
--shutdown-timeout 1s|--shutdown-timeout '1s'
--db oracle|--db 'oracle'
--db postgres|--db postgres needs --db-url
--db sqlite --db-url x|--db-url is for
--seed 1e6|--seed '1e6'
--cache memcached|--cache 'memcached'
--redis-url redis://h:1|--redis-url needs --cache redis
--cache redis --redis-url http://x|--redis-url
--cache redis --redis-url redis://h:0|port must be
--cache redis --redis-url redis://h:6379/0|database numbers are not supported
--cache redis --redis-url redis://h/0|database numbers are not supported
--filter bloom|--filter 'bloom'
--variant scalable|--variant 'scalable'
--error-rate 0|--error-rate '0'
--error-rate 1|--error-rate '1'
--error-rate abc|--error-rate 'abc'
--capacity -5|--capacity '-5'
--headroom 0.5|--headroom '0.5'
--filter-backend bitmap|are for --filter remote
--filter remote --filter-backend x|--filter-backend 'x'
--filter remote --filter-name a{b}|--filter-name
--cache redis --redis-url redis://h:1,h:2|--redis-url 'redis://h:1,h:2': several hosts (separated by ',') are for redis+cluster://
--cache redis --redis-url redis+cluster://h:1,,h:2|--redis-url 'redis+cluster://h:1,,h:2': an empty host:port
--cache redis --redis-url redis+cluster://h:1,|an empty host:port
--cache redis --redis-url redis+cluster://,h:1|an empty host:port
--cache redis --redis-url redis+cluster://h:1,h:0|seed node 'h:0': port must be 1..65535
--cache redis --redis-url redis+cluster://h:1,h:65536|seed node 'h:65536': port must be 1..65535
--cache redis --redis-url redis+cluster://h:0,h:1|--redis-url 'redis+cluster://h:0,h:1': port must be 1..65535
--cache redis --redis-url redis+cluster://h:1,h:|seed node 'h:': bad port
--cache redis --redis-url redis+cluster://h:1,[::1:7000|seed node '[::1:7000': unterminated [IPv6 address]
--cache redis --redis-url redis+cluster://[::1|unterminated [IPv6 address]
--cache redis --redis-url redis+cluster://h:1,[::1]7000|junk after ]
--cache redis --redis-url redis+cluster://h:1,h:2/0|seed node 'h:2/0': paths and database numbers are not supported
--cache redis --redis-url redis+cluster://|--redis-url 'redis+cluster://': bad host
--cache redis --redis-url redis+cluster:///tmp/redis.sock|--redis-url
--cache redis --redis-url redis://u:s3cret@h:0|--redis-url 'redis://***@h:0': port must be
--cache redis --redis-url redis://h%x:1|--redis-url 'redis://h%x:1': bad host: a character
--cache redis --redis-url redis+cluster://h:1,[[::1]:2|seed node '[[::1]:2': bad IPv6 address
--filter remote --filter-url redis+cluster://[fe80::g]:2|bad IPv6 address
--filter remote --filter-url redis+cluster://:s3cret@h:1,,h:2|--filter-url 'redis+cluster://***@h:1,,h:2': an empty
--cache redis --redis-url http://s3cret@h|--redis-url 'http://***@h': want redis://
--filter remote --filter-url redis://h:1,h:2|--filter-url 'redis://h:1,h:2': several hosts
--filter remote --filter-url redis+cluster://h:1,,h:2|--filter-url 'redis+cluster://h:1,,h:2': an empty host:port
--filter remote --filter-url redis+cluster://h:1,h:x|--filter-url 'redis+cluster://h:1,h:x': seed node 'h:x': port must be
--filter remote --filter-url redis+cluster://h:1,[::1|--filter-url 'redis+cluster://h:1,[::1': seed node '[::1': unterminated [
--filter-shards 3|--filter-shards is for --filter remote
--filter none --filter-shards 1|--filter-shards is for --filter remote
--filter remote --filter-backend module --filter-shards 2|--filter-shards is for --filter-backend bitmap
--filter remote --filter-shards 0|--filter-shards '0': want 1..1024
--filter remote --filter-shards 1025|--filter-shards '1025': want 1..1024
--filter remote --filter-shards x|--filter-shards 'x': want 1..1024
--filter remote --filter-shards -1|--filter-shards '-1'
--filter remote --filter-shards|--filter-shards needs a value
--filter remote --variant counting|--variant is for --filter local
--filter none --error-rate 0.1|--error-rate needs a filter
--rebuild-interval x|--rebuild-interval 'x'
--bogus|unknown option '--bogus'
extra|unexpected argument 'extra'
EOF
    # values that used to pass these checks and fail only after the database
    # was opened and the filter built (exit 1), and flags that did nothing:
    # exit 2 before anything starts (a --db-path that cannot be opened makes
    # a check that lets one through fail fast, with 1)
    while IFS='|' read -r args want; do
        local rc=0
        # shellcheck disable=SC2086
        "$SVC" --port 0 --db-path "$T/no/such/dir/p.db" $args >"$T/out" 2>"$T/err" || rc=$?
        eq "$rc" 2 "exit status of '$args'"
        has "$T/err" "$want"
        if grep -q "version" "$T/err"; then fail "'$args' started the service"; fi
    done <<'EOF'
--error-rate 1e-300|--error-rate '1e-300': want a number with 1e-12 <= P < 1
--error-rate 1e-13|--error-rate '1e-13'
--bind localhost|--bind 'localhost': want an IPv4 or IPv6 address
--bind 300.1.2.3|--bind '300.1.2.3'
--cache-ttl-ms 5|--cache-ttl-ms needs --cache redis
--cache none --cache-ttl-ms 5|--cache-ttl-ms needs --cache redis
--cache-timeout-ms 500|--cache-timeout-ms needs --cache redis
--cache redis --cache-timeout-ms 0|--cache-timeout-ms '0': want 1..60000
--cache redis --cache-timeout-ms 60001|--cache-timeout-ms '60001'
--filter none --negative-ttl-ms 5|--negative-ttl-ms needs a filter
--filter none --headroom 3|--headroom needs a filter
--filter none --check-sample 3|--check-sample needs a filter
--filter none --check-sample 0|--check-sample needs a filter
--filter none --capacity 10|--capacity needs a filter
--capacity 100 --headroom 3|--headroom is for --capacity 0
--headroom 1 --capacity 5000|--headroom is for --capacity 0
--capacity 1099511627776 --error-rate 1e-12|--capacity 1099511627776 at --error-rate 1e-12
--variant counting --capacity 1099511627776 --error-rate 0.0001|at most 64 GiB
--filter remote --capacity 1000000000 --error-rate 0.001|at most 2^32 bits per shard, and --filter-shards is 1
--filter remote --filter-shards 3 --capacity 1000000000 --error-rate 0.0001|--filter-shards is 3
EOF
    # the edges of those ranges still start (and here fail on the database)
    while IFS= read -r args; do
        local rc=0
        # shellcheck disable=SC2086
        "$SVC" --port 0 --db-path "$T/no/such/dir/p.db" $args >"$T/out" 2>"$T/err" || rc=$?
        eq "$rc" 1 "exit status of '$args'"
        has "$T/err" "cannot open the sqlite database"
    done <<'EOF'
--error-rate 1e-12
--variant blocked --error-rate 1e-12 --capacity 1000
--bind ::1
--cache redis --cache-ttl-ms 5
--cache redis --cache-timeout-ms 1
--cache redis --cache-timeout-ms 60000
--negative-ttl-ms 5 --headroom 3 --check-sample 3
--capacity 0 --headroom 3
--filter remote --filter-backend module --capacity 1000000000 --error-rate 0.001
--filter remote --filter-shards 4 --capacity 1000000000 --error-rate 0.001
--filter remote --filter-shards 1024 --capacity 400000000000 --error-rate 0.01
--filter remote --filter-url redis+cluster://[::1]:7000,h,127.0.0.1:7002/ --filter-shards 3
--cache redis --redis-url redis+cluster://u:pw@h1:7000,[::1]:7001
EOF
}

case_startup() {
    local rc
    # a database that does not answer: exit 1, a message
    rc=0
    timeout 60 "$SVC" --port 0 --db postgres --db-url "host=127.0.0.1 port=1 user=x dbname=x connect_timeout=2" \
        2>"$T/err" || rc=$?
    eq "$rc" 1 "exit status with an unreachable PostgreSQL"
    has "$T/err" "cannot open the postgres database"
    rc=0
    timeout 60 "$SVC" --port 0 --db mariadb --db-url "mysql://x:y@127.0.0.1:1/x" 2>"$T/err" || rc=$?
    eq "$rc" 1 "exit status with an unreachable MariaDB"
    has "$T/err" "cannot open the mariadb database"
    # an SQLite file that cannot be created
    rc=0
    "$SVC" --port 0 --db-path /nonexistent/dir/p.db 2>"$T/err" || rc=$?
    eq "$rc" 1 "exit status with a bad --db-path"
    has "$T/err" "cannot open the sqlite database"
    # a remote filter on a Redis that does not answer
    rc=0
    timeout 60 "$SVC" --port 0 --db-path "$T/p.db" --seed 10 --filter remote \
        --filter-url redis://127.0.0.1:1 2>"$T/err" || rc=$?
    eq "$rc" 1 "exit status with an unreachable remote filter"
    has "$T/err" "cannot open the remote filter"
    # a port in use
    start
    rc=0
    "$SVC" --port "$PORT" --db-path "$T/p.db" --seed 10 2>"$T/err" || rc=$?
    eq "$rc" 1 "exit status with the port taken"
    has "$T/err" "Address already in use"
    # the log: one line per step
    has "$T/svc.log" "db: seeded 1000 products"
    has "$T/svc.log" "db: sqlite"
    has "$T/svc.log" "cache: none"
    has "$T/svc.log" "filter: local blocked, p=0.01, built in"
    grep -q "with 99[0-9] keys\|with 1000 keys" "$T/svc.log" || fail "filter built with ~1000 keys"
    has "$T/svc.log" "listening on http://127.0.0.1:$PORT"
    stop
    # the second start does not seed again
    start
    if grep -q "seeded" "$T/svc.log"; then fail "seeded twice"; fi
    has "$T/svc.log" "1000 products"
    stop
    # a Redis cache that does not answer is a warning, not an error
    start --cache redis --redis-url redis://127.0.0.1:1
    has "$T/svc.log" "does not answer"
    expect 200 GET /products/7
    stop
    # IPv6 loopback
    if [ -e /proc/net/if_inet6 ]; then
        start --bind ::1
        has "$T/svc.log" "listening on http://[::1]:"
        eq "$(curl -sS -o /dev/null -w '%{http_code}' "http://[::1]:$PORT/products/7")" 200 "GET over IPv6"
        stop
    fi
}

case_endpoints() {
    start
    expect 200 GET /products/42
    ctype application/json
    eq "$(jq -c . "$T/body")" '{"id":42,"name":"product 42","price_cents":32598}' "product 42"
    expect 200 HEAD /products/42 --head
    expect 404 GET /products/1001
    json_error
    eq "$(jq -r .error "$T/body")" "not found" "404 body"
    expect 404 GET /products/9223372036854775807
    local id
    for id in 0 01 -1 +1 abc 1a 9223372036854775808 99999999999999999999 %20 1.0; do
        expect 400 GET "/products/$id"
        json_error
    done
    expect 400 GET /products/
    expect 400 DELETE /products/x
    # routes and methods
    expect 404 GET /
    json_error
    expect 404 GET /products/1/extra
    expect 404 GET /nope
    expect 405 PUT /products/1
    grep -qi '^allow: GET, HEAD, DELETE' "$T/headers" || fail "Allow header of /products/{id}"
    json_error
    expect 405 GET /products
    grep -qi '^allow: POST' "$T/headers" || fail "Allow header of /products"
    expect 405 POST /metrics
    grep -qi '^allow: GET, HEAD' "$T/headers" || fail "Allow header of /metrics"
    expect 405 DELETE /healthz
    # query strings are ignored
    expect 200 GET '/products/42?x=1'
    # healthz
    expect 200 GET /healthz
    eq "$(cat "$T/body")" "ok" "healthz body"
    # DELETE
    expect 204 DELETE /products/42
    expect 404 GET /products/42
    expect 404 DELETE /products/42
    json_error
    # keep-alive: two requests, one connection
    curl -sS -v -o /dev/null -o /dev/null "$BASE/products/1" "$BASE/products/2" 2>"$T/err" >/dev/null
    has "$T/err" "Re-using existing connection"
    # a body sent to GET is ignored
    expect 200 GET /products/3 --data-binary 'ignored'
    # many requests in parallel
    seq 1 200 | xargs -P 8 -I{} curl -s -o /dev/null -w '%{http_code}\n' "$BASE/products/{}" >"$T/codes"
    eq "$(grep -c '^200$' "$T/codes")" 199 "parallel GETs found (42 was deleted)"
    eq "$(grep -c '^404$' "$T/codes")" 1 "parallel GETs not found"
    stop
}

# Percent-escapes in the path: %00 and %2F are not decoded (an id with an
# encoded NUL was read up to the NUL, an encoded slash as a separator), the
# others are. Raw request lines, so that no client normalises them.
case_encoded() {
    start_ranged
    expect_raw 400 GET '/products/42%00abc'
    json_error
    expect_raw 400 HEAD '/products/42%00'
    expect_raw 400 DELETE '/products/43%00-x'
    json_error
    expect_raw 200 GET /products/43
    expect_raw 400 GET '/products/%00'
    expect_raw 400 GET '/products/42%2F'
    expect_raw 400 GET '/products/42%2f7'
    expect_raw 400 GET '/products/%2F42'
    expect_raw 404 GET '/products%2F42'
    json_error
    expect_raw 404 DELETE '/products%2f44'
    expect_raw 200 GET /products/44
    expect_raw 404 GET '/healthz%00'
    expect_raw 404 GET '/metrics%00x'
    # other escapes are decoded as before
    expect_raw 200 GET '/products/%34%32'
    eq "$(jq -r .id "$T/body")" 42 "id of /products/%34%32"
    expect_raw 200 GET '/products/4%32'
    expect_raw 400 GET '/products/4%'
    expect_raw 400 GET '/products/4%3'
    expect_raw 400 GET '/products/4%zz'
    # absolute-form targets (RFC 9112 3.2.2): the path is the route
    expect_raw 200 GET 'http://x/products/43'
    eq "$(jq -r .id "$T/body")" 43 "id of http://x/products/43"
    expect_raw 200 GET 'HTTPS://example.com:8080/products/4%32'
    eq "$(jq -r .id "$T/body")" 42 "id of HTTPS://example.com:8080/products/4%32"
    expect_raw 200 GET 'http://x/healthz'
    expect_raw 405 DELETE 'http://x/products'
    expect_raw 404 GET 'http://x'
    expect_raw 404 GET 'ftp://x/products/43'
    expect_raw 404 GET 'products/43'
    metrics
    eq "$(m bloomgate_guard_removes_total)" 0 "nothing deleted"
    stop
}

case_post() {
    start
    expect 404 GET /products/5000
    eq "$(post '{"id":5000,"name":"new thing","price_cents":1999}')" 201 "POST status"
    ctype application/json
    eq "$(jq -c . "$T/body")" '{"id":5000,"name":"new thing","price_cents":1999}' "POST body"
    grep -qi '^location: /products/5000' "$T/headers" || fail "Location header"
    expect 200 GET /products/5000
    eq "$(jq -r .name "$T/body")" "new thing" "GET after POST"
    # replace, escapes and UTF-8 round trip exactly
    eq "$(post ' { "price_cents" : 0 , "name" : "caf\u00e9 \"q\" \\ \ud83d\ude00 é\n" , "id" : 5000 } ')" 201 "POST replace"
    local posted
    posted=$(cat "$T/body")
    expect 200 GET /products/5000
    eq "$(cat "$T/body")" "$posted" "GET returns what POST did"
    eq "$(jq -r .name "$T/body")" "$(printf 'café "q" \\ \xf0\x9f\x98\x80 é\n')" "decoded name"
    # the largest id
    eq "$(post '{"id":9223372036854775807,"name":"max","price_cents":9223372036854775807}')" 201 "POST max id"
    expect 200 GET /products/9223372036854775807
    # the filter learnt them: puts counted
    metrics
    ge "$(m bloomgate_guard_puts_total)" 3 "puts"
    # member names are compared decoded: "\u0069d" is "id"
    eq "$(post '{"\u0069d":5002,"n\u0061me":"esc","price\u005fcents":7}')" 201 "escaped member names"
    eq "$(jq -c . "$T/body")" '{"id":5002,"name":"esc","price_cents":7}' "POST body, escaped names"
    # a body without Content-Type is accepted
    eq "$(req POST /products --data-binary '{"id":5001,"name":"x","price_cents":1}' -H 'Content-Type:')" 201 "POST without Content-Type"
    # an absolute-form target is its path
    eq "$(req POST / --request-target http://x/products -H 'Content-Type: application/json' \
        --data-binary '{"id":5003,"name":"abs","price_cents":3}')" 201 "POST http://x/products"
    expect 200 GET /products/5003
    stop
}

case_badjson() {
    start
    local body
    while IFS= read -r body; do
        eq "$(post "$body")" 400 "status of POST $body"
        json_error
    done <<'EOF'

{
[]
"x"
{}
{"id":1}
{"id":1,"name":"a"}
{"id":1,"name":"a","price_cents":1,"extra":2}
{"id":1,"name":"a","price_cents":1,"id":2}
{"id":1,"name":"a","price_cents":1,"\u0069d":2}
{"id":1,"name":"a","price_cents":1,"i\u0000d":2}
{"id\u0000":1,"name":"a","price_cents":1}
{"id":0,"name":"a","price_cents":1}
{"id":-1,"name":"a","price_cents":1}
{"id":1.5,"name":"a","price_cents":1}
{"id":1e3,"name":"a","price_cents":1}
{"id":01,"name":"a","price_cents":1}
{"id":9223372036854775808,"name":"a","price_cents":1}
{"id":"1","name":"a","price_cents":1}
{"id":1,"name":"","price_cents":1}
{"id":1,"name":1,"price_cents":1}
{"id":1,"name":"a","price_cents":-5}
{"id":1,"name":"a","price_cents":null}
{"id":1,"name":"a\u0000b","price_cents":1}
{"id":1,"name":"\ud800","price_cents":1}
{"id":1,"name":"\udc00x","price_cents":1}
{"id":1,"name":"\x","price_cents":1}
{"id":1,"name":"\u12","price_cents":1}
{"id":1,"name":"a","price_cents":1}x
{"id":1,"name":"a","price_cents":1},
{"id":1,"name":"a" "price_cents":1}
{"id":1,"name":"a",}
{"id":1 "name":"a","price_cents":1}
{id:1,"name":"a","price_cents":1}
{"id":1,"name":"unterminated
EOF
    # an escaped name is the member it spells
    eq "$(post '{"id":1,"name":"a","price_cents":1,"\u0069d":2}')" 400 "id twice, once escaped"
    has "$T/body" 'duplicate member \"id\"'
    # raw control characters and invalid UTF-8
    eq "$(post "$(printf '{"id":1,"name":"a\tb","price_cents":1}')")" 400 "raw tab"
    eq "$(post "$(printf '{"id":1,"name":"a\xffb","price_cents":1}')")" 400 "invalid UTF-8"
    eq "$(post "$(printf '{"id":1,"name":"\xc0\xaf","price_cents":1}')")" 400 "overlong UTF-8"
    eq "$(post "$(printf '{"id":1,"name":"\xed\xa0\x80","price_cents":1}')")" 400 "UTF-8 surrogate"
    has "$T/body" "invalid UTF-8"
    # too long a name
    eq "$(post "{\"id\":1,\"name\":\"$(head -c 1100 /dev/zero | tr '\0' a)\",\"price_cents\":1}")" 400 "long name"
    has "$T/body" "too long"
    # 415: not JSON
    eq "$(req POST /products -H 'Content-Type: application/x-www-form-urlencoded' --data-binary 'id=1')" 415 "form body"
    json_error
    # exactly application/json, with optional parameters; not a longer type
    # that starts the same (the first 16 bytes used to be all that counted)
    local ct
    while IFS= read -r ct; do
        eq "$(req POST /products -H "Content-Type: $ct" --data-binary '{"id":6001,"name":"x","price_cents":1}')" 415 "Content-Type $ct"
        json_error
    done <<'EOF'
application/jsonx
application/json-seq
application/json+x
application/jsonp; charset=utf-8
application/json5
text/json
application/js
EOF
    while IFS= read -r ct; do
        eq "$(req POST /products -H "Content-Type: $ct" --data-binary '{"id":6001,"name":"x","price_cents":1}')" 201 "Content-Type $ct"
    done <<'EOF'
application/json
Application/JSON
application/json; charset=utf-8
application/json;charset=UTF-8
application/json ; charset=utf-8
EOF
    # 413: declared and chunked
    head -c 5000 /dev/zero | tr '\0' ' ' >"$T/big"
    eq "$(req POST /products -H 'Content-Type: application/json' --data-binary @"$T/big")" 413 "big body"
    json_error
    eq "$(req POST /products -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary @"$T/big")" 413 "big chunked body"
    json_error
    # exactly the limit is fine (whitespace around a valid object)
    local small='{"id":7,"name":"limit","price_cents":1}'
    { printf '%s' "$small"; head -c $((4096 - ${#small})) /dev/zero | tr '\0' ' '; } >"$T/limit"
    eq "$(stat -c %s "$T/limit")" 4096 "limit body size"
    eq "$(req POST /products -H 'Content-Type: application/json' --data-binary @"$T/limit")" 201 "4096-byte body"
    # garbage on the socket: the service stays up
    printf 'GARBAGE\r\n\r\n' | timeout 5 bash -c "cat >/dev/tcp/127.0.0.1/$PORT" || true
    printf 'GET /products/1 HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n' |
        timeout 5 bash -c "cat >/dev/tcp/127.0.0.1/$PORT" || true
    expect 200 GET /products/1
    # libmicrohttpd's own answers are its HTML and are not counted (README,
    # "Errors libmicrohttpd answers itself")
    (
        exec 3<>"/dev/tcp/127.0.0.1/$PORT"
        printf 'GET /products/1 HTTP/2.0\r\n\r\n' >&3
        timeout 5 cat <&3
    ) >"$T/raw" 2>/dev/null || true
    grep -q '^HTTP/1.1 505' "$T/raw" || fail "HTTP/2.0 request line: $(head -n 1 "$T/raw")"
    has "$T/raw" "<html>"
    metrics
    eq "$(m 'bloomgate_http_requests_total{code="505"}')" 0 "libmicrohttpd's 505 counted"
    ge "$(m 'bloomgate_http_requests_total{code="400"}')" 35 "400s counted"
    eq "$(m 'bloomgate_http_requests_total{code="413"}')" 2 "413s counted"
    eq "$(m 'bloomgate_http_requests_total{code="415"}')" 8 "415s counted"
    stop
}

case_metrics() {
    start
    local i
    for i in $(seq 1 30); do req GET "/products/$i" >/dev/null; done
    for i in $(seq 2001 2020); do req GET "/products/$i" >/dev/null; done
    req GET /products/x >/dev/null
    req GET /nowhere >/dev/null
    expect 200 GET /metrics
    ctype "text/plain; version=0.0.4"
    cp "$T/body" "$T/metrics"
    # every counter and gauge, with HELP and TYPE
    local name type
    while read -r name type; do
        grep -q "^# HELP $name " "$T/metrics" || fail "no HELP for $name"
        grep -q "^# TYPE $name $type\$" "$T/metrics" || fail "no TYPE $type for $name"
    done <<'EOF'
bloomgate_products_info gauge
bloomgate_guard_requests_total counter
bloomgate_guard_filtered_total counter
bloomgate_guard_negative_hits_total counter
bloomgate_guard_cache_hits_total counter
bloomgate_guard_cache_errors_total counter
bloomgate_guard_cache_skipped_total counter
bloomgate_guard_source_queries_total counter
bloomgate_guard_source_found_total counter
bloomgate_guard_false_positives_total counter
bloomgate_guard_source_errors_total counter
bloomgate_guard_collapsed_total counter
bloomgate_guard_puts_total counter
bloomgate_guard_removes_total counter
bloomgate_guard_rebuilds_total counter
bloomgate_guard_rebuild_errors_total counter
bloomgate_guard_filter_items gauge
bloomgate_guard_filter_bytes gauge
bloomgate_db_queries_total counter
bloomgate_http_requests_total counter
bloomgate_http_request_duration_seconds histogram
bloomgate_guard_filter_check_seconds histogram
bloomgate_rebuild_duration_seconds histogram
EOF
    # every sample line is NAME{labels} VALUE with a known family
    awk '
        /^#/ { if ($2 == "TYPE") fam[$3] = $4; next }
        /^$/ { next }
        {
            if (NF != 2 || $2 !~ /^[0-9.e+-]+$/) { print "bad line: " $0; bad = 1; next }
            n = $1; sub(/\{.*/, "", n); base = n
            sub(/_(bucket|sum|count)$/, "", base)
            if (!(n in fam) && !(base in fam && fam[base] == "histogram")) { print "no TYPE for: " $0; bad = 1 }
        }
        END { exit bad }' "$T/metrics" || fail "malformed exposition"
    eq "$(m bloomgate_guard_requests_total)" 50 "guard requests"
    eq "$(m bloomgate_guard_source_found_total)" 30 "found"
    eq "$(m 'bloomgate_http_requests_total{code="200"}')" 30 "200s"
    eq "$(m 'bloomgate_http_requests_total{code="404"}')" 21 "404s"
    eq "$(m 'bloomgate_http_requests_total{code="400"}')" 1 "400s"
    # (a key that sets no new bit is not counted: about 1000)
    ge "$(m bloomgate_guard_filter_items)" 990 "filter items"
    gt "$(m bloomgate_guard_filter_bytes)" 0 "filter bytes"
    gt "$(m bloomgate_db_queries_total)" 30 "db queries"
    eq "$(m bloomgate_guard_filter_check_seconds_count)" 50 "filter checks timed (--check-sample 1)"
    eq "$(m 'bloomgate_http_request_duration_seconds_count{route="get_product",outcome="ok"}')" 30 "found histogram count"
    eq "$(m 'bloomgate_http_request_duration_seconds_count{route="get_product",outcome="not_found"}')" 20 "not-found histogram count"
    eq "$(m 'bloomgate_http_request_duration_seconds_count{route="get_product",outcome="client_error"}')" 1 "bad-id histogram count"
    eq "$(m 'bloomgate_http_request_duration_seconds_count{route="other",outcome="not_found"}')" 1 "unknown-route histogram count"
    grep -q '^bloomgate_products_info{.*db="sqlite",cache="none",filter="local",variant="blocked"} 1$' "$T/metrics" ||
        fail "info line"
    # histograms: buckets ascending in le, counts monotone, +Inf == _count
    awk '
        /_bucket\{/ {
            key = $1; sub(/le="[^"]*"/, "", key); sub(/_bucket/, "", key)
            le = $1; sub(/.*le="/, "", le); sub(/".*/, "", le)
            v = $2 + 0
            if (key in last) {
                if (v < last[key]) { print "not monotone: " $0; bad = 1 }
                if (le != "+Inf" && le + 0 <= lastle[key]) { print "le not ascending: " $0; bad = 1 }
            }
            last[key] = v; lastle[key] = (le == "+Inf") ? 1e99 : le + 0
            if (le == "+Inf") inf[key] = v
            next
        }
        /_count/ && !/^#/ {
            key = $1; sub(/_count/, "", key); gsub(/[{}]/, "", key)
            cnt[key] = $2 + 0
        }
        END {
            for (k in inf) {
                c = k; gsub(/[{}]/, "", c); sub(/,$/, "", c)
                if (!(c in cnt)) { print "no _count for " k; bad = 1 }
                else if (cnt[c] != inf[k]) { print "+Inf " inf[k] " != _count " cnt[c] " for " k; bad = 1 }
            }
            exit bad
        }' "$T/metrics" || fail "histogram shape"
    grep -q 'bloomgate_http_request_duration_seconds_bucket{route="get_product",outcome="ok",le="0.000050000"}' "$T/metrics" ||
        fail "a 50 us bucket"
    grep -q 'le="1.000000000"' "$T/metrics" || fail "a 1 s bucket"
    # HEAD /metrics has no body but the same headers
    expect 200 HEAD /metrics --head
    stop
    # --check-sample 0: no timing
    start --check-sample 0
    req GET /products/1 >/dev/null
    metrics
    eq "$(m bloomgate_guard_filter_check_seconds_count)" 0 "no filter checks timed"
    stop
}

case_falsepos() {
    # A tiny, overfull filter: most absent ids pass it and reach the database.
    # Negatives live 10 min, not the default 30 s (-20 %): the two rounds of
    # 200 requests below took 16 s on a loaded CI host, and 24 s would
    # expire the first round's entries before the second asks again.
    start --capacity 100 --error-rate 0.5 --negative-ttl-ms 600000
    local i
    for i in $(seq 100001 100200); do req GET "/products/$i" >/dev/null; done
    metrics
    local fp
    fp=$(m bloomgate_guard_false_positives_total)
    gt "$fp" 50 "false positives with an overfull filter"
    eq "$(m bloomgate_guard_source_queries_total)" "$fp" "every false positive is a database query"
    eq "$(( $(m bloomgate_guard_filtered_total) + fp ))" 200 "filtered + false positives"
    # asked again: the negative cache answers, not the database
    for i in $(seq 100001 100200); do req GET "/products/$i" >/dev/null; done
    metrics
    eq "$(m bloomgate_guard_false_positives_total)" "$fp" "no new false positives"
    eq "$(m bloomgate_guard_negative_hits_total)" "$fp" "negative-cache hits"
    stop
    # without a filter nothing is filtered and nothing is a false positive
    start --filter none
    for i in $(seq 100001 100020); do expect 404 GET "/products/$i"; done
    metrics
    eq "$(m bloomgate_guard_filtered_total)" 0 "filtered without a filter"
    eq "$(m bloomgate_guard_source_queries_total)" 20 "every lookup reaches the database"
    eq "$(m bloomgate_guard_filter_check_seconds_count)" 0 "no filter checks timed"
    grep -q 'filter="none"' "$T/metrics" || fail "info says filter none"
    stop
}

case_counting() {
    # counting: DELETE removes the id from the filter
    start --variant counting
    expect 204 DELETE /products/5
    metrics
    local f0
    f0=$(m bloomgate_guard_filtered_total)
    eq "$(m bloomgate_guard_removes_total)" 1 "removes"
    expect 404 GET /products/5
    metrics
    eq "$(m bloomgate_guard_filtered_total)" $((f0 + 1)) "the deleted id is filtered"
    eq "$(m bloomgate_guard_false_positives_total)" 0 "no false positive"
    # and POST adds it back
    eq "$(post '{"id":5,"name":"back","price_cents":5}')" 201 "POST"
    expect 200 GET /products/5
    grep -q 'variant="counting"' "$T/metrics" || fail "info says counting"
    stop
    # blocked: the deleted id stays in the filter (a false positive) until
    # a rebuild
    rm -f "$T/products.db"
    start --variant blocked
    expect 204 DELETE /products/5
    expect 404 GET /products/5
    metrics
    eq "$(m bloomgate_guard_false_positives_total)" 1 "the deleted id is a false positive"
    stop
}

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

case_rebuild() {
    start --rebuild-interval 1
    expect 204 DELETE /products/9
    wait_rebuilds 2
    ge "$(m bloomgate_guard_rebuilds_total)" 2 "rebuilds"
    ge "$(m bloomgate_rebuild_duration_seconds_count)" 2 "rebuild histogram"
    ge "$(m bloomgate_guard_filter_items)" 990 "items after the rebuild"
    ge 999 "$(m bloomgate_guard_filter_items)" "items after the rebuild, at most"
    has "$T/svc.log" "filter rebuilt in"
    # the deleted id is gone from the rebuilt filter
    deleted_filtered_then_posts 9
    stop
}

# flood N: opens N connections at once and holds them (a server takes what
# its limit allows, the rest wait in its listen backlog), then sends one
# GET of an existing id on each and reads the answers; their status codes
# (000: none within 30 s) go to $T/codes.
flood() {
    local n=$1 i fd line fds=()
    for i in $(seq 1 "$n"); do
        exec {fd}<>"/dev/tcp/127.0.0.1/$PORT" || fail "cannot open connection $i"
        fds+=("$fd")
    done
    sleep 0.5
    for i in "${!fds[@]}"; do
        printf 'GET /products/%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' \
            $((i % 1000 + 1)) >&"${fds[$i]}" || true
    done
    : >"$T/codes"
    for fd in "${fds[@]}"; do
        line=$(timeout 30 head -n 1 <&"$fd" || true)
        exec {fd}<&-
        [[ $line =~ ^HTTP/1\.1\ ([0-9]{3}) ]] && echo "${BASH_REMATCH[1]}" >>"$T/codes" ||
            echo 000 >>"$T/codes"
    done
}

# A cold service (no worker has its database connection yet) flooded with
# more connections than its open-file limit holds: with the default
# --max-connections it lowers the limit to what fits, and no request gets a
# 503 because a worker could not open its database (EMFILE); an explicit
# --max-connections that does not fit is refused; a soft limit below the
# hard one is raised.
case_fdlimit() {
    SVC_ULIMIT_N=256 start_ranged --threads 4
    grep -q "max-connections lowered from 1024 to [0-9]*: the open-file limit is 256 " "$T/svc.log" ||
        fail "no log line about lowering max-connections"
    eq "$(grep -c "max-connections lowered" "$T/svc.log")" 1 "lowered max-connections log lines"
    flood 320
    eq "$(grep -vc '^200$' "$T/codes")" 0 "non-200 answers to the flood ($(sort "$T/codes" | uniq -c | tr '\n' ' '))"
    if grep -q "Too many open files\|resource limit" "$T/svc.log"; then fail "the service ran out of files"; fi
    expect 200 GET /healthz
    stop
    # an explicit value that does not fit: exit 2, nothing started
    local rc=0
    timeout 30 bash -c 'ulimit -n 256 && exec "$@"' _ "$SVC" --port 0 --db-path "$T/products.db" \
        --max-connections 1024 2>"$T/err" || rc=$?
    eq "$rc" 2 "exit status of --max-connections 1024 under ulimit -n 256"
    has "$T/err" "--max-connections 1024 does not fit the open-file limit of 256"
    if grep -q "db:" "$T/err"; then fail "the database was opened"; fi
    # room for fewer connections than threads: the threads are lowered too
    # (libmicrohttpd gives each thread a share of the connections; one with
    # none never wakes, and SIGTERM then waited for it for ever)
    SVC_ULIMIT_N=64 start_ranged --threads 4
    grep -q "threads lowered from 4 to [1-3], one per connection" "$T/svc.log" ||
        fail "no log line about lowering the threads"
    expect 200 GET /healthz
    stop_within 10
    # and asked for on the command line: refused
    rc=0
    "$SVC" --port 0 --db-path "$T/products.db" --max-connections 2 --threads 4 2>"$T/err" || rc=$?
    eq "$rc" 2 "exit status of --max-connections 2 --threads 4"
    has "$T/err" "--max-connections 2 is below --threads 4"
    start_ranged --max-connections 2
    if [ "$(nproc)" -gt 1 ]; then # the default, 2 per CPU, is then above 2
        grep -q "threads lowered from [0-9]* to 2, one per connection" "$T/svc.log" ||
            fail "no log line about lowering the default threads"
    fi
    has "$T/svc.log" "(2 threads)"
    stop_within 10
    # one that fits is kept
    SVC_ULIMIT_N=256 start_ranged --threads 4 --max-connections 100
    if grep -q "lowered" "$T/svc.log"; then fail "an explicit --max-connections 100 was lowered"; fi
    stop
    # a soft limit below the hard one is raised to it
    local hard
    hard=$(ulimit -Hn)
    if [ "$hard" != unlimited ] && [ "$hard" -ge 2048 ]; then
        SVC_ULIMIT_SN=256 start_ranged --threads 4
        if grep -q "lowered" "$T/svc.log"; then fail "max-connections lowered below a higher hard limit"; fi
        eq "$(awk '/^Max open files/ { print $4 }' "/proc/$SVC_PID/limits")" "$hard" "soft open-file limit"
        stop
    fi
}

case_signals() {
    start
    kill -INT "$SVC_PID"
    local rc=0
    wait "$SVC_PID" || rc=$?
    eq "$rc" 0 "exit status after SIGINT"
    has "$T/svc.log" "stopping (SIGINT)"
    has "$T/svc.log" "stopped"
    # SIGTERM with requests in flight
    start
    seq 1 2000 | xargs -P 4 -I{} curl -s -o /dev/null "$BASE/products/{}" 2>/dev/null &
    local load=$!
    wait_metric bloomgate_guard_requests_total 20 # the load is under way
    stop
    kill "$load" 2>/dev/null || true # the rest of the load would only be refused
    wait "$load" 2>/dev/null || true
    has "$T/svc.log" "stopping (SIGTERM)"
}

# SIGTERM while a request is in flight: a POST whose body the client holds
# back (the service has its headers and has said 100 Continue) gets its
# 201 and its row once the body comes, a new connection is refused
# meanwhile, a keep-alive connection gets its next answer and is closed,
# and the exit is clean. The client holds the body, not a database lock,
# so no timeout of the service runs out however slow the steps between
# are (a database lock would not do: SQLite gives up after 5 s, and the
# worker thread it blocks also holds up the other connections libmicrohttpd
# gave it, a GET /metrics among them). With --shutdown-timeout 1, or a
# second SIGTERM, the service stops waiting: the POST gets no answer, and
# the log says so.
ka_get() { # ka_get PATH: GET on the keep-alive connection of fd 3; headers in $T/ka
    printf 'GET %s HTTP/1.1\r\nHost: x\r\n\r\n' "$1" >&3
    local line len=0
    : >"$T/ka"
    while IFS= read -r -t 10 line <&3; do
        line=${line%$'\r'}
        [ -n "$line" ] || break
        echo "$line" >>"$T/ka"
        case ${line,,} in content-length:*) len=${line#*: } ;; esac
    done
    [ -s "$T/ka" ] || fail "no answer on the keep-alive connection"
    [ "$len" -eq 0 ] || read -r -N "$len" -t 10 _ <&3
}
# post_held ID: on fd 4, a POST of ID whose body is held back until
# post_body; returns once the service has said 100 Continue (its handler
# has the request, which is in flight from then on).
post_held() {
    POST_DATA="{\"id\":$1,\"name\":\"late\",\"price_cents\":1}"
    exec 4<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'POST /products HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n' \
        "${#POST_DATA}" >&4
    local line
    IFS= read -r -t 30 line <&4 || fail "no 100 Continue for the POST"
    [[ $line == "HTTP/1.1 100"* ]] || fail "the POST's first answer: '$line'"
    IFS= read -r -t 30 line <&4 || fail "no end of the 100 Continue"
}
# post_body: sends the body of post_held's POST; its status code is in $T/post.code.
post_body() {
    printf '%s' "$POST_DATA" >&4
    timeout 30 cat <&4 >"$T/post.raw" || true
    exec 4<&-
    local line
    line=$(head -n 1 "$T/post.raw")
    [[ $line =~ ^HTTP/1\.1\ ([0-9]{3}) ]] || fail "no status line for the POST: '$line'"
    echo "${BASH_REMATCH[1]}" >"$T/post.code"
}
case_drain() {
    start
    exec 3<>"/dev/tcp/127.0.0.1/$PORT"
    ka_get /healthz
    if grep -qi '^connection: close' "$T/ka"; then fail "closed before stopping"; fi
    post_held 5001
    kill -TERM "$SVC_PID"
    wait_log "waiting up to 10 s for 1 request in flight" # no longer accepting
    # a new connection is refused meanwhile (curl's 7), not left waiting
    local crc=0
    curl -s -o /dev/null --max-time 5 "$BASE/healthz" 2>/dev/null || crc=$?
    eq "$crc" 7 "curl's exit status for a new connection while stopping"
    # a keep-alive connection is answered, then closed
    ka_get /healthz
    has "$T/ka" "200"
    grep -qi '^connection: close' "$T/ka" || fail "no Connection: close while stopping: $(cat "$T/ka")"
    timeout 5 cat <&3 >/dev/null || fail "the keep-alive connection stayed open"
    exec 3<&-
    post_body
    eq "$(cat "$T/post.code")" 201 "the POST in flight at SIGTERM"
    local rc=0
    wait "$SVC_PID" || rc=$?
    eq "$rc" 0 "exit status"
    has "$T/svc.log" "stopping (SIGTERM)"
    has "$T/svc.log" "stopped"
    has "$T/svc.log" "waiting up to 10 s for 1 request in flight"
    eq "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM products WHERE id=5001").fetchone()[0])' "$T/products.db")" 1 "the row of the POST"

    # the wait is bounded, and a second signal ends it
    drain_cut 5002 1 "gave up after 1 s: 1 request in flight cut" --shutdown-timeout 1
    drain_cut 5003 2 "SIGTERM again: 1 request in flight cut"
}
# drain_cut ID SIGNALS LOG [START_ARGS...]: a POST of ID whose body is held
# back is in flight when SIGNALS SIGTERMs come; it gets no answer, the
# service exits 0, and its log says LOG.
drain_cut() {
    local id=$1 signals=$2 log=$3 rc=0
    shift 3
    start "$@"
    post_held "$id"
    kill -TERM "$SVC_PID"
    if [ "$signals" -gt 1 ]; then
        wait_log "waiting up to 10 s for 1 request in flight"
        kill -TERM "$SVC_PID"
    fi
    local end=$((SECONDS + 60))
    while kill -0 "$SVC_PID" 2>/dev/null; do
        [ "$SECONDS" -lt "$end" ] || fail "the service did not exit within 60 s"
        sleep 0.1
    done
    wait "$SVC_PID" || rc=$?
    eq "$rc" 0 "exit status"
    has "$T/svc.log" "$log"
    timeout 10 cat <&4 >"$T/post.raw" || true
    exec 4<&-
    local code=000 line
    line=$(head -n 1 "$T/post.raw")
    [[ ! $line =~ ^HTTP/1\.1\ ([0-9]{3}) ]] || code=${BASH_REMATCH[1]}
    eq "$code" 000 "the POST of $id cut"
}

# ---- outages ----------------------------------------------------------------

# The SQLite file (with its -wal and -shm) moved away under a running
# service and moved back: 200 or 503 while it is away, and every thread
# answers 200 again once it is back (a thread that reconnected meanwhile
# used to create an empty database and answer 503 "no such table" for
# good).
case_sqlite_moved() {
    start_ranged --threads 4 --db-path "$T/q.db"
    expect 200 GET /products/1
    mkdir "$T/away"
    mv "$T/q.db" "$T/q.db-wal" "$T/q.db-shm" "$T/away/"
    local i code n503=0
    for i in $(seq 1 30); do
        code=$(req GET "/products/$i")
        case $code in 200) ;; 503) n503=$((n503 + 1)) ;; *) fail "GET while away: $code" ;; esac
        sleep 0.05
    done
    gt "$n503" 0 "503s while the database is away"
    [ ! -e "$T/q.db" ] || fail "an empty database was created while the file was away"
    expect 503 GET /healthz
    mv "$T/away/"* "$T/"
    for i in $(seq 1 40); do expect 200 GET "/products/$i"; done
    for i in $(seq 1 8); do expect 200 GET /healthz; done
    eq "$(post '{"id":4000,"name":"back","price_cents":1}')" 201 "POST after the file is back"
    stop
}

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

# cluster_start: a Redis Cluster of three masters on loopback, their ports
# in CPORTS, slots 0-5460, 5461-10922 and 10923-16383 in that order; waits
# until every node says cluster_state:ok. Each node's bus port is a free
# port of 25000-25999 too (--cluster-port), not port + 10000, which lies
# among the kernel's ephemeral ports. The cleanup stops them (PIDS).
CPORTS=()
cluster_start() {
    command -v redis-cli >/dev/null || fail "redis-cli is missing (package redis-tools)"
    local i p bus pid up info
    local -a buses=()
    for i in 0 1 2; do
        up=0
        for _ in $(seq 1 20); do
            p=$(free_port)
            bus=$(free_port)
            [[ $p != "$bus" && " ${CPORTS[*]} ${buses[*]} " != *" $p "* &&
                " ${CPORTS[*]} ${buses[*]} " != *" $bus "* ]] || continue
            mkdir -p "$T/node$i"
            "${REDIS_SERVER:-redis-server}" --port "$p" --bind 127.0.0.1 --save "" --appendonly no \
                --dir "$T/node$i" --cluster-enabled yes --cluster-config-file nodes.conf \
                --cluster-port "$bus" >"$T/node$i.log" 2>&1 &
            pid=$!
            PIDS+=("$pid")
            for _ in $(seq 1 100); do
                redis-cli -p "$p" PING 2>/dev/null | grep -q PONG && break
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            if redis-cli -p "$p" PING 2>/dev/null | grep -q PONG; then up=1; break; fi
            # A port taken meanwhile: another pair.
            kill -0 "$pid" 2>/dev/null && fail "cluster node $i does not answer on $p"
            grep -q "Address already in use" "$T/node$i.log" ||
                { cat "$T/node$i.log" >&2; fail "cluster node $i did not start"; }
        done
        eq "$up" 1 "cluster node $i started"
        CPORTS+=("$p")
        buses+=("$bus")
    done
    redis-cli -p "${CPORTS[0]}" CLUSTER ADDSLOTSRANGE 0 5460 | grep -q OK || fail "ADDSLOTSRANGE on node 0"
    redis-cli -p "${CPORTS[1]}" CLUSTER ADDSLOTSRANGE 5461 10922 | grep -q OK || fail "ADDSLOTSRANGE on node 1"
    redis-cli -p "${CPORTS[2]}" CLUSTER ADDSLOTSRANGE 10923 16383 | grep -q OK || fail "ADDSLOTSRANGE on node 2"
    for i in 1 2; do
        redis-cli -p "${CPORTS[0]}" CLUSTER MEET 127.0.0.1 "${CPORTS[$i]}" "${buses[$i]}" | grep -q OK ||
            fail "CLUSTER MEET node $i"
    done
    local ok
    for p in "${CPORTS[@]}"; do
        ok=0
        for _ in $(seq 1 300); do
            info=$(redis-cli -p "$p" CLUSTER INFO || true)
            if [[ $info == *cluster_state:ok* ]]; then ok=1; break; fi
            sleep 0.1
        done
        eq "$ok" 1 "cluster_state:ok on node $p"
    done
}

# cluster_owner KEY: the port of the master that holds KEY (0 if none does).
cluster_owner() {
    local p
    for p in "${CPORTS[@]}"; do
        if [ "$(redis-cli -p "$p" EXISTS "$1")" = 1 ]; then echo "$p"; return; fi
    done
    echo 0
}

case_redis_outage() {
    command -v "${REDIS_SERVER:-redis-server}" >/dev/null ||
        fail "redis-server is missing (scripts/deps.sh installs it)"
    REDIS_PORT=$(free_port)
    redis_start
    # Short TTLs: a delete that fails while Redis is down (the DELETE and
    # the POST below) makes the guard skip cache reads for the longest TTL
    # it writes with (docs/GUARD.md, Failed deletes). A 1 s cache timeout:
    # a loaded host's stall must not turn the cache hit below into a miss
    # (a stopped Redis refuses connections at once, whatever the timeout).
    start --cache redis --redis-url "redis://127.0.0.1:$REDIS_PORT" --cache-ttl-ms 2000 \
        --negative-ttl-ms 1000 --cache-timeout-ms 1000
    has "$T/svc.log" "cache: redis 127.0.0.1:$REDIS_PORT"
    expect 200 GET /products/5
    expect 200 GET /products/5
    metrics
    ge "$(m bloomgate_guard_cache_hits_total)" 1 "cache hits"
    grep -q 'cache="redis"' "$T/metrics" || fail "info says redis"
    # Redis stops: the database answers, cache errors are counted
    redis_stop
    local i
    for i in 5 6 7; do expect 200 GET "/products/$i"; done
    expect 404 GET /products/1000001
    expect 404 GET /products/77777777
    expect 204 DELETE /products/8
    eq "$(post '{"id":4000,"name":"during","price_cents":1}')" 201 "POST while Redis is down"
    expect 200 GET /products/5
    expect 200 GET /healthz
    metrics
    ge "$(m bloomgate_guard_cache_errors_total)" 3 "cache errors while Redis is down"
    ge "$(m bloomgate_guard_cache_skipped_total)" 1 "cache reads skipped after a failed delete"
    local hits
    hits=$(m bloomgate_guard_cache_hits_total)
    # Redis is back (empty): cache hits again
    redis_start
    local ok=0
    for _ in $(seq 1 50); do
        req GET /products/6 >/dev/null
        req GET /products/6 >/dev/null
        metrics
        if [ "$(m bloomgate_guard_cache_hits_total)" -gt "$hits" ]; then ok=1; break; fi
        sleep 0.2
    done
    eq "$ok" 1 "cache hits after Redis came back"
    expect 200 GET /products/4000
    # Redis hangs (SIGSTOP): a lookup waits --cache-timeout-ms (1 s) for the
    # cache, then the database answers; the breaker then skips the cache
    metrics
    local errors t0 t1
    errors=$(m bloomgate_guard_cache_errors_total)
    kill -STOP "$REDIS_PID"
    t0=$(date +%s%N)
    expect 200 GET /products/11
    t1=$(date +%s%N)
    kill -CONT "$REDIS_PID"
    ge $(((t1 - t0) / 1000000)) 900 "ms a lookup waited for a hung Redis (--cache-timeout-ms 1000)"
    gt 5000 $(((t1 - t0) / 1000000)) "ms a lookup waited for a hung Redis, at most"
    metrics
    gt "$(m bloomgate_guard_cache_errors_total)" "$errors" "cache errors after Redis hung"
    stop
}

# until_get ID CODE [TEXT]: GET /products/ID until it answers CODE (and its
# body contains TEXT), at most 15 s.
until_get() {
    local code
    for _ in $(seq 1 75); do
        code=$(req GET "/products/$1")
        if [ "$code" = "$2" ] && { [ -z "${3:-}" ] || grep -qF -- "$3" "$T/body"; }; then return 0; fi
        sleep 0.2
    done
    fail "GET /products/$1: no $2 ${3:+with '$3' }within 15 s (last: $code)"
}

# A remote filter lost with its Redis (restarted without its data): every
# GET is a 503 "remote filter does not exist", and /healthz says so too
# (it used to answer 200 meanwhile); with --rebuild-interval the rebuild
# re-creates the filter and the service recovers, without, it stays so.
case_remote_filter_lost() {
    command -v "${REDIS_SERVER:-redis-server}" >/dev/null ||
        fail "redis-server is missing (scripts/deps.sh installs it)"
    # Below the kernel's ephemeral ports (32768-60999 here), where services
    # started with --port 0 or start_ranged's 47400-47499 could take it
    # while Redis is down (that happened: "port 47494 stayed taken").
    REDIS_PORT=$(free_port)
    redis_start
    start_ranged --filter remote --filter-url "redis://127.0.0.1:$REDIS_PORT"
    expect 200 GET /products/5
    expect 200 GET /healthz
    redis_stop
    redis_start
    until_get 5 503 "remote filter does not exist"
    json_error
    expect 503 GET /products/999999
    # (a worker's first call after the restart may meet its broken
    # connection: 503 too, with another reason)
    local i
    for i in $(seq 1 20); do
        expect 503 GET /healthz
        ! grep -qF "remote filter unavailable: remote filter does not exist" "$T/body" || break
    done
    has "$T/body" "remote filter unavailable: remote filter does not exist"
    sleep 2
    expect 503 GET /products/5
    for i in $(seq 1 8); do expect 503 GET /healthz; done
    stop
    # with periodic rebuilds (the filter is created afresh at startup)
    start_ranged --filter remote --filter-url "redis://127.0.0.1:$REDIS_PORT" --rebuild-interval 1
    expect 200 GET /products/5
    redis_stop
    redis_start
    until_get 5 200
    # 8 healthy answers in a row (a worker's first call after the restart
    # may still meet its broken connection)
    local ok=0
    for i in $(seq 1 50); do
        if [ "$(req GET /healthz)" = 200 ]; then ok=$((ok + 1)); else ok=0; fi
        [ "$ok" -lt 8 ] || break
        sleep 0.1
    done
    eq "$ok" 8 "healthy answers in a row after the rebuild"
    expect 404 GET /products/999999
    has "$T/svc.log" "filter rebuilt in"
    stop
}

# A module filter (--filter-backend module, bloomgate.so loaded) is rebuilt
# in Redis like a bitmap one: a deleted id is filtered after a rebuild, a
# POST while rebuilds run is never lost, and a filter lost with its Redis
# comes back.
case_module_rebuild() {
    [ -n "${BLOOMGATE_MODULE:-}" ] || fail "BLOOMGATE_MODULE is not set"
    REDIS_PORT=$(free_port)
    REDIS_ARGS=(--loadmodule "$BLOOMGATE_MODULE")
    redis_start
    start_ranged --filter remote --filter-backend module \
        --filter-url "redis://127.0.0.1:$REDIS_PORT" --rebuild-interval 1
    expect 200 GET /products/5
    expect 204 DELETE /products/9
    wait_rebuilds 2
    ge "$(m bloomgate_guard_rebuilds_total)" 1 "rebuilds"
    eq "$(m bloomgate_guard_rebuild_errors_total)" 0 "rebuild errors"
    deleted_filtered_then_posts 9
    redis_stop
    redis_start
    until_get 5 200
    stop
}

# The filter and the cache on a Redis Cluster of three masters: the filter
# sharded three ways, reached through a seed list whose first node is
# down; present ids found, absent ones filtered without a database query,
# a POST found afterwards, the shards on more than one master, and the
# cache's entries read back (hits) from the cluster.
case_cluster() {
    command -v "${REDIS_SERVER:-redis-server}" >/dev/null ||
        fail "redis-server is missing (scripts/deps.sh installs it)"
    cluster_start
    local dead
    dead=$(free_port)
    while [[ " ${CPORTS[*]} " == *" $dead "* ]]; do dead=$(free_port); done
    start --seed 20000 --filter remote \
        --filter-url "redis+cluster://127.0.0.1:$dead,127.0.0.1:${CPORTS[1]}" --filter-shards 3 \
        --cache redis --redis-url "redis+cluster://127.0.0.1:${CPORTS[2]}" --cache-timeout-ms 1000
    has "$T/svc.log" "cache: redis cluster 127.0.0.1:${CPORTS[2]}"
    has "$T/svc.log" "filter: remote bitmap 'products' on redis cluster 127.0.0.1:$dead (seeds 127.0.0.1:${CPORTS[1]}), 3 shards"
    expect 200 GET /healthz

    # the filter is sharded over the masters
    eq "$(redis-cli -c -p "${CPORTS[0]}" GET '{products}:shards')" 3 "{products}:shards"
    eq "$(redis-cli -c -p "${CPORTS[0]}" EXISTS '{products}:meta')" 0 "an unsharded filter's meta"
    local j owner owners=()
    for j in 0 1 2; do
        owner=$(cluster_owner "{products:s$j}:meta")
        [ "$owner" != 0 ] || fail "no master holds {products:s$j}:meta"
        owners+=("$owner")
    done
    ge "$(printf '%s\n' "${owners[@]}" | sort -u | wc -l)" 2 "masters holding the 3 shards (${owners[*]})"
    metrics
    ge "$(m bloomgate_guard_filter_items)" 19900 "filter items summed over the shards"

    # present ids: 200, read from the database, then from the cache
    local i
    for i in $(seq 1 50); do expect 200 GET "/products/$((i * 397))"; done
    eq "$(jq -r .name "$T/body")" "product 19850" "the last product"
    metrics
    local hits0 errors0
    hits0=$(m bloomgate_guard_cache_hits_total)
    errors0=$(m bloomgate_guard_cache_errors_total)
    for i in $(seq 1 50); do expect 200 GET "/products/$((i * 397))"; done
    metrics
    ge "$(( $(m bloomgate_guard_cache_hits_total) - hits0 ))" 45 "cache hits on the repeated GETs"
    eq "$(m bloomgate_guard_cache_errors_total)" "$errors0" "cache errors"
    # the entries are on the cluster, on more than one master
    local p with=0
    for p in "${CPORTS[@]}"; do
        [ "$(redis-cli -p "$p" --scan --pattern 'products:*' | wc -l)" -eq 0 ] || with=$((with + 1))
    done
    ge "$with" 2 "masters holding cache entries"

    # absent ids: 404, answered by the filter without the database (but
    # for its few false positives)
    local f0 fp0 db0 sq0
    f0=$(m bloomgate_guard_filtered_total)
    fp0=$(m bloomgate_guard_false_positives_total)
    db0=$(m bloomgate_db_queries_total)
    sq0=$(m bloomgate_guard_source_queries_total)
    for i in $(seq 100001 100200); do expect 404 GET "/products/$i"; done
    metrics
    local filtered fp
    filtered=$(( $(m bloomgate_guard_filtered_total) - f0 ))
    fp=$(( $(m bloomgate_guard_false_positives_total) - fp0 ))
    eq "$((filtered + fp))" 200 "filtered + false positives"
    ge "$filtered" 190 "absent ids filtered"
    eq "$(( $(m bloomgate_guard_source_queries_total) - sq0 ))" "$fp" "lookups that reached the database"
    eq "$(( $(m bloomgate_db_queries_total) - db0 ))" "$fp" "database queries"

    # a new id: filtered before, found after its POST
    expect 404 GET /products/30001
    eq "$(post '{"id":30001,"name":"clustered","price_cents":5}')" 201 "POST 30001"
    expect 200 GET /products/30001
    eq "$(jq -r .name "$T/body")" clustered "GET after POST"
    stop

    # another instance, asking for no shards, opens the sharded filter as it
    # is and rebuilds it every second: a deleted id is filtered after a
    # rebuild, ids POSTed while rebuilds run are all found
    start --seed 20000 --filter remote --filter-url "redis+cluster://127.0.0.1:${CPORTS[0]}" \
        --rebuild-interval 1
    has "$T/svc.log" "filter: remote bitmap 'products' on redis cluster 127.0.0.1:${CPORTS[0]}, 3 shards"
    metrics
    eq "$(m bloomgate_guard_filter_shards)" 3 "bloomgate_guard_filter_shards"
    expect 200 GET /products/30001
    expect 204 DELETE /products/397
    wait_rebuilds 2
    ge "$(m bloomgate_guard_rebuilds_total)" 2 "rebuilds of the sharded filter"
    deleted_filtered_then_posts 397 30002 # ids past the 20000 seeded
    eq "$(redis-cli -c -p "${CPORTS[0]}" GET '{products}:shards')" 3 "still 3 shards"
    stop
}

# db_outage postgres|mariadb
# closed_std_fds ARGS...: a second service on ARGS, started with stdout and
# stderr closed, answers: /dev/null holds them, not the database connection
# it opens next (its log lines would have gone into the connection; SQLite
# fills them itself, PostgreSQL's and MariaDB's clients do not).
closed_std_fds() {
    local p=0 code=000 pid rc=0
    for _ in $(seq 1 20); do
        p=$((47400 + RANDOM % 100))
        if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then continue; fi
        break
    done
    "$SVC" --port "$p" "$@" >&- 2>&- &
    pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 300); do
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/products/7" || true)
        [ "$code" = 200 ] && break
        sleep 0.1
    done
    eq "$code" 200 "GET with stdout and stderr closed"
    eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/products/8")" 200 "a second GET"
    eq "$(readlink "/proc/$pid/fd/1")" /dev/null "descriptor 1"
    eq "$(readlink "/proc/$pid/fd/2")" /dev/null "descriptor 2"
    kill -TERM "$pid"
    wait "$pid" || rc=$?
    eq "$rc" 0 "exit status with stdout and stderr closed"
}
db_outage() {
    local kind=$1
    [ -n "${DBCTL:-}" ] && [ -x "$DBCTL" ] || fail "DBCTL (bg-products-dbctl) is not set or not built"
    coproc DBC { exec "$DBCTL" "$kind" 2>"$T/dbctl.log"; }
    DB_PID=$DBC_PID
    local conninfo='' reply=''
    read -r -t 240 conninfo <&"${DBC[0]}" || true
    case $conninfo in ''|error*) cat "$T/dbctl.log" >&2; fail "$kind did not start: $conninfo" ;; esac
    start_raw --db "$kind" --db-url "$conninfo" --seed 1000
    expect 200 GET /products/5
    closed_std_fds --db "$kind" --db-url "$conninfo"
    expect 404 GET /products/1000001
    expect 200 GET /healthz

    echo stop >&"${DBC[1]}"
    read -r -t 60 reply <&"${DBC[0]}" || true
    eq "$reply" stopped "dbctl stop"
    # a maybe-present id: 503 with a JSON error, quickly
    local t0=$SECONDS
    expect 503 GET /products/5
    json_error
    eq "$(jq -r .error "$T/body")" "database unavailable" "503 error"
    expect 503 GET /products/6
    expect 503 GET /healthz
    expect 503 DELETE /products/7
    json_error
    eq "$(post '{"id":4000,"name":"x","price_cents":1}')" 503 "POST while the database is down"
    # absent ids are still answered from memory, by the filter
    local i n404=0
    for i in $(seq 2000001 2000100); do
        [ "$(req GET "/products/$i")" != 404 ] || n404=$((n404 + 1))
    done
    ge "$n404" 95 "absent ids answered 404 while the database is down"
    expect 200 GET /metrics
    [ $((SECONDS - t0)) -lt 120 ] || fail "requests during the outage took too long"
    metrics
    ge "$(m bloomgate_guard_source_errors_total)" 2 "source errors"
    ge "$(m 'bloomgate_http_requests_total{code="503"}')" 5 "503s counted"

    echo start >&"${DBC[1]}"
    read -r -t 120 reply <&"${DBC[0]}" || true
    eq "$reply" started "dbctl start"
    local ok=0
    for _ in $(seq 1 100); do
        if [ "$(req GET /products/5)" = 200 ]; then ok=1; break; fi
        sleep 0.2
    done
    eq "$ok" 1 "GET recovers after $kind came back"
    expect 200 GET /healthz
    expect 200 GET /products/6
    expect 204 DELETE /products/7
    eq "$(post '{"id":4000,"name":"after","price_cents":1}')" 201 "POST after the outage"
    expect 200 GET /products/4000
    stop
    grep -q "db=\"$kind\"" "$T/metrics" || fail "info says $kind"
}

case_postgres_outage() { db_outage postgres; }
case_mariadb_outage() { db_outage mariadb; }

case_demo() {
    [ -n "${SRC:-}" ] && [ -n "${BUILD:-}" ] || fail "SRC and BUILD must be set"
    local rc=0
    DEMO_SECONDS=2 DEMO_WARMUP=1 DEMO_PRODUCTS=20000 bash "$SRC/examples/products/demo.sh" "$BUILD" \
        >"$T/out" 2>"$T/err" || rc=$?
    cat "$T/out"
    [ "$rc" -eq 0 ] || { cat "$T/err" >&2; fail "demo exit status $rc"; }
    local last
    last=$(tail -n 1 "$T/out")
    [[ $last =~ ^absent-id\ database\ queries\ cut\ by\ ([0-9]+\.[0-9])%$ ]] ||
        fail "last line: '$last'"
    awk -v c="${BASH_REMATCH[1]}" 'BEGIN { exit !(c >= 99.0) }' || fail "cut ${BASH_REMATCH[1]}% < 99.0%"
    has "$T/out" "requests/s"
    has "$T/out" "observed false-positive rate"
}

declare -F "case_$CASE" >/dev/null || { echo "unknown case: $CASE" >&2; exit 2; }
"case_$CASE"
echo "ok [$CASE]"
