#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ctest example.seen: tiny runs of bloomgate-seen, in-process and (through
# demo_seen.sh, which starts its own redis-server with bloomgate.so) in
# Redis. Every column must have 0 mismatches and 0 false negatives, and
# every filter column must answer more than 90% of the candidates alone.
# Also: a bad flag exits 2, an unreachable Redis exits 1.
#
#   SEEN_EXE=.../bloomgate-seen BLOOMGATE_SO=.../bloomgate.so test_seen.sh
#
# Without BLOOMGATE_SO (or redis-server) the Redis part is skipped and the
# test exits 77 (ctest: skipped) after the in-process part passed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exe=${SEEN_EXE:?SEEN_EXE must name bloomgate-seen}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-seen.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# check OUTPUT COLUMNS: the table in OUTPUT has COLUMNS columns, all with 0
# mismatches and false negatives, the filter ones with > 90% avoided.
check() {
    local out=$1 want=$2
    cat "$out"
    awk -v want="$want" '
        # Row labels have a known number of words; the values follow.
        function values(nwords,   i) {
            n = 0
            for (i = nwords + 1; i <= NF; i++) v[++n] = $i
            return n
        }
        /^ +in-process|^ +redis/ { nc = NF; for (i = 1; i <= NF; i++) name[i] = $i }
        /^mismatches / {
            if (values(1) != nc) bad = bad " mismatches-row"
            for (i = 1; i <= nc; i++) if (v[i] != "0") bad = bad " " name[i] ":mismatches=" v[i]
        }
        /^filter false negatives / {
            values(3)
            for (i = 1; i <= nc; i++) if (v[i] != "0") bad = bad " " name[i] ":false-negatives=" v[i]
        }
        /^exact lookups avoided / {
            values(3)
            for (i = 1; i <= nc; i++) { a = v[i]; sub(/%/, "", a); avoided[i] = a + 0 }
            got_avoided = 1
        }
        END {
            if (nc != want) { print "expected " want " columns, got " nc; exit 1 }
            if (!got_avoided) { print "no avoided row"; exit 1 }
            for (i = 1; i <= nc; i++)
                if (name[i] ~ /filter/ && avoided[i] <= 90)
                    bad = bad " " name[i] ":avoided=" avoided[i] "%"
            if (bad != "") { print "bad:" bad; exit 1 }
        }' "$out" || fail "table check failed"
}

# Usage errors: exit 2.
set +e
"$exe" --users 0 >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--users 0 exited $rc, not 2"
"$exe" --bogus >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--bogus exited $rc, not 2"
# An unreachable Redis: exit 1 (port 1 on loopback: nothing listens).
"$exe" --mode redis --redis 127.0.0.1:1 --users 10 --requests 10 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "unreachable Redis exited $rc, not 1"
grep -q "cannot connect" "$tmp/err" || fail "unreachable Redis: no message"
set -e

echo "== in-process =="
"$exe" --mode local --users 200 --requests 1000 --threads 2 >"$tmp/local" ||
    fail "local run exited $?"
check "$tmp/local" 1
"$exe" --mode local --no-filter --users 200 --requests 1000 >"$tmp/local0" ||
    fail "local baseline run exited $?"
check "$tmp/local0" 1

if [ -z "${BLOOMGATE_SO:-}" ] || ! command -v "${REDIS_SERVER:-redis-server}" >/dev/null; then
    echo "no bloomgate.so or redis-server: Redis part skipped"
    exit 77
fi
echo "== redis (demo_seen.sh) =="
"$here/demo_seen.sh" . --users 200 --requests 1000 >"$tmp/redis" || fail "demo_seen.sh exited $?"
check "$tmp/redis" 5
echo "PASS"
