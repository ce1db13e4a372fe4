#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs one of README.md's quick starts as a user would, against the build
# tree: the code, commands and expected output come out of README.md
# itself, so that the README and what the project does cannot drift apart.
#
# Usage: quickstart_test.sh CASE      (ctest quickstart.CASE)
#   CASE: library (quick start a), cli (b), module_python and module_node
#   (c), remote (d).
# Environment, set by tests/quickstart/CMakeLists.txt (empty: not found or
# not built):
#   README          README.md
#   INCLUDE_DIR     the public headers (include/)
#   LIB_DIR         the directory of libbloomgate.so
#   REMOTE_LIB_DIR  the directory of libbloomgate_remote.so
#   CLI             the bloomgate tool
#   MODULE          bloomgate.so
#   REDIS_SERVER    redis-server
#   PYTHON3         a python3 that has redis-py (Debian's python3-redis)
#   NODE            node
#   NODE_MODULES    node_modules holding node-redis (scripts/deps.sh puts
#                   it in .deps/node/)
#   SQLITE3         the sqlite3 shell
#   REQUIRE_ALL     1: a missing tool fails the test instead of skipping it
#
# README.md marks each file of a quick start with a comment on the line
# before its fenced block:
#   <!-- quickstart:a service.c -->
#   ```c
#   ...
#   ```
# and the output a step must print the same way (service.out). The one
# change made to what the README shows: Redis runs on a free loopback port
# that this script starts it on, not on 6379, so the port number 6379 in
# the extracted files is replaced by that port.
#
# Exit status: 0 pass, 1 fail, 77 skip (a tool is missing; the reason is
# printed).
set -uo pipefail

case_name=${1:?usage: quickstart_test.sh CASE}
: "${README:?}" "${INCLUDE_DIR:?}" "${LIB_DIR:?}"
REMOTE_LIB_DIR=${REMOTE_LIB_DIR:-} CLI=${CLI:-} MODULE=${MODULE:-}
REDIS_SERVER=${REDIS_SERVER:-} PYTHON3=${PYTHON3:-} NODE=${NODE:-}
NODE_MODULES=${NODE_MODULES:-} SQLITE3=${SQLITE3:-} REQUIRE_ALL=${REQUIRE_ALL:-0}
README=$(realpath "$README") || exit 1

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# A missing tool or component: a skip with the reason, or a failure when
# every dependency is required.
missing() {
    if [ "$REQUIRE_ALL" = 1 ] || [ "$REQUIRE_ALL" = ON ]; then
        fail "$* (required: BG_REQUIRE_ALL)"
    fi
    echo "SKIP: $*"
    exit 77
}

work=$(mktemp -d "${TMPDIR:-/tmp}/bloomgate-quickstart.XXXXXX") || fail "mktemp"
redis_pid=""
cleanup() {
    if [ -n "$redis_pid" ]; then
        kill "$redis_pid" 2>/dev/null
        wait "$redis_pid" 2>/dev/null
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# extract QS DIR: writes every file README.md marks for quick start QS into
# DIR. A marker not followed by a fence, or a fence never closed, fails.
extract() {
    local qs=$1 dir=$2
    awk -v qs="$qs" -v dir="$dir" '
        function die(msg) { print "README.md:" NR ": " msg > "/dev/stderr"; bad = 1; exit 1 }
        pending != "" {
            if ($0 !~ /^```/) die("quickstart marker for " pending " is not followed by a fenced block")
            file = pending; pending = ""; inblock = 1; printf "" > file; next
        }
        inblock && /^```[ \t]*$/ { inblock = 0; close(file); next }
        inblock { print > file; next }
        /^<!-- quickstart:[a-z]+ [^ ]+ -->[ \t]*$/ {
            split($0, w, /[: ]+/)
            if (w[3] == qs) pending = dir "/" w[4]
        }
        END {
            if (bad) exit 1
            if (inblock) { print "README.md: block " file " is never closed" > "/dev/stderr"; exit 1 }
            if (pending != "") { print "README.md: marker for " pending " at the end" > "/dev/stderr"; exit 1 }
        }' "$README" || fail "cannot extract quick start $qs from $README"
}

# need FILE...: each must have been extracted (README.md lost a marker
# otherwise).
need() {
    local f
    for f in "$@"; do
        [ -f "$f" ] || fail "README.md has no quickstart block for $(basename "$f")"
    done
}

# same EXPECTED ACTUAL: ACTUAL is what README.md shows in EXPECTED.
same() {
    if ! diff -u "$1" "$2"; then
        fail "the output differs from the README's $(basename "$1") (- README, + actual)"
    fi
    echo "ok: output matches the README's $(basename "$1")"
}

# run_sh FILE [OUT]: shows and runs a shell block of the README in the
# working directory, stopping at the first command that fails; its standard
# output goes to OUT if given.
run_sh() {
    echo "+ README $(basename "$1"):"
    sed 's/^/    /' "$1"
    local rc=0
    bash -euo pipefail "$1" >"${2:-/dev/stdout}" || rc=$?
    [ "$rc" -eq 0 ] || fail "$(basename "$1") exited with status $rc"
}

# run_absent FILE EXPECTED: runs a README check block, which exits with
# status 1 when a key is definitely absent, and compares its output with the
# README's EXPECTED.
run_absent() {
    echo "+ README $(basename "$1") (exit status 1: a key is definitely absent)"
    local rc=0
    bash "$1" >actual.out || rc=$?
    [ "$rc" -eq 1 ] || fail "$(basename "$1") exited with status $rc, not 1"
    same "$2" actual.out
}

# The build tree as an installed package: pkg-config files that point at
# it, the tool on PATH, the libraries where the loader finds them.
use_build_tree() {
    mkdir -p "$work/pkgconfig" "$work/bin"
    cat >"$work/pkgconfig/bloomgate.pc" <<EOF
Name: bloomgate
Description: bloomgate from the build tree
Version: 0.0.0
Libs: -L$LIB_DIR -lbloomgate
Cflags: -I$INCLUDE_DIR
EOF
    if [ -n "$REMOTE_LIB_DIR" ]; then
        cat >"$work/pkgconfig/bloomgate-remote.pc" <<EOF
Name: bloomgate-remote
Description: bloomgate remote filters from the build tree
Version: 0.0.0
Requires: bloomgate
Libs: -L$REMOTE_LIB_DIR -lbloomgate_remote
Cflags: -I$INCLUDE_DIR
EOF
    fi
    export PKG_CONFIG_PATH="$work/pkgconfig"
    export LD_LIBRARY_PATH="$LIB_DIR${REMOTE_LIB_DIR:+:$REMOTE_LIB_DIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [ -n "$CLI" ]; then
        ln -s "$CLI" "$work/bin/bloomgate"
    fi
    if [ -n "$SQLITE3" ]; then
        ln -s "$SQLITE3" "$work/bin/sqlite3"
    fi
    export PATH="$work/bin:$PATH"
}

# start_redis [MODULE]: a redis-server on a free loopback port in 26000-26999,
# in its own directory, persisting nothing; sets port.
start_redis() {
    local dir="$work/redis" _
    mkdir -p "$dir"
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        port=$((26000 + RANDOM % 1000))
        "$REDIS_SERVER" --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
            --logfile "$dir/redis.log" ${1:+--loadmodule "$1"} &
        redis_pid=$!
        local _wait
        for _wait in $(seq 1 100); do
            if grep -q "Ready to accept connections" "$dir/redis.log" 2>/dev/null; then
                echo "redis-server on 127.0.0.1:$port${1:+ with $(basename "$1")}"
                return 0
            fi
            kill -0 "$redis_pid" 2>/dev/null || break
            sleep 0.05
        done
        kill "$redis_pid" 2>/dev/null
        wait "$redis_pid" 2>/dev/null
        redis_pid=""
        if ! grep -q "Address already in use" "$dir/redis.log" 2>/dev/null; then
            cat "$dir/redis.log" >&2
            fail "redis-server did not start"
        fi
        rm -f "$dir/redis.log"
    done
    fail "no free port for redis-server in 26000-26999"
}

# to_port FILE...: the README's port, 6379, becomes the one Redis runs on.
to_port() {
    sed -i "s/\\b6379\\b/$port/g" "$@"
}

command -v cc >/dev/null || missing "no C compiler 'cc' on PATH"
command -v pkg-config >/dev/null || missing "no pkg-config on PATH"
use_build_tree
cd "$work" || fail "cd $work"

case $case_name in
library) # (a) the C library in a service
    extract a "$work"
    need service.c build.sh service.out
    run_sh build.sh actual.out
    same service.out actual.out
    # The same code under the project's warnings, so that the README shows
    # clean C11.
    # shellcheck disable=SC2046 # pkg-config's words are separate arguments
    cc -std=c11 -Wall -Wextra -Wconversion -Werror -o service_strict service.c \
        $(pkg-config --cflags --libs bloomgate) || fail "service.c has warnings"
    [ -s products.bgf ] || fail "service did not save products.bgf"
    ;;
cli) # (b) the command-line tool fed from a database dump
    [ -n "$CLI" ] || missing "the bloomgate tool is not built (BG_BUILD_CLI)"
    [ -n "$SQLITE3" ] || missing "no sqlite3 shell (Debian: sqlite3; scripts/deps.sh installs it)"
    extract b "$work"
    need shop.sh filter.sh check.sh check.out
    run_sh shop.sh
    run_sh filter.sh
    run_absent check.sh check.out
    ;;
module_python | module_node) # (c) the Redis module from RedisBloom's clients
    [ -n "$MODULE" ] || missing "bloomgate.so is not built (BG_BUILD_REDIS)"
    [ -n "$REDIS_SERVER" ] || missing "no redis-server (scripts/deps.sh installs it)"
    extract c "$work"
    if [ "$case_name" = module_python ]; then
        [ -n "$PYTHON3" ] || missing "no python3"
        "$PYTHON3" -c 'import redis' 2>/dev/null ||
            missing "$PYTHON3 has no redis-py (Debian: python3-redis)"
        need bf.py bf.py.out
        script=bf.py
        run=("$PYTHON3" bf.py)
    else
        [ -n "$NODE" ] || missing "no node (Debian: nodejs)"
        [ -f "${NODE_MODULES:-/nonexistent}/redis/package.json" ] ||
            missing "no node-redis in ${NODE_MODULES:-.deps/node/node_modules} (scripts/deps.sh installs it)"
        need bf.mjs bf.mjs.out
        # An ES module finds its imports in node_modules beside it or above.
        ln -s "$NODE_MODULES" node_modules
        script=bf.mjs
        run=("$NODE" bf.mjs)
    fi
    start_redis "$MODULE"
    to_port "$script"
    # Twice: the second run finds the filter the first one made, as a
    # service restarting would.
    for pass in 1 2; do
        echo "+ README $script, run $pass"
        rc=0
        "${run[@]}" >actual.out || rc=$?
        [ "$rc" -eq 0 ] || fail "$script exited with status $rc"
        same "$script.out" actual.out
    done
    ;;
remote) # (d) one filter in a plain Redis for every instance
    [ -n "$CLI" ] || missing "the bloomgate tool is not built (BG_BUILD_CLI)"
    [ -n "$REMOTE_LIB_DIR" ] || missing "libbloomgate_remote is not built (BG_BUILD_REMOTE)"
    [ -n "$REDIS_SERVER" ] || missing "no redis-server (scripts/deps.sh installs it)"
    [ -n "$SQLITE3" ] || missing "no sqlite3 shell (Debian: sqlite3; scripts/deps.sh installs it)"
    extract b "$work"
    extract d "$work"
    need shop.sh shared.sh shared_check.sh shared_check.out worker.c worker.sh worker.out
    start_redis # no module: the bitmap backend needs none
    to_port shared.sh shared_check.sh worker.c worker.sh
    run_sh shop.sh
    run_sh shared.sh
    run_absent shared_check.sh shared_check.out
    run_sh worker.sh actual.out
    same worker.out actual.out
    # shellcheck disable=SC2046 # pkg-config's words are separate arguments
    cc -std=c11 -Wall -Wextra -Wconversion -Werror -o worker_strict worker.c \
        $(pkg-config --cflags --libs bloomgate-remote) || fail "worker.c has warnings"
    ;;
*)
    fail "unknown case $case_name"
    ;;
esac
echo "PASS: quickstart.$case_name"
