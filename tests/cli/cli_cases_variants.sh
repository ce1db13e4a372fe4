# SPDX-License-Identifier: BSD-3-Clause
# Cases of cli_test.sh: the variants (counting, scalable, and all of them
# through the same commands).
# Sourced by cli_test.sh, which defines the assertions and helpers they use
# and runs one case_<name> per ctest test (cli.<name>).

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
    # one key, one item: in the singular
    run 0 "$BG" create -q one.bgf -n 100 -p 0.01
    run 0 "$BG" add one.bgf only-key
    has err "one.bgf: 1 key read, 1 new; 1 item"
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
    has err "--expansion applies to --variant scalable or redisbloom only"
    run 2 "$BG" create x.bgf -n 1000 -p 0.01 --variant counting --nonscaling
    has err "--nonscaling applies to --variant scalable or redisbloom only"
    run 2 "$BG" create x.bgf -n 1000 -p 0.01 --variant blocked --max-layers 3
    has err "--max-layers applies to --variant scalable only"
    run 2 "$BG" create x.bgf -n 1000 -p 0.01 --variant standard --max-bytes 1e6
    has err "--max-bytes applies to --variant scalable or redisbloom only"
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
    run 0 "$BG" create one.bgf -n 1000 -p 0.01 --variant scalable --max-bytes 2000 -q
    run 2 "$BG" add one.bgf <in.txt
    has err "a new layer would take its 1 layer past its cap of 2000 bytes"
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

# A scalable filter's schedule and mixed stacks: --first-share (layer 0's
# share of p) and --blocked-from (blocked layers above standard ones), as
# the library's bg_filter_options take them and the Redis module's LAYERS
# auto makes them.
case_schedule() {
    # out of range, or where they do not apply: usage errors (status 2)
    # that name the option and the range, and no file
    run 2 "$BG" create x.bgf -n 100 -p 0.01 --variant scalable --first-share 0
    has err "--first-share: '0' is not between 0 and 1 (both excluded)"
    run 2 "$BG" create x.bgf -n 100 -p 0.01 --variant scalable --first-share 1
    has err "--first-share: '1' is not between 0 and 1 (both excluded)"
    run 2 "$BG" create x.bgf -n 100 -p 0.01 --variant scalable --first-share half
    has err "--first-share: 'half' is not a number"
    run 2 "$BG" create x.bgf -n 100 -p 0.01 --variant scalable --blocked-from 0
    has err "--blocked-from: '0' is too small (at least 1)"
    run 2 "$BG" create x.bgf -n 100 -p 0.01 --variant scalable --blocked-from 64
    has err "--blocked-from: '64' is too large (at most 63)"
    run 2 "$BG" create x.bgf -n 100 -p 0.01 --variant scalable --blocked-from 2.5
    has err "--blocked-from: '2.5' is not a whole number"
    run 2 "$BG" create x.bgf -n 100 -p 0.01 --variant scalable --blocked-from 4 --max-layers 4
    has err "--blocked-from 4: must be below --max-layers (4)"
    run 2 "$BG" create x.bgf -n 100 -p 0.01 --variant scalable --blocked-from 2 \
        --layer-variant blocked
    has err "--blocked-from makes the layers from that index on blocked, above standard ones: it needs standard layers"
    local opt
    for opt in "--first-share 0.5" "--blocked-from 2"; do
        # shellcheck disable=SC2086
        run 2 "$BG" create x.bgf -n 100 -p 0.01 --variant scalable --nonscaling $opt
        has err "--nonscaling makes one layer that never grows: --expansion, --max-layers, --tightening, --first-share and --blocked-from do not apply"
        # shellcheck disable=SC2086
        run 2 "$BG" create x.bgf -n 100 -p 0.01 --variant blocked $opt
        has err "${opt% *} applies to --variant scalable only"
        # shellcheck disable=SC2086
        run 2 "$BG" create x.bgf -n 100 -p 0.01 $opt
        has err "${opt% *} applies to --variant scalable only"
        # shellcheck disable=SC2086
        run 2 "$BG" create x.bgf -n 100 -p 0.01 --variant redisbloom $opt
        has err "--variant redisbloom takes --expansion, --nonscaling and --max-bytes only"
    done
    # the least rate a blocked layer is sized for, 1e-12: layer 0's is
    # p x first share when given; a mixed stack's first blocked layer, here
    # layer 4 at p (1 - t) t^4 = 3.125e-13, could never be opened
    run 2 "$BG" create x.bgf -n 100 -p 1e-11 --variant scalable --layer-variant blocked \
        --first-share 0.01
    has err "x.bgf: cannot create a scalable filter: p = 1e-11: its first layer's rate, p x --first-share = 1e-13, is below 1e-12"
    run 2 "$BG" create x.bgf -n 100 -p 1e-11 --variant scalable --blocked-from 4
    has err "x.bgf: cannot create a scalable filter: --blocked-from 4: layer 4's error rate would be 3.125e-13, below 1e-12"
    [ ! -e x.bgf ] || fail "a refused create wrote x.bgf"
    run 0 "$BG" create x.bgf -n 100 -p 1e-11 --variant scalable --layer-variant blocked \
        --first-share 0.5 -q
    # ... and a mixed stack that reaches that rate stops growing with a
    # message that names --blocked-from (layer 3: 1e-11 x 0.5^4 = 6.25e-13)
    run 0 "$BG" create lim.bgf -n 10 -p 1e-11 --variant scalable --blocked-from 2 --expansion 1 -q
    cp lim.bgf before.bgf
    seq 1 100 | run 2 "$BG" add lim.bgf
    has err "the filter cannot grow: after 3 layers, the next layer's error rate would be below 1e-12, the least a blocked layer can deliver"
    has err "recreate it with a larger --blocked-from (or none)"
    same lim.bgf before.bgf

    # create with both: the summary and the JSON
    run 0 "$BG" create m.bgf -n 100 -p 0.01 --variant scalable --tightening 0.9 \
        --first-share 0.5 --blocked-from 3 --json
    json_ok out
    eq "$(jq -c '[.first_share, .blocked_from, .tightening, .layer_variant, .layers]' out)" \
        '[0.5,3,0.9,"standard",1]' "create --json"
    has err "created m.bgf: scalable, standard layers, blocked from layer 3; layer 0: "
    has err "grows x2 per layer (layer 0 at p x 0.5, layer 1 at p x 0.05, then error rate x0.9)"
    # the defaults: the classic schedule, no blocked layer
    run 0 "$BG" create d.bgf -n 100 -p 0.01 --variant scalable --json
    eq "$(jq -c '[.first_share, .blocked_from]' out)" '[0.5,0]' "create --json defaults"
    hasnt err "blocked from"
    hasnt err "layer 0 at p x"
    run 0 "$BG" create d9.bgf -n 100 -p 0.01 --variant scalable --tightening 0.9 --json
    # (1 - 0.9 in binary64, 0.09999999999999998: JSON numbers round-trip)
    jq -e '(.first_share == 1 - .tightening) and (.blocked_from == 0)' out >/dev/null ||
        fail "first share: not 1 - tightening"
    run 0 "$BG" info d.bgf
    has out "first share:       0.5 (layer 0 at p x 0.5, 1 - tightening: the default)"
    has out "blocked from:      none (every layer is standard)"
    has out "format version:    2"

    # info, before it grows: the parameters, text and JSON
    run 0 "$BG" info m.bgf
    empty err
    has out "format version:    4"
    has out "layer variant:     standard"
    has out "scaling:           capacity x2 and error rate x0.9 per layer"
    has out "first share:       0.5 (layer 0 at p x 0.5, layer i >= 1 at p x 0.05 x 0.9^(i-1))"
    has out "blocked from:      layer 3 (layers 3 and up are blocked, those below standard)"
    run 0 "$BG" info --json m.bgf
    json_ok out
    eq "$(jq -c '[.first_share, .blocked_from, .layer_count, .layers[0].variant]' out)" \
        '[0.5,3,1,"standard"]' "info --json, one layer"

    # 200 times the first layer's capacity: 8 layers, blocked from layer 3
    keys 1 20000 u >in.txt
    keys 20001 40000 u >absent.txt
    run 0 "$BG" add --json m.bgf <in.txt
    json_ok out
    local layers
    layers=$(jq .layers out)
    [ "$layers" -ge 6 ] || fail "layers after 200x growth: $layers"
    run 0 "$BG" info --json m.bgf
    json_ok out
    eq "$(jq '.layer_count' out)" "$layers" "layer_count"
    eq "$(jq -c '[.first_share, .blocked_from, .tightening]' out)" '[0.5,3,0.9]' "grown: parameters"
    eq "$(jq -c '[.layers[0:3][].variant] | unique' out)" '["standard"]' "layers 0-2"
    eq "$(jq -c '[.layers[3:][].variant] | unique' out)" '["blocked"]' "layers 3 and up"
    eq "$(jq -c '[.layers[].layer]' out)" "$(seq 0 $((layers - 1)) | jq -sc .)" "layer numbers"
    eq "$(jq '[.layers[].items] | add' out)" "$(jq .items out)" "items: the layers' sum"
    # layer 0 gets p x 0.5, layer 1 p x 0.05 (both before margins)
    jq -e '(.layers[0].error_rate <= 0.005) and (.layers[0].error_rate > 0.003) and
           (.layers[1].error_rate <= 0.0005) and (.layers[1].error_rate > 0.0002)' out >/dev/null ||
        fail "layer rates do not follow the schedule"
    run 0 "$BG" info m.bgf
    eq "$(awk '$1 ~ /^[0-9]+$/ { print $1 ":" $2 }' out | tr '\n' ' ')" \
        "$(for ((i = 0; i < layers; i++)); do
              if [ $i -lt 3 ]; then printf '%s:standard ' $i; else printf '%s:blocked ' $i; fi
          done)" "layer rows"
    has out "blocked from:      layer 3 (layers 3 and up are blocked, those below standard)"

    # the file round-trips: every key it was given, the stack's bound for
    # the others, and the same answers and bytes after a reload and a save
    run 0 "$BG" check -c m.bgf <in.txt
    eq "$(cat out)" "$(printf 'keys\t20000\nmaybe\t20000\nno\t0')" "no false negatives"
    run 1 "$BG" check -c --present m.bgf <absent.txt
    [ "$(cat out)" -le 240 ] || fail "false positives $(cat out) of 20000 at p = 0.01"
    "$BG" check m.bgf <absent.txt >answers1.txt || true
    cp m.bgf before.bgf
    run 0 "$BG" add --json m.bgf <in.txt
    eq "$(jget out new)" 0 "new keys on a second add"
    same m.bgf before.bgf
    "$BG" check --no-verify m.bgf <absent.txt >answers2.txt || true
    same answers1.txt answers2.txt
    # a damaged file: the header still has both
    local b
    cp m.bgf bad.bgf
    b=$(od -An -tu1 -j 300 -N 1 bad.bgf | tr -d ' ')
    printf "$(printf '\\%03o' $((b ^ 0x10)))" | dd of=bad.bgf bs=1 seek=300 conv=notrunc status=none
    run 2 "$BG" info --json bad.bgf
    json_ok out
    eq "$(jq -c '[.first_share, .blocked_from, .layers, .checksum_status]' out)" \
        '[0.5,3,null,"mismatch"]' "damaged: from the header"
    run 2 "$BG" info bad.bgf
    has out "blocked from:      layer 3"

    # a first share alone: layer 0 gets p x 0.2 instead of p x 0.5, so it
    # needs more bits than the default's
    run 0 "$BG" create f.bgf -n 1000 -p 0.01 --variant scalable --first-share 0.2 --json -q
    eq "$(jq -c '[.first_share, .blocked_from]' out)" '[0.2,0]' "first share alone"
    local bits_share bits_default
    bits_share=$(jq .bits out)
    run 0 "$BG" create g.bgf -n 1000 -p 0.01 --variant scalable --json -q
    bits_default=$(jq .bits out)
    [ "$bits_share" -gt "$bits_default" ] ||
        fail "layer 0 at p x 0.2 has $bits_share bits, the default $bits_default"
    run 0 "$BG" add -q f.bgf <in.txt
    run 0 "$BG" check -q f.bgf <in.txt
    run 0 "$BG" info --json f.bgf
    jq -e '.layers | all(.variant == "standard")' out >/dev/null || fail "standard layers"
    # help
    run 0 "$BG" create --help
    has out "--first-share S"
    has out "--blocked-from I"
    run 0 "$BG" info --help
    has out "first share of p, first blocked layer"
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

# RedisBloom filters: create is BF.RESERVE, add is BF.MADD, and the file
# holds RedisBloom's own links (tests/fixtures/redisbloom: fx:scale2 and
# fx:nonscaling were made the same way by RedisBloom 2.6.28).
case_redisbloom() {
    local fx=$HERE/../fixtures/redisbloom/keys
    run 0 "$BG" create rb.bgf -n 1000 -p 0.01 --variant redisbloom --expansion 2
    has err "redisbloom (BF.RESERVE 0.01 1000)"
    seq 0 19999 | sed 's/^/fx:scale2:/' >items
    run 0 "$BG" add -q rb.bgf <items
    run 0 "$BG" info --json rb.bgf
    jq -e . out >/dev/null || fail "info --json is not JSON"
    eq "$(jq '.version' out)" 3 "format version"
    eq "$(jq -r '.variant' out)" redisbloom "variant"
    eq "$(jq '.items' out)" 19814 "items (BF.CARD)"
    eq "$(jq '.capacity' out)" 31000 "capacity (BF.INFO)"
    eq "$(jq '.options' out)" 5 "options"
    eq "$(jq '.growth' out)" 2 "growth"
    eq "$(jq '.link_count' out)" 5 "links"
    eq "$(jq '[.links[].bytes] | join(",")' out)" '"1384,3120,6960,15360,33600"' "link bytes"
    eq "$(jq '[.links[].hashes] | join(",")' out)" '"8,9,10,11,12"' "link hashes"
    eq "$(jq '[.links[].size] | join(",")' out)" '"1000,2000,4000,8000,4814"' "link sizes"
    # Every link's array is RedisBloom's, byte for byte: each lies after a
    # 64-byte link header, padded to 64 bytes (docs/FORMAT.md, version 3).
    local off=128 i=1 n
    for n in $(jq '.links[].bytes' out); do
        dd if=rb.bgf of=link bs=1 skip=$((off + 64)) count="$n" status=none
        cmp -s link "$fx/scale2/scandump/00$i.bin" || fail "link $((i - 1)) differs from RedisBloom's"
        off=$((off + 64 + (n + 63) / 64 * 64))
        i=$((i + 1))
    done
    run 0 "$BG" info rb.bgf
    has out "options:           5 (NOROUND FORCE64)"
    has out "hashing:           MurmurHash64A (64-bit)"
    has out "links:             5"
    # RedisBloom's answers, false positives included (mexists.json).
    run 0 "$BG" check rb.bgf fx:scale2:0 fx:scale2:19999 absent:scale2:55
    run 1 "$BG" check rb.bgf absent:scale2:0
    has out "absent:scale2:0	no"

    # NONSCALING: the 506th key finds it full (RedisBloom's
    # "ERR non scaling filter is full"), and the file is not changed.
    run 0 "$BG" create ns.bgf -q -n 500 -p 0.05 --variant redisbloom --nonscaling
    seq 0 504 | sed 's/^/fx:nonscaling:/' >items
    run 0 "$BG" add -q ns.bgf <items
    dd if=ns.bgf of=link bs=1 skip=192 count=392 status=none
    cmp -s link "$fx/nonscaling/scandump/001.bin" || fail "the non-scaling link differs"
    cp ns.bgf ns.before
    run 2 "$BG" add ns.bgf fx:nonscaling:505
    has err "full"
    cmp -s ns.bgf ns.before || fail "a refused add changed the file"

    # What BF.RESERVE does not take.
    run 2 "$BG" create x.bgf -n 10 -m 1000 --variant redisbloom
    has err "drop -m and -k"
    run 2 "$BG" create x.bgf -n 10 -p 0.01 --variant redisbloom --seed 7
    run 2 "$BG" create x.bgf -n 10 -p 0.01 --variant redisbloom --tightening 0.3
    run 2 "$BG" create x.bgf -n 10 -p 0.01 --variant redisbloom --nonscaling --expansion 4
    [ ! -e x.bgf ] || fail "a refused create made a file"

    # A cap the next link would pass: the add fails, the file stays.
    run 0 "$BG" create small.bgf -q -n 100 -p 0.01 --variant redisbloom --max-bytes 400
    seq 0 49 | sed 's/^/k/' | run 0 "$BG" add small.bgf
    has err "in 1 link (capacity 100)"
    cp small.bgf small.before
    seq 0 299 | sed 's/^/k/' | run 2 "$BG" add small.bgf
    has err "its next link would take its 1 link past its cap of 400 bytes"
    cmp -s small.bgf small.before || fail "a refused add changed the file"

    # Links of different sizes: no union or intersection.
    run 2 "$BG" merge m.bgf rb.bgf rb.bgf
    has err "merge: rb.bgf: a redisbloom filter cannot be merged"
    [ ! -e m.bgf ] || fail "a refused merge made a file"
}
