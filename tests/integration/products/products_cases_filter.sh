# SPDX-License-Identifier: BSD-3-Clause
# Cases of products_test.sh: the metrics page and the filter's behaviours
# (false positives and the negative cache, the counting variant's
# DELETE), and a short run of the demo.
# Sourced by products_test.sh, which defines the assertions and helpers
# they use and runs one case_<name> per ctest test (products.<name>).

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
