# SPDX-License-Identifier: BSD-3-Clause
# Cases of cli_remote_test.sh: remote filters through URLs. Malformed URLs,
# create, add, check and info, shared and sharded filters, credentials,
# unreachable servers, the module backend, push and pull, re-creation
# under a running add, and a build without remote support.
# Sourced by cli_remote_test.sh, which defines the assertions and helpers
# they use (start_redis, wait_until, ...) and runs one case_<name> per ctest
# test (cli.remote.<name>).

case_help() {
    local c
    for c in push pull rebuild; do
        run 0 "$BG" $c --help
        has out "usage: bloomgate $c"
        run 0 "$BG" help $c
    done
    for c in create add check info; do
        run 0 "$BG" $c --help
        has out "redis://"
    done
    run 0 "$BG" --help
    has out "push"
    has out "pull"
    has out "  rebuild "
    has out "redis://"
    run 2 "$BG" push only.bgf
    has err "no URL given"
    run 2 "$BG" push a.bgf b.bgf
    has err "is not a redis:// URL"
    run 2 "$BG" pull redis://h/x
    has err "no FILE given"
    run 2 "$BG" rebuild
    has err "no URL given"
}

# Every kind of malformed URL: exit 2, a message naming the URL and the
# fault, never the password. No server needed: nothing connects.
# Started with stdin or stdout closed: the Redis connection must not take
# their place (its answers would run in Redis as commands, its keys come
# from Redis): a write error on stdout is status 2, as for a file, and
# stdin reads as a bad descriptor.
case_closedfds() {
    start_redis
    local U="redis://127.0.0.1:$PORT/victim"
    run 0 "$BG" create -q "$U" -n 1000 -p 0.01
    run 0 "$BG" add -q "$U" x
    redis-cli -p "$PORT" set important data >/dev/null
    local rc=0
    "$BG" check --absent "$U" FLUSHALL x >&- 2>"$T/err" || rc=$?
    eq "$rc" 2 "check with stdout closed"
    has "$T/err" "standard output: Bad file descriptor"
    eq "$(redis-cli -p "$PORT" get important)" data "a key of the database"
    rc=0
    "$BG" rebuild --json "$U" x >&- 2>"$T/err" || rc=$?
    eq "$rc" 2 "rebuild --json with stdout closed"
    eq "$(redis-cli -p "$PORT" get important)" data "a key of the database"
    rc=0
    "$BG" add "$U" <&- 2>"$T/err" || rc=$?
    eq "$rc" 2 "add with stdin closed"
    has "$T/err" "standard input: Bad file descriptor"
    run 0 "$BG" check "$U" x
}

case_badurl() {
    local -a bad=(
        'redis://|the host is missing'
        'redis://h|the filter'"'"'s name is missing'
        'redis://h/|the filter'"'"'s name after the '"'"'/'"'"' is empty'
        'redis://h:/x|the port after '"'"':'"'"' is missing'
        'redis://h:0/x|is not a number from 1 to 65535'
        'redis://h:65536/x|is not a number from 1 to 65535'
        'redis://h:6x/x|is not a number from 1 to 65535'
        'redis://ho st/x|the host has a character'
        'redis://[::1/x|has no '"'"']'"'"''
        'redis://[zz]/x|not a hex digit'
        'redis://h/a/b|%2F'
        'redis://h/a%7Bb|reserved for Redis hash tags'
        'redis://h/x%zz|must be followed by two hex digits'
        'redis://h/%00|NUL byte'
        'redis://h/x#frag|#fragment'
        'redis://h/x?|followed by no parameter'
        'redis://h/x?backend=bloom|backend '"'"'bloom'"'"' is unknown'
        'redis://h/x?timeout=0|timeout '"'"'0'"'"' is not a number of milliseconds'
        'redis://h/x?timeout|has no value'
        'redis://h/x?db=1|query parameter '"'"'db'"'"' is unknown'
        'redis://h/x?shards=1|not a number of shards from 2 to 1024'
        'redis://h/x?shards=4x|not a number of shards'
        'redis://h/x?shards=2&backend=module|needs the bitmap backend'
        'redis+cluster://h:7000|name is missing'
        'redis://h1:1,h2:2/x|are for redis+cluster://'
        'redis+cluster://h:1,/x|an empty HOST:PORT'
        'redis+cluster://h:1,,h:2/x|an empty HOST:PORT'
        'redis+cluster://h:1,h:0/x|is not a number from 1 to 65535'
        'redis+cluster://h:1,h x:2/x|the host has a character'
        'redis+cluster://h:1,[::1/x|has no '"'"']'"'"''
        'redis://topsecret@h/x|USER:PASSWORD@'
        'redis://:topsecret%g@h/x|in the password'
        'redis://:@h/x|the password is empty'
    )
    local item url msg c
    for item in "${bad[@]}"; do
        url=${item%%|*}
        msg=${item#*|}
        for c in info check add create rebuild; do
            if [ $c = create ]; then
                run 2 "$BG" create "$url" -n 100 -p 0.01
            elif [ $c = info ]; then
                run 2 "$BG" info "$url"
            else
                run 2 "$BG" $c "$url" k
            fi
            has err "bad URL"
            has err "$msg"
            hasnt err "topsecret"
        done
    done
    # the URL is named, its password hidden
    run 2 "$BG" info 'redis://:topsecret@h:1/x?backend=nope'
    has err 'redis://***@h:1/x?backend=nope: bad URL'
    hasnt err topsecret
    # a raw '/' or '?' in the password cuts the authority short: the URL is
    # refused, and no part of the password is shown
    run 2 "$BG" info 'redis://:top/secret@h:1/x'
    has err 'redis://***@h:1/x: bad URL'
    hasnt err secret
    run 2 "$BG" info 'redis://:top?secret@h:1/x'
    hasnt err secret
    # words that are not redis:// URLs stay file paths
    run 2 "$BG" info 'http://h/x'
    has err 'http://h/x: cannot open: No such file or directory'
    run 2 "$BG" info 'redis:/h/x'
    hasnt err 'bad URL'
    # and push/pull/remove/merge check URLs as well
    run 2 "$BG" pull 'redis://h/x?shards=0' out.bgf
    has err "not a number of shards"
    run 2 "$BG" remove 'redis+cluster://h/x' k
    has err "remove"
    [ ! -e out.bgf ] || fail "pull of a bad URL wrote out.bgf"
}

case_roundtrip() {
    start_redis
    local U="redis://127.0.0.1:$PORT/users"
    run 0 "$BG" create "$U" -n 100000 -p 0.01 --seed 7
    has err "created $U: standard (bitmap backend), m = 958506 bits"
    run 2 "$BG" create "$U" -n 100000 -p 0.01
    has err "already exists (use --force"
    # a key under the name that is not recognisably a filter's: --force
    # leaves it alone and says so, instead of suggesting --force again
    run 0 redis-cli -p "$PORT" hset '{foreign}:meta' owner someone-else
    run 2 "$BG" create "redis://127.0.0.1:$PORT/foreign" -n 100 -p 0.01 --force
    has err "keys under this name exist but are not recognisably a filter's"
    hasnt err "use --force"
    eq "$(redis-cli -p "$PORT" hget '{foreign}:meta' owner)" someone-else "the foreign hash"
    run 0 "$BG" create "$U" -n 100000 -p 0.01 --seed 7 --force --json
    json_ok out
    eq "$(jget out backend)" bitmap "backend"
    eq "$(jget out bits)" 958506 "bits"
    eq "$(jget out hashes)" 7 "hashes"
    eq "$(jget out seed)" 7 "seed"

    # keys from arguments and from stdin (more than one batch)
    run 0 "$BG" add "$U" alice bob
    has err "2 keys read, 2 new; 2 items"
    keys 1 5000 | run 0 "$BG" add --json "$U"
    json_ok out
    eq "$(jget out keys)" 5000 "keys read"
    eq "$(jget out new)" 5000 "new keys"
    eq "$(jget out items)" 5002 "items"
    eq "$(jget out url)" "$U" "url"
    # NUL-separated keys, a key with a newline in it
    printf 'x\ny\0z\0' | run 0 "$BG" add -0 -q "$U"

    run 0 "$BG" check "$U" alice bob
    eq "$(cat out)" "$(printf 'alice\tmaybe\nbob\tmaybe')" "check output"
    run 1 "$BG" check "$U" alice carol-is-not-there
    has out "carol-is-not-there	no"
    keys 1 5000 | run 0 "$BG" check -c "$U"
    eq "$(cat out)" "$(printf 'keys\t5000\nmaybe\t5000\nno\t0')" "every added key"
    printf 'x\ny\0z\0' | run 0 "$BG" check -0 -q "$U"
    # absent keys: a few false positives at most (p = 0.01, 5002 of 100000 keys)
    keys 1 5000 absent | run 1 "$BG" check -c --absent "$U"
    [ "$(cat out)" -ge 4950 ] || fail "too many false positives: $(cat out) of 5000 absent"
    run 1 "$BG" check --json "$U" alice nobody
    json_ok out
    eq "$(jq -c '.results' out)" '[{"key":"alice","maybe":true},{"key":"nobody","maybe":false}]' \
        "json results"
    run 0 "$BG" check -q "$U" alice
    run 1 "$BG" check -q "$U" nobody
    # parameters together; the default port is not this one
    run 0 "$BG" check -q "$U?backend=bitmap&timeout=5000" alice
    run 0 "$BG" check -q "redis://localhost:$PORT/users?timeout=5000" alice

    run 0 "$BG" info "$U"
    has out "url:               $U"
    has out "backend:           bitmap"
    has out "bits (m):          958506"
    has out "items:             5004"
    has out "generation:"
    run 0 "$BG" info --json "$U"
    json_ok out
    eq "$(jget out items)" 5004 "items"
    eq "$(jget out capacity)" 100000 "capacity"
    [ "$(jget out bits_set)" -gt 0 ] || fail "no bits set"

    # -m/-k sizing; options that do not apply
    run 0 "$BG" create "redis://127.0.0.1:$PORT/mk" -m 8192 -k 3 --json -q
    eq "$(jget out bits)" 8192 "bits"
    run 2 "$BG" create "redis://127.0.0.1:$PORT/v" -n 100 -p 0.01 --variant blocked
    has err "a bitmap remote filter is a standard filter"
    run 2 "$BG" create "redis://127.0.0.1:$PORT/v" -n 100 -p 0.01 --expansion 2
    has err "apply to ?backend=module only"
    run 2 "$BG" create "redis://127.0.0.1:$PORT/v" -n 100
    has err "give two of"
    run 2 "$BG" create "redis://127.0.0.1:$PORT/v" -m 1e11 -k 3
    has err "the most a bitmap filter has"

    # missing filter; remove; merge
    run 2 "$BG" check "redis://127.0.0.1:$PORT/nope" a
    has err "redis://127.0.0.1:$PORT/nope: cannot open: no such filter"
    run 2 "$BG" add "redis://127.0.0.1:$PORT/nope" a
    has err "no such filter"
    run 2 "$BG" info "redis://127.0.0.1:$PORT/nope"
    has err "no such filter"
    run 2 "$BG" remove "$U" alice
    has err "remote filters cannot remove keys"
    run 0 "$BG" check -q "$U" alice
    run 0 "$BG" create a.bgf -n 100 -p 0.01 -q
    run 2 "$BG" merge out.bgf a.bgf "$U"
    has err "merge and intersect work on files only"

    # re-created under a handle? A new create with --force: the old keys are gone
    run 0 "$BG" create "$U" -n 1000 -p 0.01 --force -q
    run 1 "$BG" check -q "$U" alice
}

# Keys added by other processes, two of them at once, are all seen.
case_shared() {
    start_redis
    local U="redis://127.0.0.1:$PORT/shared"
    run 0 "$BG" create "$U" -n 100000 -p 0.001 -q
    keys 1 20000 a >a.txt
    keys 1 20000 b >b.txt
    "$BG" add -q "$U" <a.txt &
    local p1=$!
    "$BG" add -q "$U" <b.txt &
    local p2=$!
    wait $p1 || fail "first adder failed"
    wait $p2 || fail "second adder failed"
    cat a.txt b.txt | run 0 "$BG" check -c "$U"
    eq "$(cat out)" "$(printf 'keys\t40000\nmaybe\t40000\nno\t0')" "keys of both adders"
    run 0 "$BG" info --json "$U"
    eq "$(jget out items)" 40000 "items counted atomically"
}

# A port in 22000-22999 where nothing listens.
dead_port() {
    local p
    for _ in $(seq 100); do
        p=$((22000 + RANDOM % 1000))
        (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
    fail "no unused port in 22000-22999"
}

# A cluster of one master that holds every slot, on PORT.
start_one_master_cluster() {
    command -v redis-cli >/dev/null || fail "redis-cli not found (package redis-tools)"
    start_redis --cluster-enabled yes
    redis-cli -p "$PORT" CLUSTER ADDSLOTSRANGE 0 16383 >/dev/null || fail "CLUSTER ADDSLOTSRANGE"
    wait_until "cluster_state:ok" cluster_ok
}
cluster_ok() { redis-cli -p "$PORT" CLUSTER INFO | grep -q cluster_state:ok; }

# redis+cluster:// with more seed nodes: the first is down, the next ones
# are tried (a one-master cluster that holds every slot).
case_cluster_seeds() {
    start_one_master_cluster
    local dead dead2
    dead=$(dead_port)
    dead2=$(dead_port)
    while [ "$dead2" = "$dead" ]; do dead2=$(dead_port); done # two seeds, not one
    local U="redis+cluster://127.0.0.1:$dead,[::1]:$dead2,127.0.0.1:$PORT/seeded"
    run 0 "$BG" create "$U?shards=4" -n 10000 -p 0.01 -q
    keys 1 1000 a >a.txt
    run 0 "$BG" add -q "$U" <a.txt
    run 0 "$BG" check -c "$U" <a.txt
    eq "$(cat out)" "$(printf 'keys\t1000\nmaybe\t1000\nno\t0')" "keys through the third seed"
    run 2 "$BG" info "redis+cluster://127.0.0.1:$dead/seeded"
    has err "cannot connect"
    run 2 "$BG" info "redis+cluster://127.0.0.1:$dead,localhost:$dead2/seeded"
    has err "no node of the cluster answers (2 tried"
}

# ?shards=S: one logical filter over S sub-filters (on a plain server here;
# tests/integration/remote/test_cluster.c runs them on a cluster).
case_sharded() {
    start_redis
    local U="redis://127.0.0.1:$PORT/sharded"
    run 0 "$BG" create "$U?shards=4" -n 100000 -p 0.01 -q
    keys 1 20000 a >a.txt
    run 0 "$BG" add -q "$U" <a.txt
    run 0 "$BG" check -c "$U" <a.txt
    eq "$(cat out)" "$(printf 'keys\t20000\nmaybe\t20000\nno\t0')" "keys in a sharded filter"
    run 0 "$BG" info --json "$U"
    eq "$(jget out items)" 20000 "items summed over the shards"
    eq "$(jget out shards)" 4 "shards in --json"
    run 0 "$BG" info "$U"
    has out "shards:            4 (sharded:s0 .. sharded:s3"
    hasnt out "generation:"
    run 0 redis-cli -p "$PORT" exists '{sharded:s0}:meta' '{sharded:s3}:meta'
    eq "$(cat out)" 2 "shards 0 and 3 exist"
    # push replaces only an unsharded filter, and says so (it has no --force)
    run 0 "$BG" create one.bgf -n 1000 -p 0.01 --variant standard -q
    run 2 "$BG" push one.bgf "$U"
    has err "a sharded filter (or shards of one) has that name"
    hasnt err "use --force"
    run 0 "$BG" check -c "$U" <a.txt
    eq "$(sed -n 2p out)" "$(printf 'maybe\t20000')" "the sharded filter after a refused push"

    # shards without their count (what a failed sharded create or publish
    # leaves): nothing opens them, create refuses them, and create --force
    # drops them all, whatever the count it asks for
    run 0 redis-cli -p "$PORT" del '{sharded}:shards'
    run 2 "$BG" info "$U"
    has err "no such filter"
    run 2 "$BG" create "$U?shards=2" -n 1000 -p 0.01 -q
    has err "already exists (use --force"
    run 0 "$BG" create "$U?shards=2" -n 1000 -p 0.01 --force -q
    run 0 redis-cli -p "$PORT" exists '{sharded:s0}:meta' '{sharded:s1}:meta' \
        '{sharded:s2}:meta' '{sharded:s3}:meta'
    eq "$(cat out)" 2 "shards after create --force over leftovers"
    run 0 "$BG" info --json "$U"
    eq "$(jget out shards)" 2 "shards of the new filter"
    eq "$(jget out items)" 0 "items of the new filter"
    run 0 redis-cli -p "$PORT" eval "return #redis.call('keys', '{sharded:s[23]}*')" 0
    eq "$(cat out)" 0 "keys left of shards 2 and 3"

    # a sharded filter that lost a shard (evicted), and a drop that failed
    # part-way (count and shard 0 gone): neither opens, and create --force
    # drops every key that is left, past the gap, and creates it again
    local del_lua="for _, k in ipairs(redis.call('keys', ARGV[1])) do redis.call('del', k) end"
    run 0 "$BG" create "$U?shards=4" -n 1000 -p 0.01 -q --force
    run 0 redis-cli -p "$PORT" eval "$del_lua" 0 '{sharded:s2}*'
    run 2 "$BG" info "$U"
    has err "no such filter"
    run 0 "$BG" create "$U?shards=4" -n 1000 -p 0.01 -q --force
    run 0 "$BG" add -q "$U" a-1
    run 0 redis-cli -p "$PORT" eval "$del_lua" 0 '{sharded}:shards'
    run 0 redis-cli -p "$PORT" eval "$del_lua" 0 '{sharded:s0}*'
    run 2 "$BG" create "$U?shards=2" -n 1000 -p 0.01 -q
    has err "already exists (use --force"
    run 0 "$BG" create "$U?shards=2" -n 1000 -p 0.01 -q --force
    run 0 redis-cli -p "$PORT" eval "return #redis.call('keys', '{sharded:s[23]}*')" 0
    eq "$(cat out)" 0 "shards 2 and 3 left after create --force past a gap"
    run 0 "$BG" info --json "$U"
    eq "$(jget out shards)" 2 "shards of the filter made in their place"
    eq "$(jq 'has("generation")' out)" false "a sharded filter's generation in info --json"
    run 1 "$BG" check -q "$U" a-1
    # a damaged or foreign meta hash is described as Redis data, not a file
    local D="redis://127.0.0.1:$PORT/dmg"
    run 0 "$BG" create -q "$D" -n 100 -p 0.01
    run 0 redis-cli -p "$PORT" hset '{dmg}:meta' format 2
    run 2 "$BG" check "$D" a
    has err "the filter in Redis was made by another version of bloomgate: {dmg}:meta: format 2"
    hasnt err "file"
    run 0 redis-cli -p "$PORT" hset '{dmg}:meta' format 1 hashes 0
    run 2 "$BG" check "$D" a
    has err "the filter's data in Redis is damaged: {dmg}:meta"
    hasnt err "file"
    run 0 "$BG" create --json -q "$U?shards=2" -n 1000 -p 0.01 --force
    json_ok out
    eq "$(jget out shards)" 2 "create --json: shards"
    eq "$(jq 'has("generation")' out)" false "a sharded filter's generation in create --json"
    # an add whose round trip fails at one shard: the others may have taken
    # their parts, and the message says so (not "nothing was added")
    run 0 "$BG" create "$U?shards=4" -n 10000 -p 0.01 -q --force
    run 0 redis-cli -p "$PORT" eval "$del_lua" 0 '{sharded:s2}:bits:*'
    keys 1 100 | run 2 "$BG" add "$U"
    has err "no round trip was added whole (the failed round trip may have been in part"
    hasnt err "nothing was added"
}

case_auth() {
    start_redis --requirepass 'p@ss:w/rd%'
    local good='redis://:p%40ss%3Aw%2Frd%25@127.0.0.1:'$PORT'/secret'
    run 0 "$BG" create "$good" -n 1000 -p 0.01
    has err "created redis://***@127.0.0.1:$PORT/secret"
    hasnt err "p@ss"
    run 0 "$BG" add -q "$good" alice
    run 0 "$BG" check -q "$good" alice
    run 0 "$BG" info "$good"
    has out "url:               redis://***@127.0.0.1:$PORT/secret"
    hasnt out "p%40ss"
    # the default user by name
    run 0 "$BG" check -q "redis://default:p%40ss%3Aw%2Frd%25@127.0.0.1:$PORT/secret" alice
    run 2 "$BG" check "redis://:wrong@127.0.0.1:$PORT/secret" alice
    has err "cannot connect: Redis replied an error: WRONGPASS"
    hasnt err "wrong@"
    # (NOAUTH, or for a long command "Protocol error: unauthenticated ...")
    run 2 "$BG" check "redis://127.0.0.1:$PORT/secret" alice
    has err "the server wants a password"
}

# A server that is not there, and one that does not answer: exit 2 within
# the timeout, never a hang. The times are compared with a longer timeout's,
# not with a fixed bound: a loaded machine makes every run slower, and the
# gap between two timeouts stays.
case_unreachable() {
    start_redis
    local port=$PORT t0 t1 short short_add long
    run 0 "$BG" create "redis://127.0.0.1:$port/u" -n 1000 -p 0.01 -q
    # frozen: the connection is accepted by the kernel, no reply comes
    kill -STOP "$RPID"
    # The short timeouts' best of three: a machine busy with other work may
    # stall one run by seconds, which says nothing about the timeout.
    local try
    short=999999 short_add=999999
    for try in 1 2 3; do
        t0=$(now_ms)
        run 2 "$BG" check "redis://127.0.0.1:$port/u?timeout=300" alice
        t1=$(now_ms)
        has err "cannot reach Redis (connection failed, broke or timed out)"
        [ $((t1 - t0)) -lt "$short" ] && short=$((t1 - t0))
        t0=$(now_ms)
        echo alice | run 2 "$BG" add "redis://127.0.0.1:$port/u?timeout=300"
        t1=$(now_ms)
        [ $((t1 - t0)) -lt "$short_add" ] && short_add=$((t1 - t0))
        [ "$short" -lt 1000 ] && [ "$short_add" -lt 1000 ] && break
    done
    t0=$(now_ms)
    run 2 "$BG" check "redis://127.0.0.1:$port/u?timeout=5000" alice
    t1=$(now_ms)
    long=$((t1 - t0))
    has err "cannot reach Redis (connection failed, broke or timed out)"
    [ "$long" -ge 5000 ] || fail "gave up after $long ms with timeout=5000"
    [ $((short + 3000)) -le "$long" ] ||
        fail "took $short ms with timeout=300, $long ms with timeout=5000"
    [ $((short_add + 3000)) -le "$long" ] ||
        fail "add took $short_add ms with timeout=300, check $long ms with timeout=5000"
    kill -CONT "$RPID"
    # gone: connection refused at once, not after the timeout
    kill -KILL "$RPID"
    wait "$RPID" 2>/dev/null || true
    t0=$(now_ms)
    run 2 "$BG" info "redis://127.0.0.1:$port/u?timeout=30000"
    t1=$(now_ms)
    has err "redis://127.0.0.1:$port/u?timeout=30000: cannot connect: cannot reach Redis"
    has err "Connection refused"
    [ $((t1 - t0)) -lt 15000 ] || fail "refused connection took $((t1 - t0)) ms (timeout=30000)"
    run 2 "$BG" create "redis://127.0.0.1:$port/u" -n 10 -p 0.1
    run 2 "$BG" add "redis://127.0.0.1:$port/u" a
}

case_module() {
    [ -n "${BLOOMGATE_MODULE:-}" ] || skip "BLOOMGATE_MODULE is not set"
    start_redis --loadmodule "$BLOOMGATE_MODULE"
    local U="redis://127.0.0.1:$PORT/mod?backend=module"
    run 0 "$BG" create "$U" -n 10000 -p 0.01 --json
    json_ok out
    eq "$(jget out backend)" module "backend"
    run 2 "$BG" create "$U" -n 10000 -p 0.01
    has err "already exists"
    run 2 "$BG" create "redis://127.0.0.1:$PORT/m2?backend=module" -m 1000 -k 3
    has err "sized by -n and -p only"
    # BF.RESERVE has no schedule or mixed-stack argument, nor has a bitmap
    local opt
    for opt in "--first-share 0.5" "--blocked-from 2"; do
        # shellcheck disable=SC2086
        run 2 "$BG" create "redis://127.0.0.1:$PORT/m2?backend=module" -n 100 -p 0.01 $opt
        has err "--first-share, --blocked-from and --max-bytes do not apply to a remote filter"
        # shellcheck disable=SC2086
        run 2 "$BG" create "redis://127.0.0.1:$PORT/m2" -n 100 -p 0.01 $opt
        has err "do not apply to a remote filter"
    done
    # the module's own stacks (LAYERS auto, the default: layer 0 at p / 2,
    # tightening 0.9, blocked from layer 1 at this p) come back whole
    local MX="redis://127.0.0.1:$PORT/mixed?backend=module"
    run 0 "$BG" create -q "$MX" -n 100 -p 0.01
    keys 1 3000 mx | run 0 "$BG" add -q "$MX"
    run 0 "$BG" pull -q "$MX" mixed.bgf
    run 0 "$BG" info --json mixed.bgf
    json_ok out
    eq "$(jq -c '[.first_share, .blocked_from, .tightening, .layers[0].variant]' out)" \
        '[0.5,1,0.9,"standard"]' "the module's stack: schedule"
    [ "$(jq .layer_count out)" -ge 3 ] || fail "the module's stack did not grow"
    eq "$(jq -c '[.layers[1:][].variant] | unique' out)" '["blocked"]' "blocked from layer 1"
    run 0 "$BG" info mixed.bgf
    has out "first share:       0.5 (layer 0 at p x 0.5, layer i >= 1 at p x 0.05 x 0.9^(i-1))"
    has out "blocked from:      layer 1 (layers 1 and up are blocked, those below standard)"
    keys 1 6000 mx | "$BG" check "$MX" >want.txt || true
    keys 1 6000 mx | "$BG" check mixed.bgf >got.txt || true
    cmp -s want.txt got.txt || fail "remote and pulled answers differ"
    # ... and one made here goes up and comes back the same bytes
    run 0 "$BG" create -q own.bgf -n 100 -p 0.01 --variant scalable --tightening 0.9 \
        --first-share 0.3 --blocked-from 2 --max-bytes 536870912
    keys 1 3000 own | run 0 "$BG" add -q own.bgf
    run 0 "$BG" push -q own.bgf "redis://127.0.0.1:$PORT/own?backend=module"
    run 0 "$BG" pull -q "redis://127.0.0.1:$PORT/own?backend=module" own-back.bgf
    cmp -s own.bgf own-back.bgf || fail "a pushed mixed stack came back different"
    keys 1 3000 | run 0 "$BG" add "$U"
    has err "3000 keys read, 3000 new"
    keys 1 3000 | run 0 "$BG" check -c "$U"
    eq "$(cat out)" "$(printf 'keys\t3000\nmaybe\t3000\nno\t0')" "every added key"
    run 1 "$BG" check -q "$U" not-there
    run 0 "$BG" info --json "$U"
    json_ok out
    eq "$(jget out backend)" module "backend"
    eq "$(jget out items)" 3000 "items"
    run 0 "$BG" create "$U" -n 100 -p 0.01 --force -q
    run 1 "$BG" check -q "$U" key-1
    # the other backend's filter under that name: said, with what to write
    run 2 "$BG" info "redis://127.0.0.1:$PORT/mod"
    has err "mod: the key is a module filter: add ?backend=module to the URL"
    run 0 redis-cli -p "$PORT" BF.ADD rbkey x
    run 2 "$BG" check "redis://127.0.0.1:$PORT/rbkey" x
    has err "the key is a module filter"
    run 0 "$BG" create -q "redis://127.0.0.1:$PORT/plain" -n 100 -p 0.01
    run 2 "$BG" info "redis://127.0.0.1:$PORT/plain?backend=module"
    has err "plain?backend=module: a bitmap filter has that name: leave out ?backend=module"
    run 0 "$BG" create -q "redis://127.0.0.1:$PORT/split?shards=2" -n 100 -p 0.01
    run 2 "$BG" add "redis://127.0.0.1:$PORT/split?backend=module" a
    has err "a bitmap filter has that name"
    run 2 "$BG" info "redis://127.0.0.1:$PORT/none?backend=module"
    hasnt err "has that name"
    run 2 "$BG" info "redis://127.0.0.1:$PORT/none"
    hasnt err "module filter"
    # a non-scaling filter that fills up mid-batch: the server's own error,
    # and the keys before it were added
    local NS="redis://127.0.0.1:$PORT/ns?backend=module"
    run 0 "$BG" create -q "$NS" -n 100 -p 0.01 --nonscaling
    keys 1 150 | run 2 "$BG" add "$NS"
    has err "non scaling filter is full"
    hasnt err "unexpected reply"
    has err "the failed round trip may have been in part"
    run 0 "$BG" info --json "$NS"
    eq "$(jget out items)" 100 "items of the full filter"
    # round trips before the failing one, in the same read window of keys,
    # are counted: 1000 of 4000 go in, the second round trip fills it up
    # (from a file: a pipe may deliver fewer keys per window)
    run 0 "$BG" create -q "$NS" -n 1500 -p 0.01 --nonscaling --force
    keys 1 4000 >ns-keys.txt
    run 2 "$BG" add "$NS" <ns-keys.txt
    has err "the first 1000 keys were added, the rest were not (the failed round trip may"
}

# push FILE URL, pull URL FILE.
case_pushpull() {
    start_redis
    local U="redis://127.0.0.1:$PORT/pp"
    run 0 "$BG" create local.bgf -n 10000 -p 0.01 --variant standard --seed 3 -q
    keys 1 2000 | run 0 "$BG" add -q local.bgf
    # push creates the remote filter
    run 0 "$BG" push --json local.bgf "$U"
    json_ok out
    eq "$(jget out items)" 2000 "items pushed"
    local g1
    g1=$(jget out generation)
    keys 1 2000 | run 0 "$BG" check -c "$U"
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "pushed keys"
    # the remote answers as the file does, key for key
    keys 1 4000 x | "$BG" check local.bgf >want.txt || true
    keys 1 4000 x | "$BG" check "$U" >got.txt || true
    cmp -s want.txt got.txt || fail "remote and local answers differ"
    # add remotely, pull, and the file has everything
    run 0 "$BG" add -q "$U" added-remotely
    run 0 "$BG" pull --json "$U" pulled.bgf
    json_ok out
    eq "$(jget out items)" 2001 "items pulled"
    run 0 "$BG" check -q pulled.bgf added-remotely key-1 key-2000
    run 0 "$BG" info --json pulled.bgf
    eq "$(jget out variant)" standard "pulled variant"
    eq "$(jget out seed)" 3 "pulled seed"
    # pull never replaces a file without --force
    run 2 "$BG" pull "$U" pulled.bgf
    has err "already exists (use --force"
    run 0 "$BG" pull -f -q "$U" pulled.bgf
    # ... and never replaces a directory: the message does not suggest --force
    mkdir pulled.dir
    run 2 "$BG" pull "$U" pulled.dir
    has err "pulled.dir: is a directory: it is never replaced, not even with --force"
    [ -d pulled.dir ] || fail "pull replaced a directory"
    # a second push swaps in a new generation; readers see only the new keys
    run 0 "$BG" create other.bgf -n 10000 -p 0.01 --variant standard --seed 3 -q
    run 0 "$BG" add -q other.bgf only-in-other
    run 0 "$BG" push --json other.bgf "$U"
    [ "$(jget out generation)" != "$g1" ] || fail "push kept generation $g1"
    run 0 "$BG" check -q "$U" only-in-other
    run 1 "$BG" check -q "$U" added-remotely
    # what cannot be pushed or pulled
    run 0 "$BG" create blocked.bgf -n 100 -p 0.01 -q
    run 2 "$BG" push blocked.bgf "$U"
    has err "only a standard one can be pushed"
    run 2 "$BG" push local.bgf "redis://127.0.0.1:$PORT/pp?backend=module"
    has err "only a scalable one can be pushed to the module backend"
    run 2 "$BG" pull "redis://127.0.0.1:$PORT/nope" nope.bgf
    has err "no such filter"
    [ ! -e nope.bgf ] || fail "failed pull wrote nope.bgf"
    run 2 "$BG" push missing.bgf "$U"
    has err "missing.bgf"
}

# push and pull with the module: a scalable file goes up whole (every
# layer), answers as the file does, and comes back byte for byte.
case_modulepushpull() {
    [ -n "${BLOOMGATE_MODULE:-}" ] || skip "BLOOMGATE_MODULE is not set"
    start_redis --loadmodule "$BLOOMGATE_MODULE"
    local U="redis://127.0.0.1:$PORT/ev?backend=module"
    run 0 "$BG" create ev.bgf -n 1000 -p 0.01 --variant scalable --max-bytes 536870912 -q
    keys 1 5000 | run 0 "$BG" add -q ev.bgf
    run 0 "$BG" info --json ev.bgf
    local layers
    layers=$(jget out layer_count)
    [ "$layers" -ge 3 ] || fail "ev.bgf has $layers layers, wanted 3 or more"
    run 0 "$BG" push --json ev.bgf "$U"
    json_ok out
    eq "$(jget out backend)" module "backend"
    eq "$(jget out layers)" "$layers" "layers pushed"
    keys 1 9000 x | "$BG" check ev.bgf >want.txt || true
    keys 1 9000 x | "$BG" check "$U" >got.txt || true
    cmp -s want.txt got.txt || fail "remote and local answers differ"
    run 0 "$BG" pull "$U" same.bgf
    has err "scalable, $layers layers"
    cmp -s ev.bgf same.bgf || fail "pushed and pulled files differ"
    # add remotely; the pulled file has it, and a pull never replaces a file
    # without --force
    run 0 "$BG" add -q "$U" added-remotely
    run 2 "$BG" pull "$U" same.bgf
    has err "already exists (use --force"
    run 0 "$BG" pull -f --json "$U" same.bgf
    json_ok out
    run 0 "$BG" check -q same.bgf added-remotely key-1 key-5000
    # a second push replaces the filter: the remote has only the new keys
    run 0 "$BG" create other.bgf -n 1000 -p 0.01 --variant scalable --max-bytes 536870912 -q
    run 0 "$BG" add -q other.bgf only-in-other
    run 0 "$BG" push -q other.bgf "$U"
    run 0 "$BG" check -q "$U" only-in-other
    run 1 "$BG" check -q "$U" added-remotely
    # refused: a file that may grow past the server's MAX_BYTES (the
    # library's default cap is 64 GiB), with what to do; nothing changes
    run 0 "$BG" create big.bgf -n 1000 -p 0.01 --variant scalable -q
    run 2 "$BG" push big.bgf "$U"
    has err "MAX_BYTES"
    has err "recreate the file with --max-bytes"
    run 0 "$BG" check -q "$U" only-in-other
    run 2 "$BG" pull "redis://127.0.0.1:$PORT/nope?backend=module" nope.bgf
    has err "no such filter"
    [ ! -e nope.bgf ] || fail "failed pull wrote nope.bgf"
}

# The filter is replaced (other parameters) while a command is reading keys:
# the next batch is refused with a clear message, nothing is written to the
# new filter, and the earlier batches stay added.
case_stale() {
    start_redis
    local U="redis://127.0.0.1:$PORT/st"
    run 0 "$BG" create "$U" -n 1000 -p 0.01 -q
    mkfifo keys.fifo
    "$BG" add "$U" <keys.fifo >out 2>err &
    local p=$!
    exec 3>keys.fifo
    keys 1 10 first >&3
    # the first batch goes out on its own, while the add waits for more
    wait_until "the first 10 keys in Redis" items_are "$U" 10
    kill -0 $p 2>/dev/null || fail "the add ended before the re-creation"
    "$BG" create "$U" -n 5000 -p 0.001 --force -q || fail "re-create failed"
    keys 1 10 second >&3
    exec 3>&-
    local rc=0
    wait $p || rc=$?
    eq "$rc" 2 "exit status of add across a re-creation"
    has err "the filter was re-created or replaced meanwhile"
    has err "the first 10 keys were added, the rest were not"
    run 1 "$BG" check -q "$U" second-1
    run 0 "$BG" info --json "$U"
    eq "$(jget out items)" 0 "items in the new filter"
}

# items_are URL N: the filter at URL holds N items (info --json).
items_are() { [ "$("$BG" info --json "$1" 2>/dev/null | jq -r .items)" = "$2" ]; }

# Built with -DBG_BUILD_REMOTE=OFF: URLs are recognised and refused.
case_noremote() {
    run 2 "$BG" check redis://127.0.0.1:22001/x a
    has err "built without remote support"
    run 2 "$BG" create redis://127.0.0.1:22001/x -n 10 -p 0.1
    has err "built without remote support"
    run 2 "$BG" info 'redis+cluster://h/x?shards=3'
    has err "built without remote support"
    run 2 "$BG" rebuild redis://127.0.0.1:22001/x a
    has err "built without remote support"
}

# pull from a key of RedisBloom's type (MBbloom--): bloomgate.so with COMPAT
# redisbloom makes one on BF.RESERVE, as RedisBloom itself would, and pull
# copies it through BF.SCANDUMP into a redisbloom file, the same bytes as a
# file built here by the same adds; its links are RedisBloom's own
# (tests/fixtures/redisbloom: fx:scale2, made by the same commands).
case_rbpull() {
    [ -n "${BLOOMGATE_MODULE:-}" ] || skip "BLOOMGATE_MODULE is not set"
    start_redis --loadmodule "$BLOOMGATE_MODULE" COMPAT redisbloom
    local U="redis://127.0.0.1:$PORT/fx:scale2?backend=module"
    run 0 "$BG" create -q "$U" -n 1000 -p 0.01
    seq 0 19999 | sed 's/^/fx:scale2:/' >items
    run 0 "$BG" add -q "$U" <items
    run 0 "$BG" pull --json "$U" pulled.bgf
    json_ok out
    eq "$(jget out backend)" redisbloom "backend"
    eq "$(jget out links)" 5 "links"
    eq "$(jget out items)" 19814 "items (BF.CARD)"
    has err "redisbloom, 5 links"
    run 0 "$BG" create -q local.bgf -n 1000 -p 0.01 --variant redisbloom
    run 0 "$BG" add -q local.bgf <items
    cmp -s pulled.bgf local.bgf || fail "the pulled file differs from the one built here"
    dd if=pulled.bgf of=link0 bs=1 skip=192 count=1384 status=none
    cmp -s link0 "$HERE/../fixtures/redisbloom/keys/scale2/scandump/001.bin" ||
        fail "link 0 differs from RedisBloom's"
    run 0 "$BG" check pulled.bgf absent:scale2:55
    run 1 "$BG" check pulled.bgf absent:scale2:0
    # Not over an existing file without --force; a missing key is an error.
    run 2 "$BG" pull "$U" pulled.bgf
    has err "already exists"
    run 2 "$BG" pull "redis://127.0.0.1:$PORT/nosuchkey?backend=module" none.bgf
    [ ! -e none.bgf ] || fail "a failed pull made a file"
}
