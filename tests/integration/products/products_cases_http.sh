# SPDX-License-Identifier: BSD-3-Clause
# Cases of products_test.sh: the service over HTTP: --help and the
# options, startup and its refusals, every endpoint and its errors,
# percent-escapes, POST, malformed JSON and requests, and a flood of
# connections past the open-file limit.
# Sourced by products_test.sh, which defines the assertions and helpers
# they use and runs one case_<name> per ctest test (products.<name>).

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
