#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The minimal build (ctest install.minimal, label `install`): on a machine
# with only a C compiler, CMake and libxxhash-dev, the plain
#   cmake -S . -B build && cmake --build build && cmake --install build
# builds and installs the library and the CLI, and skips every other
# component with a line naming what it needs.
#
# Such a machine is imitated by hiding every optional dependency from a
# fresh tree's configure (CMAKE_DISABLE_FIND_PACKAGE_<Name>: each one is
# found by a Find module of cmake/ or by CMake's own), pkg-config included,
# so that xxhash.h is found without it. With BG_FUZZ=ON, so that the fuzzers
# are skipped too.
#
#   1. configure: one "bloomgate: COMPONENT skipped: ..." line per optional
#      component, naming its package
#   2. build (Release, -j2) and `cmake --install` into a scratch prefix
#   3. installed: the shared and static library, the headers, bloomgate.pc,
#      the CMake package and the CLI; and nothing else: no bloomgate.so, no
#      remote or guard library, .pc, CMake targets or header, no other program
#   4. they work: `bloomgate --version`, a redis:// URL refused with "built
#      without remote support", examples/api_example.c built through
#      `pkg-config bloomgate` and run
#   5. the same configure with -DBG_REQUIRE_ALL=ON fails, naming a package
#
# Usage: minimal.sh BUILD_DIR SOURCE_DIR [C_COMPILER] [CMAKE] [GENERATOR]
# Scratch files go to BUILD_DIR/install-minimal (removed at the start of a
# run, kept afterwards for inspection).
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
cc=${3:-cc}
cmake=${4:-cmake}
generator=${5:-}

work=$build/install-minimal
tree=$work/build
prefix=$work/prefix
failures=0

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; failures=$((failures + 1)); }
ok() { printf 'ok: %s\n' "$*"; }

rm -rf "$work"
mkdir -p "$work"

# Every optional dependency, by the name find_package knows it by.
hidden=(PkgConfig RedisModule Hiredis Microhttpd SQLite3 PostgreSQL MariaDB Cmocka Python3 Libbloom
        LibFuzzer)
configure_args=(-DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release -DBG_FUZZ=ON)
for h in "${hidden[@]}"; do
    configure_args+=(-DCMAKE_DISABLE_FIND_PACKAGE_"$h"=ON)
done
[ -n "$generator" ] && configure_args+=(-G "$generator")

step "configure with ${hidden[*]} hidden"
if ! "$cmake" -S "$src" -B "$tree" "${configure_args[@]}" >"$work/configure.log" 2>&1; then
    cat "$work/configure.log"
    echo "FAIL: the minimal configure fails"
    exit 1
fi
grep 'bloomgate:' "$work/configure.log" || true

# One line per component, naming what it needs (the Debian package, or for
# the Redis module where its header comes from).
expect_skip() { # component, what the line must name...
    local what=$1 lines n need
    shift
    lines=$(grep -F -- "-- bloomgate: $what skipped: " "$work/configure.log" || true)
    n=$(printf '%s' "$lines" | grep -c . || true)
    if [ "$n" -ne 1 ]; then
        fail "$n lines say the $what is skipped, not one"
        return
    fi
    for need in "$@"; do
        if [[ $lines != *"$need"* ]]; then
            fail "the $what's skip line does not name $need: $lines"
            return
        fi
    done
    ok "$what skipped, naming $*"
}
expect_skip "Redis module" redismodule.h "apt-get source redis" BG_REDISMODULE_H
expect_skip "remote client" libhiredis-dev
expect_skip "guard" "remote client" libhiredis-dev
expect_skip "products service" guard libmicrohttpd-dev libsqlite3-dev libpq-dev libmariadb-dev
expect_skip "seen example" "remote client" libhiredis-dev
expect_skip "tests" libcmocka-dev python3
expect_skip "benchmarks" libbloom-dev
expect_skip "fuzzers" clang

step "build and install into $prefix"
if ! "$cmake" --build "$tree" -j 2 >"$work/build.log" 2>&1; then
    tail -n 40 "$work/build.log"
    echo "FAIL: the minimal build fails"
    exit 1
fi
ok "built ($(grep -c 'Linking' "$work/build.log" || true) links)"
"$cmake" --install "$tree" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; echo "FAIL: cmake --install fails"; exit 1; }

# GNUInstallDirs picks lib, lib64 or lib/<multiarch>: find what it chose.
pcfile=$(find "$prefix" -name bloomgate.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pcfile" ] || { echo "FAIL: no bloomgate.pc installed under $prefix"; exit 1; }
pcdir=$(dirname "$pcfile")
libdir=$(dirname "$pcdir")
lib=${libdir#"$prefix"/}

step "what is installed"
(cd "$prefix" && find . -type f -o -type l | sed 's|^\./||' | sort) >"$work/installed.txt"
cat "$work/installed.txt"
for f in bin/bloomgate "$lib/libbloomgate.so" "$lib/libbloomgate.a" "$lib/pkgconfig/bloomgate.pc" \
         include/bloomgate/bloomgate.h include/bloomgate/filter.h include/bloomgate/version.h \
         "$lib/cmake/bloomgate/bloomgateConfig.cmake" \
         "$lib/cmake/bloomgate/bloomgateConfigVersion.cmake" \
         "$lib/cmake/bloomgate/bloomgateTargets.cmake"; do
    grep -qxF "$f" "$work/installed.txt" && ok "installed $f" || fail "not installed: $f"
done
# Programs, libraries, pkg-config and CMake files, headers: only the
# library's and the CLI's (share/ holds documentation, whatever it is).
allowed="^(bin/bloomgate|$lib/libbloomgate\.(so(\.[0-9]+)*|a)|$lib/pkgconfig/bloomgate\.pc"
allowed+="|$lib/cmake/bloomgate/bloomgate(Config|ConfigVersion|Targets|Targets-[a-z]+)\.cmake"
allowed+="|include/bloomgate/[a-z_]+\.h|share/.*)$"
extra=$(grep -Ev "$allowed" "$work/installed.txt" || true)
[ -z "$extra" ] && ok "nothing else installed" || fail "installed beyond the library and the CLI: $(echo $extra)"
for f in "$lib/bloomgate/bloomgate.so" include/bloomgate/remote.h include/bloomgate/guard.h; do
    grep -qxF "$f" "$work/installed.txt" && fail "installed without its component: $f"
done
if grep -E 'bloomgate_(remote|guard)|bloomgate-(remote|guard)\.pc|bloomgate(Remote|Guard)Targets' \
        "$work/installed.txt"; then
    fail "remote or guard files installed"
else
    ok "no remote or guard library, .pc or CMake targets"
fi

step "the installed CLI"
version=$(sed -n 's/^#define BG_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' \
          "$src/include/bloomgate/version.h" | paste -sd.)
out=$("$prefix/bin/bloomgate" --version 2>&1) || fail "bloomgate --version exits $?"
[[ $out == "bloomgate $version "* ]] && ok "bloomgate --version: $out" \
    || fail "bloomgate --version printed '$out', expected bloomgate $version ..."
rc=0
out=$("$prefix/bin/bloomgate" check redis://127.0.0.1:1/x a 2>&1) || rc=$?
if [ "$rc" -ne 0 ] && [[ $out == *"built without remote support"* ]]; then
    ok "a redis:// URL is refused: $out"
else
    fail "bloomgate check redis://...: exit $rc, '$out'"
fi
# A filter file round trip: create, add, check.
"$prefix/bin/bloomgate" create "$work/f.bg" -n 1000 -p 0.01 >/dev/null 2>&1 &&
    printf 'a\nb\n' | "$prefix/bin/bloomgate" add "$work/f.bg" >/dev/null 2>&1 &&
    "$prefix/bin/bloomgate" check "$work/f.bg" a >/dev/null 2>&1 &&
    ok "bloomgate create, add, check on a file" ||
    fail "bloomgate create/add/check on a file fails"

step "a program through pkg-config bloomgate"
if ! command -v pkg-config >/dev/null; then
    fail "pkg-config is not installed here (Debian: pkg-config)"
else
    export PKG_CONFIG_LIBDIR=$pcdir PKG_CONFIG_PATH=$pcdir
    # shellcheck disable=SC2046 # the flags are meant to split
    if "$cc" -std=c11 -Wall -Wextra -Werror -o "$work/api_example" "$src/examples/api_example.c" \
            $(pkg-config --cflags --libs bloomgate); then
        out=$(LD_LIBRARY_PATH=$libdir "$work/api_example" 2>&1) || true
        if [[ $out == *$'user:1002: maybe present\nuser:9999: definitely absent'* ]]; then
            ok "examples/api_example.c built with pkg-config and ran"
        else
            fail "api_example printed:"$'\n'"$out"
        fi
    else
        fail "examples/api_example.c does not build with pkg-config bloomgate"
    fi
fi

step "the same configure with -DBG_REQUIRE_ALL=ON"
rc=0
"$cmake" -S "$src" -B "$work/require-all" "${configure_args[@]}" -DBG_REQUIRE_ALL=ON \
    >"$work/require-all.log" 2>&1 || rc=$?
# CMake wraps its error messages: compare them as one line.
errors=$(grep -A4 'CMake Error' "$work/require-all.log" | tr -s ' \n' ' ' || true)
if [ "$rc" -eq 0 ]; then
    fail "configure with BG_REQUIRE_ALL=ON succeeds with the packages hidden"
elif [[ $errors == *"remote client: libhiredis-dev not found (BG_REQUIRE_ALL is ON"* ]]; then
    ok "configure with BG_REQUIRE_ALL=ON fails, naming libhiredis-dev"
else
    fail "configure with BG_REQUIRE_ALL=ON fails without naming a package:"$'\n'"$(cat "$work/require-all.log")"
fi

echo
if [ "$failures" -ne 0 ]; then
    echo "minimal install test: $failures failure(s); scratch files in $work"
    exit 1
fi
echo "minimal install test: all checks passed"
