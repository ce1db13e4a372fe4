#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs a libFuzzer target for ctest (tests/fuzz/CMakeLists.txt).
#
#   run.sh corpus TARGET MAKE_CORPUS ARTIFACTS SECONDS MAX_LEN
#       generates the seed corpus and runs every seed through TARGET once
#   run.sh fuzz   TARGET MAKE_CORPUS ARTIFACTS SECONDS MAX_LEN
#       the same, then fuzzes for SECONDS (FUZZ_SECONDS in the environment
#       overrides it) in one process, starting from the seeds
#
# The corpus lives in a temporary directory, removed on exit. Any crash,
# sanitizer report, leak, timeout (10 s per input) or RSS above 2 GiB makes
# libFuzzer exit non-zero, and so this script; the input that did it is kept
# as ARTIFACTS/<kind>-<sha1> (reproduce: TARGET ARTIFACTS/<file>).
set -euo pipefail

mode=$1 target=$2 make_corpus=$3 artifacts=$4 seconds=${FUZZ_SECONDS:-$5} max_len=$6
name=$(basename "$target")

work=$(mktemp -d "${TMPDIR:-/tmp}/bg-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/seeds" "$work/new" "$artifacts"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

"$make_corpus" "$work/seeds"
seeds=("$work"/seeds/*)
echo "$name: ${#seeds[@]} seeds"

common=(-artifact_prefix="$artifacts/" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len")

fail() {
    echo "$name: FAILED ($1); reproducer(s) in $artifacts:" >&2
    ls -l "$artifacts" >&2 || true
    exit 1
}

# Every seed once, each named in the log.
"$target" "${common[@]}" "${seeds[@]}" >"$work/corpus.log" 2>&1 || {
    cat "$work/corpus.log" >&2
    fail "a seed"
}
echo "$name: every seed ran clean"
[ "$mode" = corpus ] && exit 0

echo "$name: fuzzing for ${seconds}s (max_len $max_len)"
start=$(date +%s)
status=0
"$target" "${common[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    "$work/new" "$work/seeds" >"$work/fuzz.log" 2>&1 || status=$?
# The log is long; keep its head, tail and stats.
if [ "$status" -ne 0 ]; then
    tail -n 80 "$work/fuzz.log" >&2
    fail "libFuzzer exit status $status"
fi
grep -E '^(INFO: Seed|INFO: seed corpus|#[0-9]+[[:space:]]+INITED|Done|stat::)' "$work/fuzz.log" || true
tail -n 3 "$work/fuzz.log" | grep -v '^stat::' || true
echo "$name: $(ls "$work/new" | wc -l) new inputs in $(( $(date +%s) - start ))s, no failures"
