# SPDX-License-Identifier: BSD-3-Clause
# Cases of cli_remote_test.sh: rebuild URL, on every backend, with keys from
# arguments, standard input or --command; failures, signals, and readers
# during the swap.
# Sourced by cli_remote_test.sh, which defines the assertions and helpers
# they use (start_redis, wait_until, ...) and runs one case_<name> per ctest
# test (cli.remote.<name>).

# wait_pending REDIS-KEY [FIELD]: until a rebuild is pending (the bitmap
# meta hash's field `next`, or the module's marker key).
wait_pending() { wait_until "a pending rebuild ($*)" pending "$@"; }
pending() {
    if [ $# -eq 2 ]; then
        [ "$(redis-cli -p "$PORT" hexists "$1" "$2")" = 1 ]
    else
        [ "$(redis-cli -p "$PORT" exists "$1")" = 1 ]
    fi
}

# rebuild URL on an unsharded bitmap filter: the old keys go, the new ones
# are found, a new generation; resized with -n/-p; keys as arguments, -0.
case_rebuild() {
    command -v redis-cli >/dev/null || fail "redis-cli not found (package redis-tools)"
    start_redis
    local U="redis://127.0.0.1:$PORT/rb"
    run 0 "$BG" create "$U" -n 10000 -p 0.01 --seed 11 -q
    keys 1 2000 a >a.txt
    keys 1 2000 b >b.txt
    run 0 "$BG" add -q "$U" <a.txt
    run 0 "$BG" info --json "$U"
    local g1 bits1
    g1=$(jget out generation)
    bits1=$(jget out bits)

    run 0 "$BG" rebuild "$U" <b.txt
    has err "rebuilt $U: 2000 keys read; now "
    has err "(generation "
    run 0 "$BG" check -c "$U" <b.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "every new key"
    # the old keys are gone but for false positives (p = 0.01: allow 2%)
    run 1 "$BG" check -c --absent "$U" <a.txt
    [ "$(cat out)" -ge 1960 ] || fail "only $(cat out) of 2000 old keys gone"
    run 0 "$BG" info --json "$U"
    [ "$(jget out generation)" != "$g1" ] || fail "rebuild kept generation $g1"
    eq "$(jget out bits)" "$bits1" "bits kept"
    eq "$(jget out seed)" 11 "seed kept"
    [ "$(jget out items)" -ge 1990 ] || fail "items $(jget out items) after 2000 keys"
    eq "$(redis-cli -p "$PORT" hexists '{rb}:meta' next)" 0 "nothing pending after the commit"

    # resized: m changes in info, the seed stays, the keys are all there
    run 0 "$BG" rebuild --json -n 100000 -p 0.001 "$U" <b.txt
    json_ok out
    eq "$(jget out url)" "$U" "url"
    eq "$(jget out keys)" 2000 "keys read"
    eq "$(jget out capacity)" 100000 "capacity"
    local bits2
    bits2=$(jget out bits)
    [ "$bits2" != "$bits1" ] || fail "-n/-p kept m = $bits1"
    run 0 "$BG" info --json "$U"
    eq "$(jget out bits)" "$bits2" "info bits after the resize"
    eq "$(jget out seed)" 11 "seed kept by a resize"
    eq "$(jget out hashes)" 10 "k for p = 0.001"
    run 0 "$BG" check -c "$U" <b.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "keys after the resize"
    run 0 "$BG" rebuild -q -m 8192 -k 3 "$U" b-1
    [ ! -s err ] || fail "-q printed: $(cat err)"
    run 0 "$BG" info --json "$U"
    eq "$(jget out bits)" 8192 "-m"
    eq "$(jget out hashes)" 3 "-k"

    # keys as arguments (after --), and NUL-separated
    run 0 "$BG" rebuild "$U" -- -x y
    has err "2 keys read"
    run 0 "$BG" check -q "$U" -- -x y
    run 1 "$BG" check -q "$U" b-1
    printf 'p\nq\0r\0' | run 0 "$BG" rebuild -0 -q "$U"
    run 0 "$BG" check -q "$U" "$(printf 'p\nq')" r
    run 1 "$BG" check -q "$U" -- -x
}

# A sharded filter on a (one-master) cluster, through redis+cluster://.
case_rebuild_sharded() {
    start_one_master_cluster
    local U="redis+cluster://127.0.0.1:$PORT/users"
    run 0 "$BG" create "$U?shards=4" -n 100000 -p 0.01 -q
    keys 1 20000 a >a.txt
    keys 1 20000 b >b.txt
    run 0 "$BG" add -q "$U" <a.txt
    run 0 "$BG" info --json "$U"
    local bits1
    bits1=$(jget out bits)
    run 0 "$BG" rebuild "$U" <b.txt
    has err "rebuilt $U: 20000 keys read; now "
    run 0 "$BG" check -c "$U" <b.txt
    eq "$(cat out)" "$(printf 'keys\t20000\nmaybe\t20000\nno\t0')" "every new key"
    run 1 "$BG" check -c --absent "$U" <a.txt
    [ "$(cat out)" -ge 19600 ] || fail "only $(cat out) of 20000 old keys gone"
    eq "$(redis-cli -p "$PORT" get '{users}:shards')" 4 "still 4 shards"
    run 0 "$BG" info --json "$U"
    eq "$(jget out bits)" "$bits1" "bits kept"
    # resized: the bits are split over the same 4 shards
    run 0 "$BG" rebuild --json -n 400000 -p 0.01 "$U" <b.txt
    json_ok out
    [ "$(jget out bits)" -gt "$bits1" ] || fail "resize kept $bits1 bits"
    eq "$(jget out capacity)" 400000 "capacity over the shards"
    eq "$(redis-cli -p "$PORT" get '{users}:shards')" 4 "still 4 shards after the resize"
    run 0 "$BG" check -c "$U" <b.txt
    eq "$(cat out)" "$(printf 'keys\t20000\nmaybe\t20000\nno\t0')" "keys after the resize"
    # the seed and the shards are the routing: another -m is fine, the
    # shards are found, not given
    run 0 "$BG" rebuild -q -m 1e6 -k 7 "$U?shards=4" <b.txt
    run 0 "$BG" check -c "$U" <b.txt
    eq "$(cat out)" "$(printf 'keys\t20000\nmaybe\t20000\nno\t0')" "keys after -m/-k"
}

case_rebuild_module() {
    [ -n "${BLOOMGATE_MODULE:-}" ] || skip "BLOOMGATE_MODULE is not set"
    start_redis --loadmodule "$BLOOMGATE_MODULE"
    local U="redis://127.0.0.1:$PORT/ev?backend=module"
    run 0 "$BG" create "$U" -n 1000 -p 0.01 -q
    keys 1 2000 a >a.txt
    keys 1 2000 b >b.txt
    run 0 "$BG" add -q "$U" <a.txt
    # the module does not report the error rate: no shape to keep
    run 2 "$BG" rebuild "$U" <b.txt
    has err "give the new filter's -n (capacity) and -p (error rate)"
    run 2 "$BG" rebuild -n 5000 "$U" <b.txt
    has err "-n (capacity) and -p (error rate)"
    run 2 "$BG" rebuild -n 5000 -p 0.01 -m 100 "$U" <b.txt
    has err "drop -m and -k"
    run 2 "$BG" rebuild -n 5000 -p 0.01 --expansion 2 --nonscaling "$U" <b.txt
    has err "--expansion does not apply"
    run 0 "$BG" check -c "$U" <a.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "unchanged by usage errors"

    run 0 "$BG" rebuild -n 5000 -p 0.01 "$U" <b.txt
    has err "rebuilt $U: 2000 keys read; now 2000 items"
    hasnt err "generation"
    run 0 "$BG" check -c "$U" <b.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "every new key"
    run 1 "$BG" check -c --absent "$U" <a.txt
    [ "$(cat out)" -ge 1960 ] || fail "only $(cat out) of 2000 old keys gone"
    run 0 "$BG" info --json "$U"
    eq "$(jget out capacity)" 5000 "capacity of the rebuilt filter"
    eq "$(jget out layers)" 1 "layers"
    run 0 "$BG" rebuild --json -n 500 -p 0.001 --expansion 4 "$U" <b.txt
    json_ok out
    eq "$(jget out backend)" module "backend"
    eq "$(jget out keys)" 2000 "keys read"
    [ "$(jget out layers)" -ge 2 ] || fail "2000 keys in a filter for 500: $(jget out layers) layers"
    run 0 "$BG" rebuild -q -n 5000 -p 0.01 --nonscaling "$U" <b.txt
    run 0 "$BG" check -c "$U" <b.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "keys after --nonscaling"
    # a rebuild that fails part-way leaves the module's filter as it was
    { keys 1 1500 c; head -c 17000000 /dev/zero | tr '\0' x || true; } | run 2 "$BG" rebuild -n 5000 -p 0.01 "$U"
    has err "the rebuild was cancelled: the filter is as it was"
    run 1 "$BG" check -q "$U" c-1
    run 0 "$BG" check -c "$U" <b.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "keys after a failed rebuild"
    eq "$(redis-cli -p "$PORT" exists '{ev}:rebuild')" 0 "no marker left"
}

# Usage errors, a missing filter, and rebuilds that fail: the old filter
# answers as before, and a new rebuild works afterwards.
case_rebuild_fail() {
    command -v redis-cli >/dev/null || fail "redis-cli not found (package redis-tools)"
    start_redis
    local U="redis://127.0.0.1:$PORT/rf"
    run 0 "$BG" create "$U" -n 10000 -p 0.01 -q
    keys 1 2000 a >a.txt
    run 0 "$BG" add -q "$U" <a.txt
    run 0 "$BG" info --json "$U"
    local g1
    g1=$(jget out generation)

    run 2 "$BG" rebuild "redis://127.0.0.1:$PORT/nope" k
    has err "redis://127.0.0.1:$PORT/nope: cannot open: no such filter (create it first"
    run 2 "$BG" rebuild rf.bgf k
    has err "'rf.bgf' is not a redis:// URL"
    has err "usage: bloomgate rebuild"
    [ ! -e rf.bgf ] || fail "rebuild of a path wrote it"
    run 2 "$BG" rebuild -n 0 "$U" k
    has err "--capacity: '0' is too small"
    run 2 "$BG" rebuild -n 100 -p 1.5 "$U" k
    has err "--error-rate: '1.5' is not between 0 and 1"
    run 2 "$BG" rebuild -n 100 "$U" k
    has err "give two of"
    run 2 "$BG" rebuild --expansion 2 "$U" k
    has err "apply to ?backend=module only"
    run 2 "$BG" rebuild -n 100 -p 0.01 --nonscaling "$U" k
    has err "apply to ?backend=module only"
    run 2 "$BG" rebuild -m 1e11 -k 3 "$U" k
    has err "the most a bitmap filter has"
    run 2 "$BG" rebuild --lease 0 "$U" k
    has err "--lease"
    for l in 1e20 604800001; do # one bound, 7 days, however the number is written
        run 2 "$BG" rebuild --lease "$l" "$U" k
        has err "--lease: '$l' is too large (at most 604800000)"
    done
    run 2 "$BG" rebuild --abort "$U" k
    has err "reads no keys"

    # no keys at all (a source that failed): refused, nothing changes
    run 2 "$BG" rebuild "$U" </dev/null
    has err "no keys were read"
    has err "the rebuild was cancelled: the filter is as it was"
    # a key over the limit after 1500 good ones: cancelled, nothing changes
    { keys 1 1500 b; head -c 17000000 /dev/zero | tr '\0' x || true; } | run 2 "$BG" rebuild "$U"
    has err "key 1501 is longer than 16777216 bytes"
    has err "the rebuild was cancelled: the filter is as it was"
    run 0 "$BG" check -c "$U" <a.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "old keys after failed rebuilds"
    run 1 "$BG" check -q "$U" b-1
    run 0 "$BG" info --json "$U"
    eq "$(jget out generation)" "$g1" "generation after failed rebuilds"
    eq "$(redis-cli -p "$PORT" hexists '{rf}:meta' next)" 0 "nothing left pending"

    # another rebuild is pending (a rebuilder waiting for its source): a
    # second one is refused; --abort cancels the first, whose next batch
    # then fails; the filter never changed
    mkfifo src.fifo
    "$BG" rebuild "$U" <src.fifo >first.out 2>first.err &
    local p=$!
    exec 3>src.fifo
    echo c-1 >&3
    wait_pending '{rf}:meta' next
    run 2 "$BG" rebuild "$U" d-1
    has err "another rebuild is pending"
    has err "it expires with its lease"
    run 0 "$BG" rebuild --abort --json "$U"
    eq "$(jget out cancelled)" true "cancelled"
    run 0 "$BG" rebuild --abort "$U"
    has err "no rebuild was pending"
    echo c-2 >&3
    exec 3>&-
    local rc=0
    wait $p || rc=$?
    eq "$rc" 2 "exit status of the cancelled rebuild"
    has first.err "the rebuild was cancelled meanwhile"
    has first.err "nothing of this rebuild was committed"
    run 0 "$BG" check -c "$U" <a.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "old keys after the abort"
    run 1 "$BG" check -q "$U" c-1

    # a killed rebuilder (SIGKILL: an interrupt cancels it) leaves its
    # rebuild pending (until the lease, or --abort); the filter answers as
    # before meanwhile
    "$BG" rebuild "$U" <src.fifo >/dev/null 2>&1 &
    p=$!
    exec 3>src.fifo
    echo e-1 >&3
    wait_pending '{rf}:meta' next
    kill -KILL $p
    wait $p 2>/dev/null || true
    exec 3>&-
    run 2 "$BG" rebuild "$U" f-1
    has err "another rebuild is pending"
    run 0 "$BG" check -q "$U" a-1 a-2000
    run 0 "$BG" rebuild --abort "$U"
    has err "the pending rebuild was cancelled"

    # and then a rebuild goes through
    run 0 "$BG" rebuild "$U" <a.txt
    has err "2000 keys read"
    run 0 "$BG" check -c "$U" <a.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "keys of the last rebuild"
    run 0 "$BG" info --json "$U"
    [ "$(jget out generation)" != "$g1" ] || fail "the last rebuild kept generation $g1"
}

# alive TEXT: the live processes whose command line contains TEXT; empty
# output if none. Zombies are left out: a killed command's own children are
# reparented to init, which reaps them in its own time.
alive() {
    local list
    list=$(ps -eo stat=,args=)
    grep -v '^Z' <<<"$list" | grep -F -- "$1" || true
}

# gone TEXT: no live process has TEXT in its command line, once a signalled
# one has had its moment to die.
gone() { wait_until "the end of: $(alive "$1")" none_alive "$1"; }
none_alive() { [ -z "$(alive "$1")" ]; }
# running CMD: a live process's whole command line is CMD. The CLI's own
# command line (bloomgate rebuild ... --command "...; CMD") contains CMD
# from its start, before it catches signals: only the command's own
# process, running, says the CLI is reading its output.
running() { ps -eo stat=,args= | grep -v '^Z' | sed 's/^[^ ]* *//' | grep -qxF -- "$1"; }

# reading_stdin PID: the process waits in read(0, ...) (its input is empty).
reading_stdin() { [[ "$(cat "/proc/$1/syscall" 2>/dev/null)" == "0 0x0 "* ]]; }
# client_blocked: a client of the server is blocked (by CLIENT PAUSE).
client_blocked() { redis-cli -p "$PORT" client list | grep -q ' flags=b '; }
# signal_taken PID: no signal is pending for the process (its handler ran),
# or it is gone.
signal_taken() { ! grep -Eq '^(SigPnd|ShdPnd):[[:space:]]*0*[1-9a-f]' "/proc/$1/status" 2>/dev/null; }

# rebuild --command: the keys are the output of a command that the CLI
# starts once the rebuild has begun, and the commit needs its exit status 0.
case_rebuild_command() {
    command -v redis-cli >/dev/null || fail "redis-cli not found (package redis-tools)"
    start_redis
    local U="redis://127.0.0.1:$PORT/rc"
    run 0 "$BG" create "$U" -n 10000 -p 0.01 -q
    keys 1 2000 a >a.txt
    keys 1 2000 b >b.txt
    run 0 "$BG" add -q "$U" <a.txt

    run 0 "$BG" rebuild "$U" --command "seq -f 'b-%.0f' 1 2000"
    has err "rebuilt $U: 2000 keys read; now "
    run 0 "$BG" check -c "$U" <b.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "every new key"
    run 1 "$BG" check -c --absent "$U" <a.txt
    [ "$(cat out)" -ge 1960 ] || fail "only $(cat out) of 2000 old keys gone"
    eq "$(redis-cli -p "$PORT" hexists '{rc}:meta' next)" 0 "nothing pending after the commit"

    # The command runs after begin: the rebuild is pending when it starts,
    # and a key that another client adds then (late-key, which the command
    # does not print) reaches the new filter too. A producer started before
    # begin would have added it to the old filter only, and it would be
    # missing after the commit.
    run 0 "$BG" rebuild "$U" --command "redis-cli -p $PORT hexists '{rc}:meta' next >pending.txt &&
        '$BG' add -q '$U' late-key && seq -f 'a-%.0f' 1 2000"
    has err "2000 keys read"
    eq "$(cat pending.txt)" 1 "a rebuild pending when the command started"
    run 0 "$BG" check -q "$U" late-key
    run 0 "$BG" check -c "$U" <a.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "the command's keys"

    # -0; --json, which does not show the command
    run 0 "$BG" rebuild -0 "$U" --command "printf 'p\nq\0r\0'"
    has err "2 keys read"
    run 0 "$BG" check -q "$U" "$(printf 'p\nq')" r
    run 1 "$BG" check -q "$U" a-1
    run 0 "$BG" rebuild --json "$U" --command "echo secret-word"
    json_ok out
    eq "$(jget out keys)" 1 "keys read"
    hasnt out "secret-word"

    # usage errors: nothing runs, nothing changes
    run 2 "$BG" rebuild "$U" --command "touch ran" k
    has err "the keys are the output of --command: drop the KEYs"
    run 2 "$BG" rebuild --abort "$U" --command "touch ran"
    has err "reads no keys: drop --command"
    run 2 "$BG" rebuild "$U" --command ""
    has err "--command: the command is empty"
    run 2 "$BG" rebuild "$U" --command
    has err "option '--command' needs a value"
    [ ! -e ran ] || fail "a usage error ran the command"
    run 0 "$BG" rebuild --help
    has out "--command CMD"
    run 0 "$BG" check -q "$U" secret-word
}

# A command that fails, and a rebuild that fails while the command runs:
# cancelled, the filter as it was, nothing pending, no process left behind.
case_rebuild_command_fail() {
    command -v redis-cli >/dev/null || fail "redis-cli not found (package redis-tools)"
    start_redis
    local U="redis://127.0.0.1:$PORT/rcf"
    run 0 "$BG" create "$U" -n 10000 -p 0.01 -q
    keys 1 2000 a >a.txt
    keys 1 2000 b >b.txt
    run 0 "$BG" add -q "$U" <a.txt
    run 0 "$BG" info --json "$U"
    local g1
    g1=$(jget out generation)

    # keys, then a failure (psql losing its connection half-way)
    run 2 "$BG" rebuild "$U" --command "seq -f 'b-%.0f' 1 1500; exit 3"
    has err "$U: the command exited with status 3: seq -f 'b-%.0f' 1 1500; exit 3"
    has err "the rebuild was cancelled: the filter is as it was"
    # killed by a signal
    run 2 "$BG" rebuild "$U" --command "seq -f 'b-%.0f' 1 1500; kill -9 \$\$"
    has err "the command was killed by signal 9"
    has err "the rebuild was cancelled: the filter is as it was"
    # no such program: sh says so, and exits 127
    run 2 "$BG" rebuild "$U" --command "no-such-program-xyz"
    has err "no-such-program-xyz: not found"
    has err "the command exited with status 127 (command not found): no-such-program-xyz"
    has err "the rebuild was cancelled: the filter is as it was"
    # status 0 but nothing printed
    run 2 "$BG" rebuild "$U" --command "true"
    has err "no keys were read"
    run 0 "$BG" check -c "$U" <a.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "old keys after failed commands"
    run 1 "$BG" check -c --absent "$U" <b.txt
    [ "$(cat out)" -ge 1960 ] || fail "only $(cat out) of 2000 new-only keys absent"
    run 0 "$BG" info --json "$U"
    eq "$(jget out generation)" "$g1" "generation after failed commands"
    eq "$(redis-cli -p "$PORT" hexists '{rcf}:meta' next)" 0 "nothing left pending"

    # the read fails while the command still runs (a key over the limit
    # from a background job while sh waits for a sleep): the command is
    # stopped, all of it, not only sh
    run 2 "$BG" rebuild "$U" --command "seq 1 1500; { head -c 17000000 /dev/zero | tr '\\0' x; } &
        sleep 61.25"
    has err "rebuild: the command's output: key 1501 is longer than 16777216 bytes"
    has err "the rebuild was cancelled: the filter is as it was"
    gone 'sleep 61.25'
    # ... even one that ignores SIGTERM (SIGKILL follows)
    run 2 "$BG" rebuild "$U" --command "trap '' TERM; seq 1 1500; head -c 17000000 /dev/zero | tr '\\0' x; sleep 62.25"
    has err "the rebuild was cancelled: the filter is as it was"
    gone 'sleep 62.25'
    # a batch that fails (the rebuild cancelled by --abort meanwhile)
    "$BG" rebuild "$U" --command "echo c-1; while [ ! -e go ]; do sleep 0.05; done; echo c-2;
        sleep 63.25" >first.out 2>first.err &
    local p=$! rc=0
    wait_pending '{rcf}:meta' next
    run 0 "$BG" rebuild --abort "$U"
    touch go
    wait $p || rc=$?
    eq "$rc" 2 "exit status of the aborted rebuild"
    has first.err "the rebuild was cancelled meanwhile"
    gone 'sleep 63.25'
    # SIGTERM to the CLI ends the command too, cancels the rebuild, and then
    # ends the CLI (it dies of the signal)
    "$BG" rebuild "$U" --command "echo e-1; sleep 64.25" >/dev/null 2>term.err &
    p=$!
    wait_until "the command to start" running 'sleep 64.25'
    kill -TERM $p
    rc=0
    wait $p || rc=$?
    eq "$rc" 143 "exit status of the CLI after SIGTERM"
    gone 'sleep 64.25'
    has term.err "$U: rebuild: interrupted by signal 15 (Terminated)"
    has term.err "the rebuild was cancelled: the filter is as it was"
    eq "$(redis-cli -p "$PORT" hexists '{rcf}:meta' next)" 0 "nothing pending after SIGTERM"
    # ... also while it reads a pipeline: the CLI alone
    { echo f-1; sleep 65.25; } 2>/dev/null | "$BG" rebuild "$U" >/dev/null 2>term.err &
    p=$!
    wait_pending '{rcf}:meta' next
    kill -TERM $p
    gone "rebuild $U"
    pkill -f 'sleep 65.25' || true # the pipeline's wait is for all of it
    rc=0
    wait $p || rc=$?
    eq "$rc" 143 "exit status of a pipeline's CLI after SIGTERM"
    has term.err "the rebuild was cancelled: the filter is as it was"
    eq "$(redis-cli -p "$PORT" hexists '{rcf}:meta' next)" 0 "nothing pending after SIGTERM"
    # ... and the whole pipeline (as Ctrl-C signals it): the producer's end
    # of output is not taken for a complete source, nothing is committed
    setsid sh -c "{ echo g-1; sleep 66.25; } | '$BG' rebuild '$U' 2>term.err" &
    p=$!
    wait_pending '{rcf}:meta' next
    kill -TERM -- -$p
    wait $p 2>/dev/null || true
    gone "rebuild $U"
    has term.err "the rebuild was cancelled: the filter is as it was"
    eq "$(redis-cli -p "$PORT" hexists '{rcf}:meta' next)" 0 "nothing pending after SIGTERM"
    gone 'sleep 66.25'

    run 0 "$BG" check -c "$U" <a.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "old keys after all that"
    run 1 "$BG" check -q "$U" c-1
    run 0 "$BG" info --json "$U"
    eq "$(jget out generation)" "$g1" "generation after all that"
    # and then a rebuild goes through
    run 0 "$BG" rebuild "$U" --command "cat b.txt"
    has err "2000 keys read"
    run 0 "$BG" check -c "$U" <b.txt
    eq "$(cat out)" "$(printf 'keys\t2000\nmaybe\t2000\nno\t0')" "keys of the last rebuild"

    # a signal during the commit stops nothing: the rebuild is done, and the
    # exit status says so (0). The keys come through a FIFO, one batch of
    # 4096 (CLI_BATCH, so added before the input ends); once the CLI waits
    # for more, Redis pauses writes and the input ends; once the commit
    # waits for the pause (the CLI's client blocked: flags=b in CLIENT
    # LIST), SIGTERM comes, and once the CLI has taken it the pause ends.
    # The URL's timeout lets the commit wait for as long as that takes.
    keys 1 4096 d >d.txt
    run 0 "$BG" info --json "$U"
    local g2
    g2=$(jget out generation)
    mkfifo keys.fifo
    "$BG" rebuild "$U?timeout=60000" <keys.fifo >/dev/null 2>late.err &
    p=$!
    exec 3>keys.fifo
    cat d.txt >&3
    wait_until "the CLI to wait for input" reading_stdin $p
    eq "$(redis-cli -p "$PORT" client pause 60000 write)" OK "client pause"
    exec 3>&-
    wait_until "the commit to wait for the pause" client_blocked
    kill -TERM $p
    wait_until "the CLI to take SIGTERM" signal_taken $p
    eq "$(redis-cli -p "$PORT" client unpause)" OK "client unpause"
    rc=0
    wait $p || rc=$?
    eq "$rc" 0 "exit status of a rebuild signalled during its commit"
    has late.err "$U?timeout=60000: rebuild: signal 15 (Terminated) came after the commit: the rebuild is done"
    has late.err "4096 keys read"
    run 0 "$BG" check -c "$U" <d.txt
    eq "$(cat out)" "$(printf 'keys\t4096\nmaybe\t4096\nno\t0')" "keys of the signalled rebuild"
    run 0 "$BG" info --json "$U"
    [ "$(jget out generation)" != "$g2" ] || fail "the signalled rebuild was not committed"
    eq "$(redis-cli -p "$PORT" hexists '{rcf}:meta' next)" 0 "nothing pending after the commit"
}

# check_rounds: the rounds of checks in checks.txt (2000 lines each).
check_rounds() { echo $(($(wc -l <checks.txt) / 2000)); }
rounds_past() { [ "$(check_rounds)" -ge "$1" ]; }

# Readers during a rebuild of 200000 keys: a key in both the old and the new
# set is never reported absent, before, during or after the swap; a key
# that another client adds during the rebuild is in the new filter.
case_rebuild_live() {
    command -v redis-cli >/dev/null || fail "redis-cli not found (package redis-tools)"
    start_redis
    local U="redis://127.0.0.1:$PORT/live"
    run 0 "$BG" create "$U" -n 400000 -p 0.01 -q
    keys 1 100000 k | run 0 "$BG" add -q "$U"
    keys 50001 150000 k >new1.txt
    keys 150001 250000 k >new2.txt
    keys 50001 52000 k >both.txt

    # the checker: until told to stop, every key of both.txt, over and over
    : >checks.txt
    (
        while [ ! -e stop ]; do
            "$BG" check "$U" <both.txt >>checks.txt 2>>checker.err || echo "exit $?" >>checker.err
        done
    ) &
    local checker=$!
    PIDS+=("$checker")
    # the rebuild, halted half-way until the other client's add is in and
    # a whole round of checks has run during the rebuild (the halt ends by
    # itself after WAIT_S, so that a failed case leaves nothing behind)
    { cat new1.txt; for _ in $(seq $((WAIT_S * 20))); do [ -e added ] && break; sleep 0.05; done
      cat new2.txt; } |
        "$BG" rebuild "$U" >rb.out 2>rb.err &
    local rb=$!
    wait_pending '{live}:meta' next
    run 0 "$BG" add -q "$U" added-meanwhile
    local during
    during=$(check_rounds)
    wait_until "a whole round of checks during the rebuild" rounds_past $((during + 2))
    pending '{live}:meta' next || fail "the rebuild was not pending any more"
    touch added
    local rc=0
    wait $rb || rc=$?
    eq "$rc" 0 "exit status of the rebuild ($(cat rb.err))"
    has rb.err "200000 keys read"
    local after
    after=$(check_rounds)
    wait_until "two rounds of checks after the swap" rounds_past $((after + 2))
    touch stop
    wait "$checker" || true

    [ ! -s checker.err ] || fail "the checker failed: $(head -c 500 checker.err)"
    local rounds
    rounds=$(($(wc -l <checks.txt) / 2000))
    [ "$rounds" -ge 5 ] || fail "only $rounds rounds of checks"
    if grep -q "	no$" checks.txt; then
        fail "a key in both sets was reported absent: $(grep -m3 "	no$" checks.txt | tr '\n' ' ')"
    fi
    eq "$(grep -c "	maybe$" checks.txt)" "$((rounds * 2000))" "every answer maybe"
    run 0 "$BG" check -q "$U" added-meanwhile
    cat new1.txt new2.txt | run 0 "$BG" check -c "$U"
    eq "$(cat out)" "$(printf 'keys\t200000\nmaybe\t200000\nno\t0')" "every new key"
    keys 1 50000 k | run 1 "$BG" check -c --absent "$U"
    [ "$(cat out)" -ge 49000 ] || fail "only $(cat out) of 50000 old keys gone"
}
