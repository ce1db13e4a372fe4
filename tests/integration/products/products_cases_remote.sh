# SPDX-License-Identifier: BSD-3-Clause
# Cases of products_test.sh: the filter in Redis: a remote filter lost
# with its Redis, the module backend rebuilt, and the filter and the cache
# on a Redis Cluster.
# Sourced by products_test.sh, which defines the assertions and helpers
# they use and runs one case_<name> per ctest test (products.<name>).

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
# GET is a 503 "filter does not exist", and /healthz says so too
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
    until_get 5 503 '"detail":"filter does not exist'
    json_error
    expect 503 GET /products/999999
    # (a worker's first call after the restart may meet its broken
    # connection: 503 too, with another reason)
    local i
    for i in $(seq 1 20); do
        expect 503 GET /healthz
        ! grep -qF "remote filter unavailable: filter does not exist" "$T/body" || break
    done
    has "$T/body" "remote filter unavailable: filter does not exist"
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
