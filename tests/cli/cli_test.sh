#!/usr/bin/env bash
# Tests of the bloomgate command-line tool, run as a real binary.
#
#   bash cli_test.sh PATH/TO/bloomgate CASE
#
# Each CASE is one function below (case_<name>) and one ctest test
# (cli.<name>, tests/cli/CMakeLists.txt). Each runs in its own mktemp -d,
# removed on exit, and fails (exit 1) at the first assertion that does not
# hold, printing what was expected and what came instead.
#
# Needs only bash and coreutils (seq, od, cmp, head, tr, dd, stat, mkfifo)
# plus script(1) from util-linux for the progress test, and jq (installed by
# scripts/deps.sh) to check that every JSON document parses.
set -euo pipefail

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

# bench and demo: a filter built in memory, timed, and its error rate
# measured on keys never added. The counts are exact (fixed keys, seed 0),
# so they are checked against the model's rate with a margin of 4 standard
# errors, sqrt(p (1 - p) / n).
case_bench() {
    run 0 "$BG" bench -n 20000 -p 0.01 --json
    json_ok out
    empty err
    eq "$(jq '.results | length' out)" 2 "variants measured by default"
    eq "$(jq -r '[.results[].variant] | join(",")' out)" "standard,blocked" "variants"
    # the same m and k as calc gives (the filter is sized by the library)
    "$BG" calc -n 20000 -p 0.01 --json >calc.json
    eq "$(jq -c '[.results[] | select(.variant != "counting") | [.m, .k]]' calc.json)" \
        "$(jq -c '[.results[] | [.bits, .hashes]]' out)" "bench m and k against calc"
    eq "$(jq '[.results[] | .found] | unique' out | tr -d ' \n')" "[20000]" "every key found"
    # 200 expected of 20000, standard error 14
    jq -e '[.results[] | .false_positives] | all(. >= 144 and . <= 256)' out >/dev/null ||
        fail "false positives out of range: $(jq -c '[.results[] | .false_positives]' out)"
    jq -e '.results | all(.fp_rate == .false_positives / 20000)' out >/dev/null ||
        fail "fp_rate is not false_positives / n"
    jq -e '[.results[] | .ns_per_key[]] | all(. > 0)' out >/dev/null ||
        fail "a time that is not positive: $(jq -c '[.results[] | .ns_per_key]' out)"
    # one variant, the table; p = 0.1: 2000 expected, standard error 42
    run 0 "$BG" bench -n 2e4 -p 0.1 --variant counting --single-writer
    has out "false positives (rate)"
    fp=$(awk '$1 == "counting" { print $(NF - 1) }' out)
    [ "$fp" -ge 1830 ] && [ "$fp" -le 2170 ] || fail "counting: $fp false positives of 20000"
    run 0 "$BG" bench -n 1000 --variant scalable --json
    eq "$(jq '.results[0].found' out)" 1000 "scalable: every key found"
    # bad arguments: status 2, nothing measured
    run 2 "$BG" bench -p 2
    has err "--error-rate: '2' is not between 0 and 1"
    empty out
    run 2 "$BG" bench -n 0
    run 2 "$BG" bench -n 2e10
    run 2 "$BG" bench extra
    has err "unexpected argument 'extra'"
    run 2 "$BG" bench --variant blocked -n 100 -p 0.01 -k 3
    run 2 "$BG" demo --json
    has err "unknown option '--json'"

    run 0 "$BG" demo -n 20000
    empty err
    has out "A blocked filter for 20000 ids at a false-positive rate of 0.01"
    has out "Every id that exists was found (20000 of 20000)"
    away=$(sed -n 's/.*turned away \([0-9]*\) .*/\1/p' out)
    other=$(sed -n 's/^The other \([0-9]*\) .*/\1/p' out)
    eq "$((away + other))" 20000 "turned away + let through"
    [ "$other" -ge 144 ] && [ "$other" -le 256 ] || fail "demo: $other false positives"
    run 0 "$BG" demo -n 20000 --variant standard -p 0.001
    has out "A standard filter for 20000 ids at a false-positive rate of 0.001"
}

case_help() {
    run 0 "$BG" --help
    has out "usage: bloomgate COMMAND"
    empty err
    run 0 "$BG" -h
    run 0 "$BG" help
    has out "Commands:"
    run 0 "$BG" --version
    has out "bloomgate 0."
    has out "file format 2"
    for cmd in calc create add remove check info merge intersect bench demo; do
        has <("$BG" --help) "  $cmd "
        run 0 "$BG" "$cmd" --help
        has out "usage: bloomgate $cmd"
        empty err
        run 0 "$BG" "$cmd" -h
        has out "usage: bloomgate $cmd"
        run 0 "$BG" help "$cmd"
        has out "usage: bloomgate $cmd"
        # an unknown flag: usage on stderr, nothing on stdout, status 2
        run 2 "$BG" "$cmd" --no-such-flag
        empty out
        has err "unknown option '--no-such-flag'"
        has err "usage: bloomgate $cmd"
        run 2 "$BG" "$cmd" -Z
        has err "unknown option '-Z'"
    done
    run 2 "$BG"
    has err "no command given"
    has err "usage: bloomgate"
    run 2 "$BG" frobnicate
    has err "unknown command 'frobnicate'"
    run 2 "$BG" --frobnicate
    has err "unknown option '--frobnicate'"
    run 2 "$BG" help frobnicate
    has err "unknown command 'frobnicate'"
    run 2 "$BG" calc -n
    has err "option '-n' needs a value"
    # an ambiguous abbreviation is named as such, with what it could mean;
    # an unambiguous one works
    run 2 "$BG" create x.bgf --max 5
    has err "option '--max' is ambiguous: --max-layers, --max-bytes"
    run 2 "$BG" check --n=1 x.bgf
    has err "option '--n' is ambiguous: --null, --no-verify"
    run 0 "$BG" create x.bgf -n 10 -p 0.1 --variant scalable --max-l 5 -q
    run 2 "$BG" create
    has err "no FILE given"
    run 2 "$BG" check
    has err "no FILE given"
    run 2 "$BG" merge out.bgf a.bgf
    has err "at least two input files"
    [ ! -e out.bgf ] || fail "merge with one input wrote out.bgf"
    # remove: its help names what it is for and its limit
    run 0 "$BG" remove --help
    has out "usage: bloomgate remove [-0] [-q] [--json] [--strict] FILE [--] [KEY...]"
    has out "counting filter"
    has out "Remove only keys that were added"
    has out "--strict"
    run 2 "$BG" remove
    has err "no FILE given"
    has <("$BG" --help) "remove keys from a counting filter file"
    # create's help has the scalable options
    run 0 "$BG" create --help
    for opt in --expansion --max-layers --layer-variant --tightening --max-bytes --nonscaling; do
        has out "$opt"
    done
}

case_calc() {
    # Golden values: the textbook m = ceil(-n ln p / ln^2 2), k = round(m/n ln 2).
    run 0 "$BG" calc -n 1000 -p 0.01 --variant standard --json
    json_ok out
    has out '{"given":{"n":1000,"p":0.01},"results":[{"variant":"standard","n":1000,"m":9586,"k":7,"bytes":1199,"bits_per_key":9.586,"p":0.0100'
    run 0 "$BG" calc -n 1000 -p 0.01 --json
    json_ok out
    has out '"variant":"standard","n":1000,"m":9586,"k":7,"bytes":1199,'
    has out '"variant":"blocked","n":1000,"m":10240,"k":7,"bytes":1280,'
    # the table: both variants, same numbers
    run 0 "$BG" calc -n 1000 -p 0.01
    eq "$(awk '$1 == "standard" { print $2, $3, $4, $5 }' out)" "1000 9586 7 1199" "standard row"
    eq "$(awk '$1 == "blocked" { print $2, $3, $4, $5 }' out)" "1000 10240 7 1280" "blocked row"
    empty err
    # n = 1e6, p = 0.01: 9585059 bits, k = 7, and the model's p a hair above 0.01
    run 0 "$BG" calc -n 1e6 -p 0.01 --variant standard --json
    has out '"n":1000000,"m":9585059,"k":7,'
    # m and k given: n derived as floor(m ln 2 / k)
    run 0 "$BG" calc -m 9586 -k 7 --variant standard --json
    has out '"given":{"m":9586,"k":7}'
    has out '"n":949,"m":9586,"k":7,'
    # n, p and k: m is searched for so that the model's p <= 0.01
    run 0 "$BG" calc -n 1000 -p 0.01 -k 4 --variant standard --json
    p=$(jget out p)
    awk -v p="$p" 'BEGIN { exit !(p <= 0.01 && p > 0.005) }' || fail "model p $p for k = 4"
    # k above the blocked variant's 8: the standard row alone, a note on stderr
    run 0 "$BG" calc -n 1000 -p 0.01 -k 9
    has out "standard"
    hasnt out "blocked "
    has err "blocked: k = 9: the blocked variant has at most 8 probes per key"
    run 2 "$BG" calc -n 1000 -p 0.01 -k 9 --variant blocked
    empty out # nothing sized: no table, the reason on stderr
    has err "blocked: k = 9: the blocked variant has at most 8 probes per key"
    run 2 "$BG" calc -n 1e19 -p 0.01 --variant standard
    empty out
    run 0 "$BG" calc -n 1000 -p 0.01 -k 9 --json
    json_ok out
    has out '{"variant":"blocked","error":"k = 9: the blocked variant has at most 8 probes per key"}'
    # combinations that cannot be solved are usage errors
    run 2 "$BG" calc -n 1000
    has err "give two of"
    run 2 "$BG" calc -p 0.01 -k 7
    has err "-p and -k fix only the bits per key"
    run 2 "$BG" calc -n 1000 -m 10000 -p 0.01
    has err "cannot all be given"
    run 2 "$BG" calc -n 1000 -p 0.01 --variant nosuch
    has err "--variant: 'nosuch' is not a variant"
    run 2 "$BG" calc -n 1000 -p 0.01 extra
    has err "unexpected argument 'extra'"
}

case_numbers() {
    # 10000000 and 1e7 are the same count
    run 0 "$BG" calc -n 10000000 -p 0.01 --json
    cp out a.json
    run 0 "$BG" calc -n 1e7 -p 1e-2 --json
    same out a.json
    run 0 "$BG" calc -n 2.5e6 -p 0.01 --json
    has out '"n":2500000'
    # bad counts name the flag and the problem
    local bad
    for bad in -5:negative abc:"not a number" 1.5:"not a whole number" 0:"too small" \
        1e30:"too large" 18446744073709551616:"too large" " 5":"not a number" \
        +5:"not a number" 0x10:"not a number" 5k:"not a number" "":"not a number" \
        1e-3:"not a whole number" inf:"not a number" 1.0000000000000001:"not a whole number" \
        1.8446744073709551616e19:"too large" 12e-1:"not a whole number"; do
        run 2 "$BG" calc -n "${bad%%:*}" -p 0.01
        has err "--capacity: '${bad%%:*}' is ${bad#*:}"
        empty out
    done
    # counts are read exactly, not through a double (which holds 53 bits)
    run 2 "$BG" calc -n 9007199254740993e0 -k 1 --variant standard --json
    has out '"given":{"n":9007199254740993,'
    run 2 "$BG" calc -n 1.8446744073709551615e19 -k 1 --variant standard --json
    has out '"given":{"n":18446744073709551615,'
    run 0 "$BG" calc -n 120e-1 -k 1 --variant standard --json
    has out '"given":{"n":12,'
    # 18446744073709551615 parses: it is a valid count, only too big to size
    run 2 "$BG" calc -n 18446744073709551615 -p 0.01
    hasnt err "--capacity"
    has err "n = 18446744073709551615 keys would need more than 2^64 bits"
    run 2 "$BG" create f.bgf -n 1e19 -p 0.01
    has err "cannot create a blocked filter: n = 10000000000000000000 keys would need more than 2^64 bits"
    # a rate too small for a double is not "between 0 and 1" in name only
    run 2 "$BG" calc -n 100 -p 1e-400
    has err "--error-rate: '1e-400' is too small to represent (it rounds to 0)"
    run 2 "$BG" calc -n 100 -p 0e5
    has err "--error-rate: '0e5' is not between 0 and 1"
    for bad in 0 1 1.5 -0.1 abc nan inf 0.5x 1e5 ""; do
        run 2 "$BG" calc -n 100 -p "$bad"
        has err "--error-rate: '$bad'"
    done
    run 2 "$BG" calc -m -1 -k 3
    has err "--bits: '-1' is negative"
    run 2 "$BG" calc -m 100 -k 33
    has err "--hashes: '33' is too large (at most 32)"
    run 2 "$BG" calc -m 100 -k 0
    has err "--hashes: '0' is too small"
    run 2 "$BG" create f.bgf -n 100 -p 0.01 --seed -1
    has err "--seed: '-1' is negative"
    run 2 "$BG" create f.bgf -n 100 -p 0.01 --seed 0x11112222333344445
    has err "--seed: '0x11112222333344445' does not fit in 64 bits"
    run 2 "$BG" create f.bgf -n 100 -p 0.01 --seed 12ab
    has err "--seed: '12ab' is not a number"
    run 2 "$BG" create f.bgf -n 1e30 -p 0.01
    has err "--capacity: '1e30' is too large"
    [ ! -e f.bgf ] || fail "a refused create wrote the file"
    run 0 "$BG" create f.bgf -n 100 -p 0.01 --seed 0xFFFFFFFFFFFFFFFF -q
    run 0 "$BG" info --json f.bgf
    eq "$(jget out seed)" 18446744073709551615 "seed"
}

case_roundtrip() {
    # 100k distinct keys in; every one of them must come back "maybe"
    keys 1 100000 user >in.txt
    keys 100001 200000 user >absent.txt
    run 0 "$BG" create f.bgf -n 100000 -p 0.01
    has err "created f.bgf: blocked"
    run 0 "$BG" add f.bgf <in.txt
    has err "f.bgf: 100000 keys read"
    empty out
    run 0 "$BG" check -c f.bgf <in.txt
    eq "$(cat out)" "$(printf 'keys\t100000\nmaybe\t100000\nno\t0')" "totals for added keys"
    run 0 "$BG" check --absent f.bgf <in.txt
    empty out
    # absent keys: mostly "no", at about the rate asked for (p = 0.01:
    # expected 1000 of 100000 maybe, sd 31; a hard bound well outside that)
    run 1 "$BG" check -c --present f.bgf <absent.txt
    local fp
    fp=$(cat out)
    [ "$fp" -le 1500 ] || fail "false positives $fp of 100000 at p = 0.01"
    [ "$fp" -ge 500 ] || fail "false positives $fp of 100000: suspiciously few at p = 0.01"
    # the per-key output agrees with the totals
    run 1 "$BG" check f.bgf <absent.txt
    eq "$(grep -c $'\tmaybe$' out)" "$fp" "maybe lines"
    eq "$(grep -c $'\tno$' out)" "$((100000 - fp))" "no lines"
    eq "$(head -n 1 out | cut -f 1)" "user-100001" "first key echoed"
    # the standard variant too, and a second add of the same keys is not new
    run 0 "$BG" create s.bgf -n 100000 -p 0.01 --variant standard --seed 42
    run 0 "$BG" add --json s.bgf <in.txt
    eq "$(jget out keys)" 100000 "keys read"
    local new
    new=$(jget out new)
    [ "$new" -ge 99500 ] && [ "$new" -le 100000 ] || fail "new keys $new of 100000"
    run 0 "$BG" add --json s.bgf <in.txt
    eq "$(jget out new)" 0 "new keys on a second add"
    run 0 "$BG" check -q s.bgf <in.txt
    empty out
    # adding past the capacity warns (and still never forgets a key)
    run 0 "$BG" create small.bgf -n 1000 -p 0.01
    run 0 "$BG" add small.bgf <in.txt
    has err "warning:"
    has err "exceed the capacity 1000"
    run 0 "$BG" check -q small.bgf <in.txt
}

case_input() {
    # The same keys by arguments, by lines and NUL-separated give the same
    # file, byte for byte: empty keys, keys starting with '-', spaces, tabs.
    local k=("alice" "" "-x" "--not-an-option" "two words" $'tab\there' "-" "zoë")
    run 0 "$BG" create args.bgf -n 1000 -p 0.01 -q
    cp args.bgf lines.bgf
    cp args.bgf nul.bgf
    cp args.bgf lastline.bgf
    run 0 "$BG" add -q args.bgf -- "${k[@]}"
    empty err
    printf '%s\n' "${k[@]}" >lines.txt
    run 0 "$BG" add -q lines.bgf <lines.txt
    printf '%s\0' "${k[@]}" >nul.txt
    run 0 "$BG" add -q -0 nul.bgf <nul.txt
    # the last line needs no newline
    head -c -1 lines.txt >lastline.txt
    run 0 "$BG" add -q lastline.bgf <lastline.txt
    same args.bgf lines.bgf
    same args.bgf nul.bgf
    same args.bgf lastline.bgf
    run 0 "$BG" info --json args.bgf
    eq "$(jget out items)" 8 "items after 8 distinct keys"
    run 0 "$BG" check args.bgf -- "${k[@]}"
    eq "$(grep -c $'\tmaybe$' out)" 8 "all 8 keys maybe"
    # the empty key was added: a fresh filter says no to it, this one maybe
    run 0 "$BG" check args.bgf ''
    eq "$(cat out)" $'\tmaybe' "the empty key"
    run 0 "$BG" create fresh.bgf -n 1000 -p 0.01 -q
    run 1 "$BG" check fresh.bgf ''
    eq "$(cat out)" $'\tno' "the empty key, fresh filter"
    # one empty line is one empty key; empty input is no key; \r is kept
    cp fresh.bgf e.bgf
    run 0 "$BG" add --json e.bgf <<<""
    eq "$(jget out keys)" 1 "keys in one empty line"
    run 0 "$BG" add --json e.bgf </dev/null
    eq "$(jget out keys)" 0 "keys in empty input"
    printf 'crlf\r\n' | run 0 "$BG" add -q e.bgf
    run 0 "$BG" check --present e.bgf -- '' $'crlf\r'
    eq "$(od -An -c out | tr -d '\n' | tr -s ' ')" " \n c r l f \r \n" "maybe: the empty key and crlf\\r"
    run 1 "$BG" check -q e.bgf crlf
    # a line of lines: the NUL byte is an ordinary key byte without -0
    printf 'a\0b\n' | run 0 "$BG" add -q e.bgf
    printf 'a\0b' | run 0 "$BG" check -q e.bgf
    run 1 "$BG" check -q e.bgf a
    # without --, a key that looks like an option is an option
    run 2 "$BG" add f.bgf -x
    has err "unknown option '-x'"
}

case_check() {
    run 0 "$BG" create f.bgf -n 1000 -p 0.001 -q
    run 0 "$BG" add -q f.bgf alice bob carol
    # default: KEY<TAB>maybe / KEY<TAB>no, in input order; exit 1 if any no
    run 1 "$BG" check f.bgf alice zed bob
    eq "$(cat out)" "$(printf 'alice\tmaybe\nzed\tno\nbob\tmaybe')" "default output"
    empty err
    run 0 "$BG" check f.bgf alice bob
    run 0 "$BG" check f.bgf # no keys at all: nothing absent
    empty out
    printf 'alice\nzed\nbob\nyann\n' >q.txt
    run 1 "$BG" check --absent f.bgf <q.txt
    eq "$(cat out)" "$(printf 'zed\nyann')" "--absent"
    run 1 "$BG" check --present f.bgf <q.txt
    eq "$(cat out)" "$(printf 'alice\nbob')" "--present"
    run 1 "$BG" check -c f.bgf <q.txt
    eq "$(cat out)" "$(printf 'keys\t4\nmaybe\t2\nno\t2')" "-c"
    run 1 "$BG" check -c --absent f.bgf <q.txt
    eq "$(cat out)" 2 "-c --absent"
    run 1 "$BG" check --count --present f.bgf <q.txt
    eq "$(cat out)" 2 "-c --present"
    run 1 "$BG" check -q f.bgf <q.txt
    empty out
    empty err
    run 0 "$BG" check --quiet f.bgf alice
    empty out
    run 2 "$BG" check --absent --present f.bgf alice
    has err "exclude each other"
    # -0: NUL-separated input, NUL-terminated output records
    printf 'alice\0zed\0' | run 1 "$BG" check -0 f.bgf
    eq "$(od -An -c out | tr -d '\n' | tr -s ' ')" " a l i c e \t m a y b e \0 z e d \t n o \0" "-0 output"
    # --no-verify answers the same
    run 1 "$BG" check --no-verify f.bgf alice zed
    eq "$(cat out)" "$(printf 'alice\tmaybe\nzed\tno')" "--no-verify"
    # many keys from arguments (more than one batch)
    run 0 "$BG" add -q f.bgf $(seq 1 5000)
    run 0 "$BG" check -c --present f.bgf $(seq 1 5000)
    eq "$(cat out)" 5000 "5000 keys from arguments"
    # output errors are errors
    if [ -w /dev/full ]; then
        local rc=0
        "$BG" check f.bgf alice >/dev/full 2>err || rc=$?
        eq "$rc" 2 "exit status writing to /dev/full"
        has err "bloomgate: standard output: No space left on device"
    fi
}

case_json() {
    run 0 "$BG" create f.bgf -n 1000 -p 0.01 --seed 7 --json
    json_ok out
    eq "$(cat out)" '{"file":"f.bgf","variant":"blocked","capacity":1000,"error_rate":0.008801147784705898,"bits":10240,"hashes":7,"seed":7,"bytes":1280}' "create --json"
    has err "created f.bgf"
    run 0 "$BG" create g.bgf -n 1000 -p 0.01 --json --quiet
    empty err
    run 0 "$BG" add --json f.bgf alice bob alice
    json_ok out
    eq "$(cat out)" '{"file":"f.bgf","keys":3,"new":2,"items":2,"capacity":1000}' "add --json"
    empty err
    run 1 "$BG" check --json f.bgf alice 'q"u\ote' $'nl\nx' bob
    json_ok out
    eq "$(cat out)" '{"file":"f.bgf","results":[
{"key":"alice","maybe":true},
{"key":"q\"u\\ote","maybe":false},
{"key":"nl\nx","maybe":false},
{"key":"bob","maybe":true}
],"keys":4,"maybe":2,"absent":2}' "check --json"
    run 1 "$BG" check --json --absent f.bgf alice zed
    json_ok out
    eq "$(cat out)" '{"file":"f.bgf","results":[
{"key":"zed","maybe":false}
],"keys":2,"maybe":1,"absent":1}' "check --json --absent"
    run 0 "$BG" check --json --absent f.bgf alice
    eq "$(cat out)" '{"file":"f.bgf","results":[],"keys":1,"maybe":1,"absent":0}' "no results"
    run 1 "$BG" check --json -c f.bgf alice zed
    json_ok out
    eq "$(cat out)" '{"file":"f.bgf","keys":2,"maybe":1,"absent":1}' "check --json -c"
    # a check that stops part-way (a key over 16 MiB) closes its document,
    # listing the results so far, with "error"; -c prints nothing
    { echo alice; echo zed; head -c 16777217 /dev/zero | tr '\0' A; echo; echo bob; } >long.txt
    run 2 "$BG" check --json f.bgf <long.txt
    json_ok out
    eq "$(jq -c '[.results, .keys, .maybe, .absent, (.error | test("stopped part-way"))]' out)" \
        '[[{"key":"alice","maybe":true},{"key":"zed","maybe":false}],2,1,1,true]' "check --json that fails"
    has err "key 3 is longer than 16777216 bytes"
    run 2 "$BG" check --json -c f.bgf <long.txt
    empty out
    # bytes that are not UTF-8 become U+FFFD, control bytes \u00XX
    run 1 "$BG" check --json f.bgf $'\xff\x01é'
    json_ok out
    has out '{"key":"'$'\xef\xbf\xbd''\u0001é","maybe":false}'
    run 0 "$BG" info --json f.bgf
    json_ok out
    has out '{"file":"f.bgf","file_bytes":1408,"version":1,"header_bytes":128,"variant":"blocked","hash":"XXH3-128","hash_id":1,"seed":7,"bits":10240,"hashes":7,"capacity":1000,"items":2,"payload_offset":128,"payload_bytes":1280,"error_rate":0.008801147784705898,"bytes":1280,"bits_set":14,"fill_ratio":0.0013671875,"estimated_items":'
    has out '"checksum_status":"ok"}'
    run 0 "$BG" create h.bgf -n 1000 -p 0.01 --seed 7 -q
    run 0 "$BG" add -q h.bgf carol
    run 0 "$BG" merge --json m.bgf f.bgf h.bgf
    json_ok out
    has out '{"file":"m.bgf","inputs":["f.bgf","h.bgf"],"items":3,'
    empty err
}

case_info() {
    run 0 "$BG" create f.bgf -n 5000 -p 0.01 --variant standard --seed 0x2a -q
    keys 1 5000 >in.txt
    run 0 "$BG" add -q f.bgf <in.txt
    run 0 "$BG" info f.bgf
    empty err
    has out "format version:    1"
    has out "variant:           standard"
    has out "hash:              XXH3-128 (id 1)"
    has out "seed:              42 (0x2a)"
    has out "bits (m):          47926"
    has out "hashes (k):        7"
    has out "capacity (n):      5000"
    has out "payload:           5991 bytes"
    has out "at offset 128"
    has out "file size:         $(stat -c %s f.bgf) bytes"
    has out "checksum:          ok (0x"
    local items est
    items=$(awk -F': *' '$1 == "items" { print $2 }' out)
    [ "$items" -ge 4950 ] && [ "$items" -le 5000 ] || fail "items $items"
    est=$(awk -F': *' '$1 == "estimated items" { print $2 }' out)
    [ "$est" -ge 4750 ] && [ "$est" -le 5250 ] || fail "estimated items $est"
    has out "estimated p now:"
    local fill
    fill=$(awk -F': *' '$1 == "fill ratio" { print $2 }' out)
    awk -v f="$fill" 'BEGIN { exit !(f > 0.45 && f < 0.55) }' || fail "fill ratio $fill"
    run 0 "$BG" info --no-verify f.bgf
    has out "checksum:          not verified"
    # flip one payload byte: checksum MISMATCH, the header still printed,
    # status 2, and the message names the file
    cp f.bgf d.bgf
    local b
    b=$(od -An -tu1 -j 1000 -N 1 d.bgf | tr -d ' ')
    printf "$(printf '\\%03o' $((b ^ 0x10)))" | dd of=d.bgf bs=1 seek=1000 conv=notrunc status=none
    run 2 "$BG" info d.bgf
    has out "checksum:          MISMATCH"
    has out "bits (m):          47926"
    has out "seed:              42 (0x2a)"
    has err "bloomgate: d.bgf: checksum mismatch"
    run 2 "$BG" info --json d.bgf
    json_ok out
    has out '"checksum_status":"mismatch"}'
    has out '"bits":47926,'
    has out '"bits_set":null,'
    # --no-verify does not notice (that is what it is for)
    run 0 "$BG" info --no-verify d.bgf
    # a damaged file is refused by every command that verifies
    run 2 "$BG" check d.bgf key-1
    has err "d.bgf: checksum mismatch"
    run 2 "$BG" add d.bgf x
    has err "d.bgf: checksum mismatch"
    run 2 "$BG" merge m.bgf f.bgf d.bgf
    has err "d.bgf: checksum mismatch"
    [ ! -e m.bgf ] || fail "merge wrote m.bgf from a damaged input"
}

case_badfiles() {
    run 0 "$BG" create good.bgf -n 1000 -p 0.01 -q
    head -c 1000 good.bgf >trunc.bgf
    head -c 100 good.bgf >short.bgf
    head -c 1408 /dev/urandom >garbage.bgf
    : >empty.bgf
    cp good.bgf trailing.bgf
    printf 'x' >>trailing.bgf
    mkdir dir.bgf
    local f want
    for f in nope.bgf:"No such file or directory" trunc.bgf:"file is truncated" \
        short.bgf:"file is truncated" garbage.bgf:"not a bloomgate filter file" \
        empty.bgf:"" trailing.bgf:"trailing bytes" dir.bgf:"Is a directory"; do
        want=${f#*:}
        f=${f%%:*}
        for cmd in "info $f" "check $f k" "check --no-verify $f k" "add $f k" \
            "merge out.bgf good.bgf $f" "merge out.bgf $f good.bgf"; do
            cp "$f" before 2>/dev/null || true
            run 2 "$BG" $cmd
            has err "bloomgate: $f: "
            has err "$want"
            empty out
            [ ! -e out.bgf ] || fail "$cmd wrote out.bgf"
            if [ -f "$f" ]; then same "$f" before; fi
        done
    done
    no_temp_files
}

case_create() {
    run 0 "$BG" create f.bgf -n 1000 -p 0.01
    cp f.bgf orig.bgf
    run 0 "$BG" add -q f.bgf alice
    cp f.bgf added.bgf
    # an existing file is never replaced without --force
    run 2 "$BG" create f.bgf -n 1000 -p 0.01
    has err "bloomgate: f.bgf: already exists (use --force to replace it)"
    same f.bgf added.bgf
    run 2 "$BG" create f.bgf -n 50 -p 0.1 --variant standard
    same f.bgf added.bgf
    # nor any other file
    echo precious >notes.txt
    run 2 "$BG" create notes.txt -n 10 -p 0.1
    eq "$(cat notes.txt)" precious "notes.txt"
    # --force replaces it with an empty filter
    run 0 "$BG" create --force f.bgf -n 1000 -p 0.01
    same f.bgf orig.bgf
    run 1 "$BG" check -q f.bgf alice
    # the options reach the file
    run 0 "$BG" create s.bgf -n 2000 -p 0.001 --variant standard --seed 99 -q
    run 0 "$BG" info --json s.bgf
    eq "$(jget out variant)" '"standard"' variant
    eq "$(jget out seed)" 99 seed
    eq "$(jget out capacity)" 2000 capacity
    eq "$(jget out items)" 0 items
    run 0 "$BG" calc -n 2000 -p 0.001 --variant standard --json
    eq "$(jget out m)" "$(jget <("$BG" info --json s.bgf) bits)" "m as calc says"
    run 0 "$BG" create mk.bgf -m 4096 -k 3 -q
    run 0 "$BG" info --json mk.bgf
    eq "$(jget out bits)" 4096 "m given"
    eq "$(jget out hashes)" 3 "k given"
    # errors: a directory that does not exist, sizes the library refuses
    run 2 "$BG" create no/such/dir/f.bgf -n 10 -p 0.1
    has err "no/such/dir/f.bgf"
    run 2 "$BG" create k9.bgf -n 1000 -p 0.01 -k 9 --variant blocked
    has err "k9.bgf: cannot create a blocked filter: k = 9"
    [ ! -e k9.bgf ] || fail "refused create left k9.bgf"
    no_temp_files
}

case_merge() {
    keys 1 3000 a >a.txt
    keys 2001 5000 a >b.txt # 1000 keys in common with a.txt
    keys 10001 20000 a >none.txt
    for f in a b; do
        run 0 "$BG" create $f.bgf -n 10000 -p 0.001 --seed 5 -q
        run 0 "$BG" add -q $f.bgf <$f.txt
    done
    cp a.bgf a.orig
    cp b.bgf b.orig
    run 0 "$BG" merge u.bgf a.bgf b.bgf
    has err "u.bgf: union of 2 files"
    run 0 "$BG" check -q u.bgf <a.txt
    run 0 "$BG" check -q u.bgf <b.txt
    run 1 "$BG" check -c --present u.bgf <none.txt
    [ "$(cat out)" -le 100 ] || fail "union: $(cat out) of 10000 absent keys maybe"
    same a.bgf a.orig
    same b.bgf b.orig
    # the union of two filters is the filter of the union of their keys
    run 0 "$BG" create ab.bgf -n 10000 -p 0.001 --seed 5 -q
    cat a.txt b.txt | run 0 "$BG" add -q ab.bgf
    run 0 "$BG" check -q ab.bgf <a.txt
    cmp -s <(tail -c +129 ab.bgf) <(tail -c +129 u.bgf) || fail "union payload != payload of all keys"
    # intersection: the common keys stay; the others mostly go
    run 0 "$BG" intersect i.bgf a.bgf b.bgf
    has err "i.bgf: intersection of 2 files"
    keys 2001 3000 a | run 0 "$BG" check -q i.bgf
    keys 1 2000 a | run 1 "$BG" check -c --present i.bgf
    [ "$(cat out)" -le 100 ] || fail "intersection kept $(cat out) of 2000 keys only in a"
    # OUT may be an input
    run 0 "$BG" merge a.bgf a.bgf b.bgf
    run 0 "$BG" check -q a.bgf <b.txt
    cp a.orig a.bgf
    # an existing OUT that is not an input is not replaced without --force
    cp u.bgf keep.bgf
    run 2 "$BG" merge keep.bgf a.bgf b.bgf
    has err "keep.bgf: already exists and is not one of the inputs"
    same keep.bgf u.bgf
    run 0 "$BG" merge --force keep.bgf a.bgf a.bgf
    same <(tail -c +129 keep.bgf) <(tail -c +129 a.bgf)
    # three inputs
    run 0 "$BG" create c.bgf -n 10000 -p 0.001 --seed 5 -q
    run 0 "$BG" add -q c.bgf only-in-c
    run 0 "$BG" merge abc.bgf a.bgf b.bgf c.bgf
    run 0 "$BG" check -q abc.bgf only-in-c a-1 a-5000
    # incompatible inputs: nothing written, and the message says what differs
    run 0 "$BG" create seed.bgf -n 10000 -p 0.001 --seed 6 -q
    run 0 "$BG" create k.bgf -m "$(jget <("$BG" info --json a.bgf) bits)" -k 3 --seed 5 -q
    run 0 "$BG" create m.bgf -n 20000 -p 0.001 --seed 5 -q
    run 0 "$BG" create v.bgf -n 10000 -p 0.001 --seed 5 --variant standard -q
    local m_a m_m
    m_a=$(jget <("$BG" info --json a.bgf) bits)
    m_m=$(jget <("$BG" info --json m.bgf) bits)
    for cmd in merge intersect; do
        run 2 "$BG" $cmd x.bgf a.bgf seed.bgf
        has err "$cmd: a.bgf and seed.bgf are incompatible: seed is 5 in a.bgf but 6 in seed.bgf"
        run 2 "$BG" $cmd x.bgf a.bgf k.bgf
        has err "k is 8 in a.bgf but 3 in k.bgf"
        run 2 "$BG" $cmd x.bgf a.bgf m.bgf
        has err "m is $m_a in a.bgf but $m_m in m.bgf"
        run 2 "$BG" $cmd x.bgf a.bgf v.bgf
        has err "variant is blocked in a.bgf but standard in v.bgf"
        has err "nothing written"
        [ ! -e x.bgf ] || fail "$cmd of incompatible inputs wrote x.bgf"
        # into an input: that input is unchanged
        run 2 "$BG" $cmd a.bgf a.bgf b.bgf seed.bgf
        same a.bgf a.orig
        # a missing input, first or later: the same two lines
        run 2 "$BG" $cmd x.bgf nope.bgf a.bgf
        has err "nope.bgf: cannot open: No such file or directory"
        has err "x.bgf: nothing written"
        run 2 "$BG" $cmd x.bgf a.bgf nope.bgf
        has err "nope.bgf: cannot open: No such file or directory"
        has err "x.bgf: nothing written"
    done
    no_temp_files
}

case_crash() {
    # An add that fails leaves the file exactly as it was.
    run 0 "$BG" create f.bgf -n 100000 -p 0.01 -q
    run 0 "$BG" add -q f.bgf before
    cp f.bgf orig.bgf
    # 1. a key over the 16 MiB limit, after keys that were fine
    { keys 1 10000; head -c $((16 * 1024 * 1024 + 1)) /dev/zero | tr '\0' k; } >long.txt
    run 2 "$BG" add f.bgf <long.txt
    has err "add: standard input: key 10001 is longer than 16777216 bytes (the limit)"
    has err "f.bgf: not changed"
    same f.bgf orig.bgf
    run 1 "$BG" check -q f.bgf key-1
    # ... while a key of exactly 16 MiB is fine
    { head -c $((16 * 1024 * 1024)) /dev/zero | tr '\0' k; echo; echo after; } >max.txt
    run 0 "$BG" add -q f.bgf <max.txt
    head -c $((16 * 1024 * 1024)) /dev/zero | tr '\0' k | run 0 "$BG" check -q f.bgf
    cp orig.bgf f.bgf
    # 2. the save fails (file size limit: the temporary file cannot be
    #    written): status 2, file unchanged, no temporary file left
    local limit=$(($(stat -c %s f.bgf) / 2048)) # ulimit -f counts KiB
    run 2 bash -c "ulimit -f $limit; trap '' XFSZ; exec \"\$0\" add f.bgf new-key" "$BG"
    has err "bloomgate: f.bgf: cannot save: File too large"
    same f.bgf orig.bgf
    no_temp_files
    # 3. the input fails to read (stdin is a directory)
    run 2 "$BG" add f.bgf <.
    has err "add: standard input: Is a directory"
    same f.bgf orig.bgf
    # 4. killed while reading its input: the file is as it was. The kill
    #    lands while the add is in flight, which the case checks: it has
    #    read every key written so far and waits for more (add_in_flight),
    #    and it dies of the signal.
    mkfifo fifo
    keys 1 50000 >k50000.txt
    keys 1 1000 >k1000.txt
    local pid rc
    add_in_flight k50000.txt
    kill -KILL "$pid" || fail "the add ended before the kill"
    rc=0
    wait "$pid" 2>/dev/null || rc=$?
    eq "$rc" 137 "exit status of the add killed in flight (SIGKILL)"
    exec 3>&-
    same f.bgf orig.bgf
    # 5. terminated (SIGTERM, SIGHUP) while reading: the same. (Not SIGINT:
    #    a non-interactive shell starts background commands with it ignored.)
    local sig want
    for sig in TERM HUP; do
        add_in_flight k1000.txt
        kill -"$sig" "$pid" || fail "the add ended before SIG$sig"
        rc=0
        wait "$pid" 2>/dev/null || rc=$?
        want=$((128 + $(kill -l "$sig")))
        eq "$rc" "$want" "exit status of the add ended in flight (SIG$sig)"
        exec 3>&-
        same f.bgf orig.bgf
    done
    no_temp_files
}

case_targets() {
    # 1. SIGTERM at any moment of a create (no --force) of a 100 MB filter:
    #    the signal is held from the save to the move into place, so the
    #    file is either complete or absent, and no temporary file is left.
    local d
    for d in 0.02 0.05 0.1 0.2 0.4; do
        rm -f big.bgf
        "$BG" create big.bgf -m 8e8 -k 3 --variant standard -q &
        local pid=$!
        sleep "$d"
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        no_temp_files
        if [ -e big.bgf ]; then run 0 "$BG" info big.bgf; fi
    done
    rm -f big.bgf
    # 2. a target that is not a regular file is refused, even with --force,
    #    and left as it was
    run 0 "$BG" create a.bgf -n 1000 -p 0.01 -q
    mkfifo fifo
    run 2 "$BG" create fifo -n 1000 -p 0.01 --force
    has err "fifo: cannot save: not a regular file"
    [ -p fifo ] || fail "create --force replaced a FIFO"
    run 2 "$BG" merge -f fifo a.bgf a.bgf
    [ -p fifo ] || fail "merge -f replaced a FIFO"
    run 2 "$BG" check fifo key
    has err "fifo: cannot open: not a regular file"
    if mknod dev c 1 3 2>/dev/null; then # /dev/null's numbers; needs root
        run 2 "$BG" merge -f dev a.bgf a.bgf
        [ -c dev ] || fail "merge -f replaced a device node"
    fi
    mkdir dir.bgf
    run 2 "$BG" create dir.bgf -n 1000 -p 0.01 --force
    has err "dir.bgf: cannot save: Is a directory"
    [ -d dir.bgf ] || fail "create --force replaced a directory"
    # 3. a replaced file keeps its owner, group and mode (owner: as root)
    chmod 640 a.bgf
    if [ "$(id -u)" -eq 0 ]; then chown 65534:65534 a.bgf; fi
    local before
    before=$(stat -c '%u:%g %a' a.bgf)
    run 0 "$BG" add -q a.bgf k1
    eq "$(stat -c '%u:%g %a' a.bgf)" "$before" "owner, group and mode after add"
    run 0 "$BG" merge -f -q a.bgf a.bgf a.bgf
    eq "$(stat -c '%u:%g %a' a.bgf)" "$before" "owner, group and mode after merge"
    run 0 "$BG" check -q a.bgf k1
    # 4. a name as long as the file system allows (255 bytes) can be
    #    created and updated: the temporary names are cut short
    local long
    long=$(printf 'n%.0s' $(seq 1 251)).bgf
    run 0 "$BG" create "$long" -n 1000 -p 0.01 -q
    run 0 "$BG" add -q "$long" k1
    run 0 "$BG" create "$long" -n 1000 -p 0.01 -q --force
    run 1 "$BG" check -q "$long" k1
    no_temp_files
    # 5. a path as long as the system allows (PATH_MAX - 1 = 4095 bytes):
    #    the temporary files beside it are made relative to its directory,
    #    or named within PATH_MAX, so create, add and create --force work
    local deep="$T"
    local c
    while [ $((4094 - ${#deep})) -gt 101 ]; do # directories, then a 100-byte name
        c=$((4094 - ${#deep} - 102))
        if [ "$c" -gt 250 ]; then c=250; fi
        deep="$deep/$(printf 'd%.0s' $(seq 1 "$c"))"
    done
    mkdir -p "$deep"
    local far
    far="$deep/$(printf 'f%.0s' $(seq 1 $((4095 - ${#deep} - 1))))"
    eq "${#far}" 4095 "the long path's length"
    run 0 "$BG" create "$far" -n 1000 -p 0.01 -q
    run 0 "$BG" add -q "$far" k1
    run 0 "$BG" check -q "$far" k1
    run 0 "$BG" create "$far" -n 1000 -p 0.01 -q --force
    run 1 "$BG" check -q "$far" k1
    eq "$(find "$deep" -mindepth 1 | wc -l)" 1 "files beside the long path"
}

case_progress() {
    run 0 "$BG" create f.bgf -n 100000 -p 0.01 -q
    cp f.bgf g.bgf
    # stderr is not a terminal here: no progress line, only the summary
    (keys 1 5000; sleep 0.4; keys 5001 10000) | run 0 "$BG" add f.bgf
    hasnt err "keys/s"
    hasnt err $'\r'
    eq "$(wc -l <err)" 1 "summary lines"
    # on a terminal (script(1) gives the command a pty): the line appears,
    # with a count and a rate, and is cleared before the summary
    command -v script >/dev/null || { echo "SKIP: no script(1)"; return 0; }
    local cmd="(seq 1 5000; sleep 0.4; seq 5001 10000) | '$BG' add g.bgf"
    script -qec "$cmd" /dev/null </dev/null >tty.txt 2>&1 || fail "add under script: $(cat tty.txt)"
    has tty.txt "bloomgate add g.bgf: "
    has tty.txt " keys/s"
    has tty.txt $'\r\e[K' # cleared
    has tty.txt "g.bgf: 10000 keys read"
    # --quiet: nothing at all
    cmd="(seq 1 5000; sleep 0.4; seq 5001 10000) | '$BG' add -q g.bgf"
    script -qec "$cmd" /dev/null </dev/null >tty.txt 2>&1 || fail "add -q under script"
    empty tty.txt
    # check too, and its stdout stays clean of progress
    cmd="(seq 1 5000; sleep 0.4; seq 5001 10000) | '$BG' check -c g.bgf 2>err.txt"
    script -qec "$cmd" /dev/null </dev/null >tty.txt 2>&1 || fail "check under script"
    has tty.txt $'keys\t10000'
    hasnt tty.txt "keys/s"
    run 0 "$BG" create h.bgf -n 100000 -p 0.01 -q
    cmd="(seq 1 5000; sleep 0.4; seq 5001 10000) | '$BG' check -c g.bgf >out.txt"
    script -qec "$cmd" /dev/null </dev/null >tty.txt 2>&1 || fail "check under script"
    has tty.txt "bloomgate check g.bgf: "
    eq "$(cat out.txt)" "$(printf 'keys\t10000\nmaybe\t10000\nno\t0')" "check -c output"
}

case_counting() {
    # calc: the counting row has the standard row's m and k, 4x the bytes
    run 0 "$BG" calc -n 1000 -p 0.01
    eq "$(awk '$1 == "counting" { print $2, $3, $4, $5 }' out)" "1000 9586 7 4793" "counting row"
    has out "(counting: m counts 4-bit counters"
    run 0 "$BG" calc -n 1000 -p 0.01 --variant counting --json
    json_ok out
    has out '{"variant":"counting","n":1000,"m":9586,"k":7,"bytes":4793,"cell_bits":4,"bits_per_key":38.344,'
    # create: same m and k as standard, 4 bits per counter
    run 0 "$BG" create c.bgf -n 1000 -p 0.01 --variant counting --json
    json_ok out
    eq "$(jget out variant)" '"counting"' variant
    eq "$(jget out bits)" 9586 "m (counters)"
    eq "$(jget out hashes)" 7 k
    eq "$(jget out bytes)" 4800 "bytes: 9586 counters of 4 bits, in 64-bit words"
    has err "created c.bgf: counting, m = 9586 4-bit counters"
    eq "$(stat -c %s c.bgf)" $((128 + 4793)) "file size: header and ceil(4 m / 8) bytes"
    # add, then remove half: the removed keys become absent, the others stay
    keys 1 1000 k >in.txt
    keys 1 500 k >gone.txt
    keys 501 1000 k >kept.txt
    run 0 "$BG" add -q c.bgf <in.txt
    run 0 "$BG" check -q c.bgf <in.txt
    run 0 "$BG" remove --json c.bgf <gone.txt
    json_ok out
    eq "$(jget out keys)" 500 "keys read"
    eq "$(jget out removed)" 500 "removed"
    eq "$(jget out absent)" 0 "absent"
    eq "$(jget out changed)" true "changed"
    run 0 "$BG" check -q c.bgf <kept.txt
    # at p ~ 1% with half the keys left, a removed key still "maybe" is a
    # false positive: a handful at most
    run 1 "$BG" check -c --present c.bgf <gone.txt
    [ "$(cat out)" -le 25 ] || fail "$(cat out) of 500 removed keys still maybe"
    run 0 "$BG" info --json c.bgf
    json_ok out
    local items
    items=$(jget out items)
    [ "$items" -ge 490 ] && [ "$items" -le 500 ] || fail "items after removing 500 of 1000: $items"
    eq "$(jget out saturated)" 0 "saturated counters"
    # a key that is definitely absent is reported, not an error, and the
    # file changes only by the keys that were present
    cp c.bgf before.bgf
    run 0 "$BG" remove c.bgf k-501 never-added
    has err "c.bgf: 2 keys read, 1 removed, 1 definitely absent"
    run 1 "$BG" check -q c.bgf k-501
    # --strict: all or nothing, status 1, file unchanged
    cp c.bgf before.bgf
    run 1 "$BG" remove --strict c.bgf k-502 never-added k-503
    has err "c.bgf: 1 of 3 keys are definitely absent (the first: key 2); --strict: not changed"
    same c.bgf before.bgf
    run 0 "$BG" check -q c.bgf k-502 k-503
    run 1 "$BG" remove --strict --json c.bgf never-added
    json_ok out
    eq "$(jget out changed)" false "--strict --json changed"
    run 0 "$BG" remove --strict -q c.bgf k-502 k-503
    empty err
    run 1 "$BG" check -q c.bgf k-502
    # keys from stdin like add: -0, empty keys, '--'
    printf 'x\0\0-y\0' >nul.txt
    run 0 "$BG" add -q -0 c.bgf <nul.txt
    run 0 "$BG" check -q c.bgf -- x '' -y
    run 0 "$BG" remove -q -0 c.bgf <nul.txt
    run 1 "$BG" check -q c.bgf x
    run 1 "$BG" check -q c.bgf ''
    run 1 "$BG" check -q c.bgf -- -y
    run 0 "$BG" add -q c.bgf -- -z
    run 0 "$BG" remove -q c.bgf -- -z
    run 1 "$BG" check -q c.bgf -- -z
    # a remove that fails leaves the file as it was
    cp c.bgf before.bgf
    { keys 501 600 k; head -c $((16 * 1024 * 1024 + 1)) /dev/zero | tr '\0' k; } >long.txt
    run 2 "$BG" remove c.bgf <long.txt
    has err "remove: standard input: key 101 is longer than 16777216 bytes (the limit)"
    has err "c.bgf: not changed"
    same c.bgf before.bgf
    run 2 "$BG" remove c.bgf <.
    has err "remove: standard input: Is a directory"
    same c.bgf before.bgf
    local limit=$(($(stat -c %s c.bgf) / 2048)) # ulimit -f counts KiB
    run 2 bash -c "ulimit -f $limit; trap '' XFSZ; exec \"\$0\" remove c.bgf k-600" "$BG"
    has err "bloomgate: c.bgf: cannot save: File too large"
    same c.bgf before.bgf
    run 0 "$BG" check -q c.bgf k-600
    # other variants cannot remove: refused before reading a key
    for v in blocked standard; do
        run 0 "$BG" create $v.bgf -n 1000 -p 0.01 --variant $v -q
        run 0 "$BG" add -q $v.bgf a b
        cp $v.bgf before.bgf
        run 2 "$BG" remove $v.bgf a
        has err "bloomgate: $v.bgf: not a counting filter (variant $v); only counting filters can remove keys"
        same $v.bgf before.bgf
    done
    run 2 "$BG" remove nope.bgf a
    has err "nope.bgf: cannot load: No such file or directory"
    # counters saturate at 15 and then never go down: 20 adds of one key,
    # 20 removes, and the key is still there (its counters are stuck)
    run 0 "$BG" create sat.bgf -m 1000 -k 3 --variant counting -q
    for _ in $(seq 20); do printf 'hot\n'; done >hot.txt
    run 0 "$BG" add -q sat.bgf <hot.txt
    run 0 "$BG" info sat.bgf
    has out "counters (m):      1000 (4 bits each)"
    has out "saturated:         3 (counters at 15"
    run 0 "$BG" remove --json sat.bgf <hot.txt
    eq "$(jget out removed)" 20 "removes of a saturated key"
    run 0 "$BG" check -q sat.bgf hot
    # an odd m: the last byte holds one counter
    run 0 "$BG" create odd.bgf -m 101 -k 3 --variant counting -q
    eq "$(stat -c %s odd.bgf)" $((128 + 51)) "m = 101: 51 payload bytes"
    run 0 "$BG" add -q odd.bgf $(seq 1 20)
    run 0 "$BG" remove -q odd.bgf $(seq 1 10)
    run 0 "$BG" check -q odd.bgf $(seq 11 20)
    run 0 "$BG" info odd.bgf
    no_temp_files
}

case_scalable() {
    # scalable options are usage errors with other variants, and -m/-k with it
    run 2 "$BG" create x.bgf -n 1000 -p 0.01 --expansion 4
    has err "--expansion applies to --variant scalable only"
    run 2 "$BG" create x.bgf -n 1000 -p 0.01 --variant counting --nonscaling
    has err "--nonscaling applies to --variant scalable only"
    run 2 "$BG" create x.bgf -n 1000 -p 0.01 --variant blocked --max-layers 3
    has err "--max-layers applies to --variant scalable only"
    run 2 "$BG" create x.bgf -m 10000 -k 3 --variant scalable
    has err "--variant scalable is sized by -n and -p"
    run 2 "$BG" create x.bgf -n 1000 --variant scalable
    has err "--variant scalable needs -n (the first layer's capacity) and -p"
    run 2 "$BG" create x.bgf -n 1000 -p 0.01 --variant scalable --nonscaling --expansion 4
    has err "--nonscaling makes one layer that never grows"
    run 2 "$BG" create x.bgf -n 1000 -p 0.01 --variant scalable --layer-variant counting
    has err "--layer-variant: 'counting' is not a layer variant (standard or blocked)"
    run 2 "$BG" create x.bgf -n 1000 -p 0.01 --variant scalable --expansion 0
    has err "--expansion: '0' is too small (at least 1)"
    run 2 "$BG" create x.bgf -n 1000 -p 0.01 --variant scalable --expansion 32769
    has err "--expansion: '32769' is too large (at most 32768)"
    run 2 "$BG" create x.bgf -n 1000 -p 0.01 --variant scalable --max-layers 65
    has err "--max-layers: '65' is too large (at most 64)"
    run 2 "$BG" create x.bgf -n 1000 -p 0.01 --variant scalable --tightening 1
    has err "--tightening: '1' is not between 0 and 1"
    [ ! -e x.bgf ] || fail "a refused create wrote x.bgf"
    run 2 "$BG" calc -n 1000 -p 0.01 --variant scalable
    has err "a scalable filter is not sized as a whole"
    # create: the parameters in the summary and the JSON
    run 0 "$BG" create s.bgf -n 1000 -p 0.01 --variant scalable --json
    json_ok out
    eq "$(jget out variant)" '"scalable"' variant
    eq "$(jget out capacity)" 1000 "first layer's capacity"
    eq "$(jget out error_rate)" 0.01 "p asked"
    eq "$(jget out layer_variant)" '"standard"' "layer variant"
    eq "$(jget out expansion)" 2 expansion
    eq "$(jget out tightening)" 0.5 tightening
    eq "$(jget out max_layers)" 64 "max layers"
    eq "$(jget out nonscaling)" false nonscaling
    eq "$(jget out layers)" 1 layers
    has err "created s.bgf: scalable, standard layers; layer 0: "
    has err "grows x2 per layer (error rate x0.5), up to 64 layers"
    # 100 times the first layer's capacity: it grows, and forgets nothing
    keys 1 100000 u >in.txt
    keys 100001 200000 u >absent.txt
    cp s.bgf s0.bgf
    run 0 "$BG" add s.bgf <in.txt
    has err "s.bgf: 100000 keys read"
    has err " layers (capacity "
    run 0 "$BG" add --json s.bgf <in.txt
    json_ok out
    eq "$(jget out new)" 0 "new keys on a second add"
    local layers
    layers=$(jget out layers)
    [ "$layers" -ge 7 ] && [ "$layers" -le 8 ] || fail "layers after 100x growth: $layers"
    run 0 "$BG" check -c s.bgf <in.txt
    eq "$(cat out)" "$(printf 'keys\t100000\nmaybe\t100000\nno\t0')" "no false negatives"
    run 0 "$BG" check -q --no-verify s.bgf <in.txt
    # the whole stack keeps below p = 0.01
    run 1 "$BG" check -c --present s.bgf <absent.txt
    [ "$(cat out)" -le 1200 ] || fail "false positives $(cat out) of 100000 at p = 0.01"
    # info: the scaling parameters and one row per layer, plus totals
    run 0 "$BG" info s.bgf
    empty err
    has out "variant:           scalable"
    has out "layer variant:     standard"
    has out "scaling:           capacity x2 and error rate x0.5 per layer"
    has out "layers:            $layers"
    eq "$(awk '$1 ~ /^[0-9]+$/ && $2 == "standard"' out | wc -l)" "$layers" "layer rows"
    has out "total"
    run 0 "$BG" info --json s.bgf
    json_ok out
    eq "$(jq '.layers | length' out)" "$layers" "layers array"
    eq "$(jq '.layer_count' out)" "$layers" "layer_count"
    eq "$(jq '[.layers[].capacity] | .[0:3] | join(",")' out)" '"1000,2000,4000"' "capacities x2"
    eq "$(jq '[.layers[].items] | add' out)" "$(jq .items out)" "items: the layers' sum"
    eq "$(jq '[.layers[].bits] | add' out)" "$(jq .bits out)" "bits: the layers' sum"
    eq "$(jq '.layers[0].items' out)" 1000 "the first layer holds its capacity"
    jq -e '[.layers[].error_rate] | (.[1] < .[0]) and (.[2] < .[1])' out >/dev/null ||
        fail "layer error rates do not tighten"
    jq -e '.layers | all(.variant == "standard" and .hashes > 0 and .bytes > 0 and .fill_ratio > 0)' out >/dev/null ||
        fail "layer fields"
    eq "$(jq -r '.checksum_status' out)" ok "checksum"
    # damaged: the header (with its growth parameters) is still shown
    cp s.bgf d.bgf
    local b
    b=$(od -An -tu1 -j 300 -N 1 d.bgf | tr -d ' ')
    printf "$(printf '\\%03o' $((b ^ 0x10)))" | dd of=d.bgf bs=1 seek=300 conv=notrunc status=none
    run 2 "$BG" info d.bgf
    has out "checksum:          MISMATCH"
    has out "layers:            $layers"
    has out "scaling:           capacity x2 and error rate x0.5 per layer"
    has err "d.bgf: checksum mismatch"
    run 2 "$BG" info --json d.bgf
    json_ok out
    eq "$(jq -c '[.layer_count, .layers, .expansion, .error_rate, .checksum_status]' out)" \
        "[$layers,null,2,0.01,\"mismatch\"]" "damaged scalable JSON"
    run 2 "$BG" check d.bgf u-1
    has err "d.bgf: checksum mismatch"
    run 2 "$BG" add d.bgf u-1
    has err "d.bgf: checksum mismatch"
    # blocked layers, expansion 4
    run 0 "$BG" create b.bgf -n 1000 -p 0.001 --variant scalable --layer-variant blocked --expansion 4 -q
    run 0 "$BG" add -q b.bgf <in.txt
    run 0 "$BG" check -q b.bgf <in.txt
    run 0 "$BG" info --json b.bgf
    jq -e '.layers | all(.variant == "blocked")' out >/dev/null || fail "blocked layers"
    eq "$(jq '[.layers[].capacity] | .[0:3] | join(",")' out)" '"1000,4000,16000"' "capacities x4"
    # a first blocked layer below the blocked variant's least rate, 1e-12:
    # the message names the rate it would get
    run 2 "$BG" create bp.bgf -n 1000 -p 1e-12 --variant scalable --layer-variant blocked
    has err "p = 1e-12: its first layer's rate, p (1 - tightening) = 5e-13, is below 1e-12"
    [ ! -e bp.bgf ] || fail "a refused create made bp.bgf"
    run 0 "$BG" create bp.bgf -n 1000 -p 1e-12 --variant scalable --layer-variant blocked --nonscaling -q
    # non-scaling: full is an error naming the file, and nothing is saved
    run 0 "$BG" create n.bgf -n 1000 -p 0.01 --variant scalable --nonscaling --json
    eq "$(jget out nonscaling)" true nonscaling
    has err "non-scaling"
    keys 1 1000 u | run 0 "$BG" add -q n.bgf
    cp n.bgf before.bgf
    run 2 "$BG" add n.bgf <in.txt
    # (the key number is the first key the filter found new: a key that is a
    # false positive of the full layer is "already there", and skipped)
    has err "bloomgate: n.bgf: cannot add (key 10"
    has err "): the filter is full: it is non-scaling and holds its capacity of 1000 keys"
    has err "n.bgf: not changed"
    same n.bgf before.bgf
    # ... while keys it already has are not new, and fine
    keys 1 1000 u | run 0 "$BG" add -q n.bgf
    same n.bgf before.bgf
    # the most layers: the add that needs one more fails, file unchanged
    run 0 "$BG" create l.bgf -n 1000 -p 0.01 --variant scalable --max-layers 2 -q
    cp l.bgf before.bgf
    run 2 "$BG" add l.bgf <in.txt
    has err "bloomgate: l.bgf: cannot add (key 30"
    has err "): the filter cannot grow: it has 2 layers, the most it was created with (--max-layers 2)"
    has err "l.bgf: not changed"
    same l.bgf before.bgf
    # blocked layers stop at the rate they cannot deliver (layer 33 here),
    # below --max-layers: the message names that limit, not --max-layers
    run 0 "$BG" create bl.bgf -n 10 -p 0.01 --variant scalable --layer-variant blocked \
        --expansion 1 -q
    cp bl.bgf before.bgf
    seq 1 1000 | run 2 "$BG" add bl.bgf
    has err "the filter cannot grow: after 33 layers, the next layer's error rate would be below 1e-12, the least a blocked layer can deliver"
    has err "recreate it with --layer-variant standard"
    hasnt err "--max-layers"
    same bl.bgf before.bgf
    # the byte cap: the same
    run 0 "$BG" create m.bgf -n 1000 -p 0.01 --variant scalable --max-bytes 8000 --json -q
    eq "$(jget out max_bytes)" 8000 "max bytes"
    cp m.bgf before.bgf
    run 2 "$BG" add m.bgf <in.txt
    has err "bloomgate: m.bgf: cannot add (key "
    has err "past their cap of 8000 bytes"
    same m.bgf before.bgf
    run 2 "$BG" create big.bgf -n 1e6 -p 0.01 --variant scalable --max-bytes 1000
    has err "big.bgf: cannot create a scalable filter: its first layer would need more than 1000 bytes (--max-bytes)"
    [ ! -e big.bgf ] || fail "refused create left big.bgf"
    # merge and intersect refuse scalable filters; remove too
    cp s0.bgf t.bgf
    for cmd in merge intersect; do
        run 2 "$BG" $cmd out.bgf s.bgf t.bgf
        has err "a scalable filter cannot be"
        has err "nothing written"
        [ ! -e out.bgf ] || fail "$cmd of scalable filters wrote out.bgf"
    done
    run 0 "$BG" create plain.bgf -n 1000 -p 0.01 -q
    run 2 "$BG" merge out.bgf plain.bgf s.bgf
    has err "merge: s.bgf: a scalable filter cannot be merged"
    cp s.bgf before.bgf
    run 2 "$BG" remove s.bgf u-1
    has err "s.bgf: not a counting filter (variant scalable)"
    same s.bgf before.bgf
    no_temp_files
}

case_variants() {
    # every variant: create, add, check, info, and the same answers from
    # check with and without --no-verify
    keys 1 2000 v >in.txt
    local v
    for v in standard blocked counting scalable; do
        run 0 "$BG" create $v.bgf -n 1000 -p 0.01 --variant $v --seed 3 -q
        run 0 "$BG" add -q $v.bgf <in.txt
        run 0 "$BG" check -q $v.bgf <in.txt
        run 0 "$BG" check -q --no-verify $v.bgf <in.txt
        run 1 "$BG" check $v.bgf v-1 nope-1
        eq "$(cat out)" "$(printf 'v-1\tmaybe\nnope-1\tno')" "$v: check output"
        run 0 "$BG" info $v.bgf
        has out "variant:           $v"
        run 0 "$BG" info --json $v.bgf
        json_ok out
        eq "$(jq -r .variant out)" "$v" "$v: info variant"
        case $v in
        counting) jq -e 'has("saturated") and (has("layers") | not)' out >/dev/null || fail "$v JSON fields" ;;
        scalable) jq -e 'has("layers") and (has("saturated") | not)' out >/dev/null || fail "$v JSON fields" ;;
        *) jq -e '(has("layers") | not) and (has("saturated") | not)' out >/dev/null || fail "$v JSON fields" ;;
        esac
    done
    # counting union is the counter-wise sum: a key in both inputs, removed
    # once from the union, is still there; intersection is the minimum
    for f in a b; do
        run 0 "$BG" create $f.bgf -n 1000 -p 0.001 --variant counting --seed 5 -q
    done
    run 0 "$BG" add -q a.bgf both only-a
    run 0 "$BG" add -q b.bgf both only-b
    run 0 "$BG" merge u.bgf a.bgf b.bgf
    run 0 "$BG" check -q u.bgf both only-a only-b
    run 0 "$BG" remove -q u.bgf both
    run 0 "$BG" check -q u.bgf both
    run 0 "$BG" remove -q u.bgf both
    run 1 "$BG" check -q u.bgf both
    run 0 "$BG" intersect i.bgf a.bgf b.bgf
    run 0 "$BG" check -q i.bgf both
    run 1 "$BG" check -q i.bgf only-a
    run 1 "$BG" check -q i.bgf only-b
    run 0 "$BG" remove -q i.bgf both
    run 1 "$BG" check -q i.bgf both
    # counting and standard of the same m and k do not mix
    run 0 "$BG" create s.bgf -n 1000 -p 0.001 --variant standard --seed 5 -q
    run 2 "$BG" merge x.bgf a.bgf s.bgf
    has err "variant is counting in a.bgf but standard in s.bgf"
    [ ! -e x.bgf ] || fail "merge of counting and standard wrote x.bgf"
    no_temp_files
}

fn="case_$CASE"
declare -F "$fn" >/dev/null || { echo "no such case: $CASE" >&2; exit 1; }
"$fn"
echo "ok: cli.$CASE"
