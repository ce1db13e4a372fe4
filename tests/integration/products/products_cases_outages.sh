# SPDX-License-Identifier: BSD-3-Clause
# Cases of products_test.sh: outages of the backends: the SQLite file
# moved away, Redis (the cache) stopped and hung, PostgreSQL and MariaDB
# stopped and started again.
# Sourced by products_test.sh, which defines the assertions and helpers
# they use and runs one case_<name> per ctest test (products.<name>).

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

# db_outage postgres|mariadb
# closed_std_fds ARGS...: a second service on ARGS, started with stdout and
# stderr closed, answers: /dev/null holds them, not the database connection
# it opens next (its log lines would have gone into the connection; SQLite
# fills them itself, PostgreSQL's and MariaDB's clients do not).
# The port is free when probed, but another socket may take it before the
# service binds it, which the service, its log closed, can only show by
# exiting: then it starts again on another port.
closed_std_fds() {
    local p=0 code=000 pid rc=0
    for _ in $(seq 1 5); do
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
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        [ "$code" = 200 ] && break
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
