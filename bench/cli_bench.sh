#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Times the bloomgate command-line tool against its targets:
#
#   add   10^7 distinct lines (16 bytes and a newline each) into a filter
#         sized for 10^7 keys at p = 0.01                        < 2 s
#   check 10^7 lines, half of them present                       < 2 s
#   check a few keys against a 1 GB filter file, --no-verify     < 50 ms
#   check a few keys against a 1 GB filter file, verifying       < 1 s
#
# with `wc -l` on the same input, in the same run, as the baseline for what
# merely reading the input costs; then, without targets, the same add and
# check on a counting filter (and a remove of half the keys) and on a
# scalable filter that starts at 10^4 keys and grows to hold the 10^7. Not a
# test: it prints a table and exits 0 whether or not the targets are met.
#
#   bench/cli_bench.sh [PATH/TO/bloomgate]
#
# Without an argument it configures and builds a Release tree in
# ${BUILD:-build}-clibench and times that binary (time it Release: the
# default RelWithDebInfo build is what development uses, not what ships).
# Inputs go into a fresh directory under ${TMPDIR:-/tmp} (about 1.4 GB: two
# 170 MB key files and the 1 GB filter), removed at exit. Each timing is the
# best of REPS (default 3) runs, each a whole process (start-up included),
# and every add starts from the same empty file. The 1 GB file is read from
# the page cache (warm); as root, COLD=1 also times the verifying check after
# dropping the caches.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
REPS=${REPS:-3}
if [ $# -ge 1 ]; then
    BG=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
else
    build="${BUILD:-build}-clibench"
    case $build in /*) ;; *) build="$here/$build" ;; esac
    cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBG_BUILD_TESTS=OFF \
        -DBG_BUILD_EXAMPLES=OFF >/dev/null
    cmake --build "$build" -j "$(nproc)" --target bloomgate_cli >/dev/null
    BG=$build/src/cli/bloomgate
fi
[ -x "$BG" ] || { echo "cli_bench: not executable: $BG" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/bloomgate-clibench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir"

now() { date +%s%N; }

# best SECONDS_VAR PREP CMD: runs PREP (untimed) then CMD, REPS times; sets
# the variable to the fastest CMD's wall time in seconds.
best() {
    local var=$1 prep=$2 cmd=$3 t0 t1 min=
    for _ in $(seq "$REPS"); do
        eval "$prep"
        t0=$(now)
        eval "$cmd"
        t1=$(now)
        local ns=$((t1 - t0))
        if [ -z "$min" ] || [ "$ns" -lt "$min" ]; then min=$ns; fi
    done
    printf -v "$var" '%d.%03d' $((min / 1000000000)) $((min / 1000000 % 1000))
}

rows=()
row() { # row NAME SECONDS TARGET_SECONDS
    local verdict=""
    if [ -n "$3" ]; then
        verdict=$(awk -v t="$2" -v g="$3" 'BEGIN { print (t < g) ? "ok" : "MISSED" }')
    fi
    rows+=("$(printf '%-52s %9s %9s  %s' "$1" "$2" "${3:-}" "$verdict")")
}

echo "cli_bench: $("$BG" --version), $(nproc) cores, best of $REPS; generating inputs in $dir" >&2
# 10^7 distinct 16-byte keys; the check input is the first half of them and
# 5 * 10^6 keys that were never added.
seq -f 'key-%012.0f' 0 9999999 >add.txt
{ seq -f 'key-%012.0f' 0 4999999; seq -f 'key-%012.0f' 10000000 14999999; } >check.txt

"$BG" create empty.bgf -n 1e7 -p 0.01 -q

best t 'true' 'wc -l add.txt >/dev/null'
row "wc -l (10^7 lines, $(stat -c %s add.txt) bytes)" "$t" ""
best t 'cp empty.bgf f.bgf' '"$BG" add -q f.bgf <add.txt'
row "add 10^7 keys, p = 0.01 ($(stat -c %s empty.bgf) byte file)" "$t" 2
best t 'true' 'wc -l check.txt >/dev/null'
row "wc -l (10^7 lines)" "$t" ""
best t 'true' '"$BG" check f.bgf <check.txt >/dev/null || [ $? -eq 1 ]'
row "check 10^7 keys, half present, >/dev/null" "$t" 2
best t 'rm -f out.txt' '"$BG" check f.bgf <check.txt >out.txt || [ $? -eq 1 ]'
row "check 10^7 keys, half present, >file ($(stat -c %s out.txt) B)" "$t" 2
best t 'true' '"$BG" check -c f.bgf <check.txt >/dev/null || [ $? -eq 1 ]'
row "check -c 10^7 keys (totals only)" "$t" ""
fp=$("$BG" check -c --present f.bgf < <(seq -f 'key-%012.0f' 10000000 14999999) || true)

# Counting (4x the bytes) and scalable (layers): the same inputs.
head -n 5000000 add.txt >half.txt
"$BG" create emptyc.bgf -n 1e7 -p 0.01 --variant counting -q
best t 'cp emptyc.bgf c.bgf' '"$BG" add -q c.bgf <add.txt'
row "counting: add 10^7 keys ($(stat -c %s emptyc.bgf) byte file)" "$t" ""
best t 'true' '"$BG" check c.bgf <check.txt >/dev/null || [ $? -eq 1 ]'
row "counting: check 10^7 keys, half present" "$t" ""
cp c.bgf cfull.bgf
best t 'cp cfull.bgf c.bgf' '"$BG" remove -q c.bgf <half.txt'
row "counting: remove 5 * 10^6 keys" "$t" ""
"$BG" create emptys.bgf -n 1e4 -p 0.01 --variant scalable -q
best t 'cp emptys.bgf s.bgf' '"$BG" add -q s.bgf <add.txt'
layers=$("$BG" add --json s.bgf </dev/null | sed 's/.*"layers":\([0-9]*\).*/\1/')
row "scalable (n0 = 10^4): add 10^7 keys ($layers layers)" "$t" ""
best t 'true' '"$BG" check s.bgf <check.txt >/dev/null || [ $? -eq 1 ]'
row "scalable: check 10^7 keys, half present" "$t" ""
rm -f c.bgf cfull.bgf s.bgf half.txt

best t 'rm -f big.bgf' '"$BG" create -q big.bgf -m 8e9 -k 7'
row "create a 1 GB filter file ($(stat -c %s big.bgf) bytes)" "$t" ""
"$BG" add -q big.bgf $(seq 1 1000) # a few bits set, so not all zero pages
best t 'true' '"$BG" check --no-verify big.bgf 1 2 nope >/dev/null || [ $? -eq 1 ]'
row "check 3 keys, 1 GB file, --no-verify" "$t" 0.05
best t 'true' '"$BG" check big.bgf 1 2 nope >/dev/null || [ $? -eq 1 ]'
row "check 3 keys, 1 GB file, verifying (warm cache)" "$t" 1
if [ "${COLD:-0}" = 1 ] && [ -w /proc/sys/vm/drop_caches ]; then
    best t 'sync; echo 3 >/proc/sys/vm/drop_caches' '"$BG" check big.bgf 1 2 nope >/dev/null || [ $? -eq 1 ]'
    row "check 3 keys, 1 GB file, verifying (cold cache)" "$t" 1
fi
best t 'true' '"$BG" info big.bgf >/dev/null'
row "info, 1 GB file (verify + full statistics)" "$t" ""

printf '%-52s %9s %9s  %s\n' "" "seconds" "target" ""
printf '%s\n' "${rows[@]}"
echo "false positives among the 5 * 10^6 absent keys: $fp ($(awk -v f="$fp" 'BEGIN { printf "%.3f%%", f / 5e4 }'), p = 0.01)"
