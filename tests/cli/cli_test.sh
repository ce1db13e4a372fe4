#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Tests of the bloomgate command-line tool, run as a real binary.
#
#   bash cli_test.sh PATH/TO/bloomgate CASE
#
# Each CASE is one function (case_<name>) and one ctest test (cli.<name>,
# tests/cli/CMakeLists.txt). This file holds the assertions and helpers;
# the cases are in cli_cases_*.sh beside it, by concern: calc.sh (help,
# calc, bench, number parsing), files.sh (filter files: round trips,
# input, check, info, bad files, create, merge, crashes, targets,
# progress) and variants.sh (counting, scalable, every variant). Each case
# runs in its own mktemp -d, removed on exit, and fails (exit 1) at the
# first assertion that does not hold, printing what was expected and what
# came instead.
#
# Needs only bash and coreutils (seq, od, cmp, head, tr, dd, stat, mkfifo)
# plus script(1) from util-linux for the progress test, and jq (installed by
# scripts/deps.sh) to check that every JSON document parses.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BG=${1:?usage: cli_test.sh BLOOMGATE CASE}
CASE=${2:?usage: cli_test.sh BLOOMGATE CASE}
case $BG in /*) ;; *) BG=$PWD/$BG ;; esac
[ -x "$BG" ] || { echo "not executable: $BG" >&2; exit 1; }

T=$(mktemp -d "${TMPDIR:-/tmp}/bloomgate-cli.XXXXXX")
trap 'rm -rf "$T"' EXIT
cd "$T"

# ---- assertions -----------------------------------------------------------

fail() {
    echo "FAIL [$CASE]: $*" >&2
    if [ -f "$T/out" ]; then echo "--- stdout:" >&2; head -c 2000 "$T/out" >&2 || true; fi
    if [ -f "$T/err" ]; then echo "--- stderr:" >&2; head -c 2000 "$T/err" >&2 || true; fi
    exit 1
}

# run WANT_RC CMD...: runs CMD with stdout in $T/out and stderr in $T/err and
# checks its exit status.
run() {
    local want=$1 rc=0
    shift
    "$@" >"$T/out" 2>"$T/err" || rc=$?
    [ "$rc" -eq "$want" ] || fail "exit status $rc, want $want: $*"
}

eq() { # eq GOT WANT WHAT
    [ "$1" == "$2" ] || fail "$3: got '$1', want '$2'"
}

has() { # has FILE TEXT: FILE contains TEXT (fixed string)
    grep -qF -- "$2" "$1" || fail "$1 does not contain '$2'"
}

hasnt() {
    if grep -qF -- "$2" "$1"; then fail "$1 contains '$2'"; fi
}

empty() {
    [ ! -s "$1" ] || fail "$1 is not empty"
}

same() { # same A B: byte-identical files
    cmp -s "$1" "$2" || fail "$1 and $2 differ"
}

json_ok() { # json_ok FILE: valid JSON
    jq -e . "$1" >/dev/null || fail "$1 is not valid JSON"
}

# The value of a flat "name":value pair in a one-line JSON document.
jget() { # jget FILE NAME
    sed -n "s/.*\"$2\":\\(\"[^\"]*\"\\|[^,}]*\\).*/\\1/p" "$1" | head -n 1
}

keys() { # keys FIRST LAST PREFIX: one key per line
    seq -f "${3:-key}-%.0f" "$1" "$2"
}

# wait_until WHAT CMD...: until CMD succeeds, polled every 50 ms; fails,
# naming WHAT, after WAIT_S seconds (generous: a loaded machine only makes
# a case slower).
WAIT_S=${WAIT_S:-60}
wait_until() {
    local what=$1 deadline=$((SECONDS + WAIT_S))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "waited $WAIT_S s for $what"
        sleep 0.05
    done
}

# reading_stdin PID: the process waits in read(0, ...) (its input is empty).
reading_stdin() { [[ "$(cat "/proc/$1/syscall" 2>/dev/null)" == "0 0x0 "* ]]; }
# bytes_read PID: what the process has read so far, in bytes (rchar).
bytes_read() { awk '/^rchar:/ { print $2 }' "/proc/$1/io" 2>/dev/null || echo 0; }
# read_past PID N: the process has read N bytes or more and waits in
# read(0, ...) for more.
read_past() { [ "$(bytes_read "$1")" -ge "$2" ] && reading_stdin "$1"; }

# add_in_flight KEYS...: starts `add f.bgf` on the FIFO `fifo` (fd 3 its
# writing end, kept open) and hands it the keys, a file; returns once the
# add has read them all and waits for more: in flight, with keys in and
# its input not ended. Sets pid.
add_in_flight() {
    "$BG" add f.bgf <fifo 2>/dev/null &
    pid=$!
    exec 3>fifo
    wait_until "the add to wait for its keys" reading_stdin "$pid"
    local before
    before=$(bytes_read "$pid")
    cat "$1" >&3
    wait_until "the add to read its keys and wait for more" \
        read_past "$pid" $((before + $(stat -c %s "$1")))
}

no_temp_files() {
    local left
    left=$(find . -maxdepth 1 -name '.*tmp*' | head -n 5)
    [ -z "$left" ] || fail "temporary files left behind: $left"
}

# ---- cases ----------------------------------------------------------------

for cases in "$HERE"/cli_cases_*.sh; do
    # shellcheck source=/dev/null
    source "$cases"
done

fn="case_$CASE"
declare -F "$fn" >/dev/null || { echo "no such case: $CASE" >&2; exit 1; }
"$fn"
echo "ok: cli.$CASE"
