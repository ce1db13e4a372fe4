# SPDX-License-Identifier: BSD-3-Clause
# Cases of cli_test.sh: the commands that need no filter file (help, calc,
# bench) and the parsing of numbers.
# Sourced by cli_test.sh, which defines the assertions and helpers they use
# and runs one case_<name> per ctest test (cli.<name>).

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
    # The newest format this build writes, as <bloomgate/file.h> says.
    local format
    format=$(sed -n 's/^#define BG_FILE_VERSION \([0-9]*\)u$/\1/p' \
        "$HERE/../../include/bloomgate/file.h")
    [ -n "$format" ] || fail "no BG_FILE_VERSION in include/bloomgate/file.h"
    has out "file format $format"
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
    for opt in --expansion --max-layers --layer-variant --tightening --first-share \
        --blocked-from --max-bytes --nonscaling; do
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
