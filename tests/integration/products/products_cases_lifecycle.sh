# SPDX-License-Identifier: BSD-3-Clause
# Cases of products_test.sh: the service's lifecycle: periodic rebuilds
# of the filter, SIGINT and SIGTERM, and draining the requests in flight
# when it stops.
# Sourced by products_test.sh, which defines the assertions and helpers
# they use and runs one case_<name> per ctest test (products.<name>).

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
