# SPDX-License-Identifier: BSD-3-Clause
# Cases of cli_test.sh: filter files. Round trips, input, check, info, bad
# files, create, merge, crashes, targets and progress.
# Sourced by cli_test.sh, which defines the assertions and helpers they use
# and runs one case_<name> per ctest test (cli.<name>).

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
    # ... and without --force the refusal says so, instead of suggesting it
    run 2 "$BG" create fifo -n 1000 -p 0.01
    has err "fifo: not a regular file: it is never replaced, not even with --force"
    hasnt err "use --force"
    run 2 "$BG" merge fifo a.bgf a.bgf
    has err "fifo: not a regular file: it is never replaced, not even with --force"
    hasnt err "use --force"
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
    run 2 "$BG" create dir.bgf -n 1000 -p 0.01
    has err "dir.bgf: is a directory: it is never replaced, not even with --force"
    hasnt err "use --force"
    # a symbolic link, even to a directory, is replaced with --force (as a
    # link to a file is): without it, the message says to use it
    ln -s dir.bgf link.bgf
    run 2 "$BG" create link.bgf -n 1000 -p 0.01
    has err "link.bgf: already exists (use --force to replace it)"
    run 0 "$BG" create link.bgf -n 1000 -p 0.01 -q --force
    [ -f link.bgf ] && [ ! -L link.bgf ] || fail "create --force kept the link"
    [ -d dir.bgf ] || fail "create --force through a link replaced a directory"
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
