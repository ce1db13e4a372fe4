#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The packaging test (ctest label `install`): install the build into a scratch
# prefix and use it only through what an installed package offers, as a user
# would.
#
#   1. cmake --install BUILD --prefix P; with BG_INSTALL_DOCS, the
#      documentation tree in P/share/doc/bloomgate, every relative link of
#      its markdown leading to a file there (doc_links.sh)
#   2. pkg-config: build examples/api_example.c against P with
#      `pkg-config --cflags --libs bloomgate` and run it (LD_LIBRARY_PATH=P/lib),
#      then link it fully static with `pkg-config --static` (libbloomgate.a)
#   3. CMake: a consumer project (tests/install/consumer) does
#      find_package(bloomgate MAJOR.MINOR [COMPONENTS guard]) and links
#      bloomgate::bloomgate, bloomgate::static and (when installed)
#      bloomgate::guard and bloomgate::guard_static; an unknown component is
#      refused by name
#   3b. the guard and remote libraries (when installed): the guard example
#      through `pkg-config bloomgate-guard`, shared (three libbloomgate*.so,
#      one core) and from the archives; each .so exports its header's
#      functions only, has its soname and holds no copy of the core
#   4. the ABI surface: libbloomgate.so exports exactly the BG_API functions
#      of the installed headers and the BG__SHARED internals of src/common/
#      (for bloomgate's own libraries; no other bg__, no XXH_*); the
#      archive defines no global symbol outside bg_/bg__; the soname is
#      libbloomgate.so.BG_ABI_VERSION; the library calls its own bg_*
#      functions directly, not through PLT slots
#   5. every installed header compiles on its own as C99 and as C++11
#
# Usage: run.sh BUILD_DIR SOURCE_DIR [C_COMPILER] [CMAKE] [GENERATOR]
# Scratch files go to BUILD_DIR/install-test (removed at the start of a run,
# kept afterwards for inspection).
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
cc=${3:-cc}
cmake=${4:-cmake}
generator=${5:-}

work=$build/install-test
prefix=$work/prefix
example=$src/examples/api_example.c
expected=$'user:1002: maybe present\nuser:9999: definitely absent'
failures=0

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; failures=$((failures + 1)); }
ok() { printf 'ok: %s\n' "$*"; }

# The example's two answer lines must be there; the stats line is free text.
check_output() { # name, output
    if [[ $2 == *"$expected"* ]]; then ok "$1 ran"; else fail "$1 printed:"$'\n'"$2"; fi
}

rm -rf "$work"
mkdir -p "$work"

step "cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix"

# GNUInstallDirs picks lib, lib64 or lib/<multiarch>: find what it chose.
pcfile=$(find "$prefix" -name bloomgate.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pcfile" ] || { echo "FAIL: no bloomgate.pc installed under $prefix"; exit 1; }
pcdir=$(dirname "$pcfile")
libdir=$(dirname "$pcdir")
so=$libdir/libbloomgate.so
ar=$libdir/libbloomgate.a
for f in "$so" "$ar" "$prefix/include/bloomgate/filter.h" \
         "$libdir/cmake/bloomgate/bloomgateConfig.cmake" \
         "$libdir/cmake/bloomgate/bloomgateConfigVersion.cmake" \
         "$prefix/share/doc/bloomgate/LICENSE"; do
    [ -e "$f" ] && ok "installed ${f#"$prefix"/}" || fail "not installed: ${f#"$prefix"/}"
done
# The Redis module, when built, at the path README's --loadmodule shows, and
# loadable from there.
if [ -e "$build/src/redis_module/bloomgate.so" ]; then
    module=$libdir/bloomgate/bloomgate.so
    if [ ! -e "$module" ]; then
        fail "not installed: ${module#"$prefix"/}"
    elif command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
        port=$((20000 + RANDOM % 20000))
        redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
            --dir "$work" --loadmodule "$module" --daemonize yes \
            --pidfile "$work/redis.pid" --logfile "$work/redis.log" || true
        for _ in $(seq 1 100); do
            redis-cli -p "$port" ping >/dev/null 2>&1 && break
            sleep 0.1
        done
        got="$(redis-cli -p "$port" BF.ADD k a 2>&1) $(redis-cli -p "$port" BF.EXISTS k a 2>&1)"
        got="$got $(redis-cli -p "$port" BF.EXISTS k b 2>&1)"
        redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
        if [ "$got" = "1 1 0" ]; then
            ok "installed ${module#"$prefix"/} loads: BF.ADD, BF.EXISTS"
        else
            fail "redis-server --loadmodule ${module#"$prefix"/}: BF.ADD/EXISTS/EXISTS gave '$got' (log: $(tail -n 3 "$work/redis.log" 2>/dev/null))"
        fi
    else
        ok "installed ${module#"$prefix"/} (no redis-server here to load it)"
    fi
fi
# The documentation tree (BG_INSTALL_DOCS, on by default): README.md and
# docs/ as in the source tree, whose relative links all resolve there.
docdir=$prefix/share/doc/bloomgate
if grep -q '^BG_INSTALL_DOCS:BOOL=OFF$' "$build/CMakeCache.txt"; then
    ok "documentation not installed (BG_INSTALL_DOCS=OFF)"
else
    for f in "$docdir/README.md" "$docdir/docs/REMOTE.md" "$docdir/examples/guard_example.c" \
             "$docdir/include/bloomgate/remote.h"; do
        [ -e "$f" ] && ok "installed ${f#"$prefix"/}" || fail "not installed: ${f#"$prefix"/}"
    done
    if links=$(bash "$src/tests/install/doc_links.sh" "$docdir" 2>&1); then
        ok "${links#ok: }"
    else
        fail "relative links in ${docdir#"$prefix"/} do not resolve:"$'\n'"$links"
    fi
fi
abi=$(sed -n 's/^#define BG_ABI_VERSION \([0-9]*\).*/\1/p' "$prefix/include/bloomgate/version.h")
major=$(sed -n 's/^#define BG_VERSION_MAJOR \([0-9]*\).*/\1/p' "$prefix/include/bloomgate/version.h")
minor=$(sed -n 's/^#define BG_VERSION_MINOR \([0-9]*\).*/\1/p' "$prefix/include/bloomgate/version.h")

step "pkg-config (PKG_CONFIG_PATH=$pcdir)"
export PKG_CONFIG_PATH=$pcdir
# Never let a copy installed elsewhere (/usr/local) stand in for this one.
export PKG_CONFIG_LIBDIR=$pcdir
cflags=$(pkg-config --cflags bloomgate)
libs=$(pkg-config --libs bloomgate)
slibs=$(pkg-config --static --libs bloomgate)
echo "cflags: $cflags"; echo "libs: $libs"; echo "static libs: $slibs"
# The .pc must describe the prefix it was installed to, not the one CMake was
# configured with: `cmake --install --prefix` changes it after configure.
if [[ " $cflags" == *" -I$prefix/include"* && " $libs" == *" -L$libdir "* ]]; then
    ok "bloomgate.pc points into the install prefix"
else
    fail "bloomgate.pc does not point into $prefix (prefix= line: $(grep '^prefix=' "$pcfile"))"
fi
if [ "$(pkg-config --modversion bloomgate)" = "$major.$minor.$(sed -n 's/^#define BG_VERSION_PATCH \([0-9]*\).*/\1/p' "$prefix/include/bloomgate/version.h")" ]; then
    ok "pkg-config --modversion matches version.h"
else
    fail "pkg-config --modversion $(pkg-config --modversion bloomgate) differs from version.h"
fi

# shellcheck disable=SC2086 # the flags are meant to split
if "$cc" -std=c11 -Wall -Wextra -Werror -o "$work/example_pc" "$example" $cflags $libs; then
    need=$(readelf -d "$work/example_pc" | sed -n 's/.*(NEEDED).*\[\(libbloomgate[^]]*\)\].*/\1/p')
    [ "$need" = "libbloomgate.so.$abi" ] && ok "dynamic link: NEEDED $need" \
        || fail "dynamic link: NEEDED '$need', expected libbloomgate.so.$abi"
    resolved=$(LD_LIBRARY_PATH=$libdir ldd "$work/example_pc" | sed -n 's/.*libbloomgate[^ ]* => \([^ ]*\).*/\1/p')
    [ "$resolved" = "$libdir/libbloomgate.so.$abi" ] && ok "loader picks $resolved" \
        || fail "loader picks '$resolved', expected $libdir/libbloomgate.so.$abi"
    check_output "pkg-config dynamic build" "$(LD_LIBRARY_PATH=$libdir "$work/example_pc" 2>&1)"
else
    fail "pkg-config dynamic build does not compile/link"
fi

# Fully static: only archives are searched, so this also proves that
# Libs.private lists everything libbloomgate.a needs.
# shellcheck disable=SC2086
if "$cc" -std=c11 -Wall -Wextra -Werror -static -o "$work/example_pc_static" "$example" \
        $(pkg-config --static --cflags bloomgate) $slibs; then
    if readelf -d "$work/example_pc_static" 2>/dev/null | grep -q NEEDED; then
        fail "static build still has NEEDED entries"
    else
        ok "static link: no shared libraries at all"
    fi
    check_output "pkg-config static build" "$("$work/example_pc_static" 2>&1)"
else
    fail "pkg-config --static build does not link"
fi

step "CMake find_package(bloomgate $major.$minor)"
consumer_build=$work/consumer
gen_args=()
[ -n "$generator" ] && gen_args=(-G "$generator")
# With the guard installed, the consumer also asks for COMPONENTS guard.
guard_args=()
have_guard=0
if [ -e "$libdir/cmake/bloomgate/bloomgateGuardTargets.cmake" ]; then
    have_guard=1
    guard_args=(-DBG_GUARD_EXAMPLE_SOURCE="$src/examples/guard_example.c")
fi
cmake_common=(-DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix"
              -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
# The component's hiredis.pc is the system's: searched after the prefix.
syspc=$(env -u PKG_CONFIG_LIBDIR -u PKG_CONFIG_PATH pkg-config --variable pc_path pkg-config)
if PKG_CONFIG_LIBDIR="$pcdir:$syspc" \
   "$cmake" -S "$src/tests/install/consumer" -B "$consumer_build" "${gen_args[@]}" \
        "${cmake_common[@]}" -DBG_WANT_VERSION="$major.$minor" -DBG_EXAMPLE_SOURCE="$example" \
        "${guard_args[@]}" \
   && "$cmake" --build "$consumer_build"; then
    found=$(sed -n 's/^bloomgate_DIR:PATH=//p' "$consumer_build/CMakeCache.txt")
    [ "$found" = "$libdir/cmake/bloomgate" ] && ok "found the package at $found" \
        || fail "found the package at '$found', not in $prefix"
    # Imported targets carry the installed location in the rpath: no LD_LIBRARY_PATH.
    check_output "CMake consumer (bloomgate::bloomgate)" "$("$consumer_build/consumer_shared" 2>&1)"
    check_output "CMake consumer (bloomgate::static)" "$("$consumer_build/consumer_static" 2>&1)"
    if readelf -d "$consumer_build/consumer_static" | grep -q 'NEEDED.*libbloomgate'; then
        fail "bloomgate::static consumer depends on libbloomgate.so"
    fi
    if [ "$have_guard" = 1 ]; then
        for t in guard guard_static; do
            gout=$("$consumer_build/consumer_$t" 2>&1) || true
            if [[ $gout == *$'42: {"id":42}\n1000000: absent'* ]]; then
                ok "CMake consumer (COMPONENTS guard, bloomgate::$t) ran"
            else
                fail "CMake consumer (bloomgate::$t) printed:"$'\n'"$gout"
            fi
        done
        # Without LD_LIBRARY_PATH: the program's rpath finds libbloomgate_guard,
        # whose $ORIGIN finds the two below it.
        loaded=$(ldd "$consumer_build/consumer_guard" | sed -n 's/^[[:space:]]*\(libbloomgate[^ ]*\) => \([^ ]*\).*/\1 => \2/p' | sort)
        [ "$(echo "$loaded" | grep -c "=> $libdir/")" = 3 ] \
            && ok "bloomgate::guard consumer loads the three libraries from $libdir" \
            || fail "bloomgate::guard consumer loads:"$'\n'"$loaded"
        if readelf -d "$consumer_build/consumer_guard_static" | grep -q 'NEEDED.*libbloomgate'; then
            fail "bloomgate::guard_static consumer depends on a libbloomgate*.so"
        fi
    fi
else
    fail "the CMake consumer does not configure/build"
fi

# A component the package does not have: configuring fails, saying which.
bad_src=$work/bad-component
mkdir -p "$bad_src"
printf '%s\n' 'cmake_minimum_required(VERSION 3.25)' 'project(bad LANGUAGES C)' \
    'find_package(bloomgate CONFIG REQUIRED COMPONENTS nosuch)' > "$bad_src/CMakeLists.txt"
if bad_out=$("$cmake" -S "$bad_src" -B "$work/bad-component-build" "${gen_args[@]}" \
        "${cmake_common[@]}" 2>&1); then
    fail "find_package(bloomgate COMPONENTS nosuch) succeeded"
elif [[ $bad_out == *"unknown component 'nosuch'"* ]]; then
    ok "an unknown component is refused with its name"
else
    fail "find_package(bloomgate COMPONENTS nosuch) failed without naming it:"$'\n'"$bad_out"
fi

# The guard and the remote client: shared libraries linked to the one below
# them (guard -> remote -> core) and static archives, each with a .pc file.
if [ -e "$pcdir/bloomgate-guard.pc" ]; then
    step "pkg-config bloomgate-guard (examples/guard_example.c)"
    for f in "$libdir/libbloomgate_guard.so" "$libdir/libbloomgate_remote.so" \
             "$libdir/libbloomgate_guard.a" "$libdir/libbloomgate_remote.a" \
             "$pcdir/bloomgate-remote.pc" "$prefix/include/bloomgate/guard.h"; do
        [ -e "$f" ] && ok "installed ${f#"$prefix"/}" || fail "not installed: ${f#"$prefix"/}"
    done
    gexample=$src/examples/guard_example.c
    check_guard_output() { # name, output
        if [[ $2 == *$'42: {"id":42}\n1000000: absent'* ]]; then ok "$1 ran"; else fail "$1 printed:"$'\n'"$2"; fi
    }
    gcflags=$(PKG_CONFIG_LIBDIR="$pcdir:$syspc" pkg-config --cflags bloomgate-guard) ||
        fail "pkg-config --cflags bloomgate-guard"
    glibs=$(PKG_CONFIG_LIBDIR="$pcdir:$syspc" pkg-config --libs bloomgate-guard) ||
        fail "pkg-config --libs bloomgate-guard"
    gslibs=$(PKG_CONFIG_LIBDIR="$pcdir:$syspc" pkg-config --static --libs bloomgate-guard) ||
        fail "pkg-config --static --libs bloomgate-guard"
    echo "cflags: $gcflags"; echo "libs: $glibs"; echo "static libs: $gslibs"
    # Shared: the program needs the three libraries, and the loader finds one
    # libbloomgate (through libbloomgate_guard.so's and _remote.so's NEEDED too).
    # shellcheck disable=SC2086 # the flags are meant to split
    if "$cc" -std=c11 -Wall -Wextra -Werror -o "$work/guard_pc" "$gexample" $gcflags $glibs; then
        # The program names what it calls (-Wl,--as-needed may drop
        # libbloomgate_remote); the loader brings the three, once each.
        need=$(readelf -d "$work/guard_pc" | sed -n 's/.*(NEEDED).*\[\(libbloomgate_guard[^]]*\)\].*/\1/p')
        [ "$need" = "libbloomgate_guard.so.$abi" ] && ok "guard dynamic link: NEEDED $need" \
            || fail "guard dynamic link: NEEDED '$need', expected libbloomgate_guard.so.$abi"
        loaded=$(LD_LIBRARY_PATH=$libdir ldd "$work/guard_pc" | sed -n 's/^[[:space:]]*\(libbloomgate[^ ]*\) => \([^ ]*\).*/\1 \2/p' | sort)
        want=$(printf '%s\n' "libbloomgate.so.$abi $libdir/libbloomgate.so.$abi" \
               "libbloomgate_guard.so.$abi $libdir/libbloomgate_guard.so.$abi" \
               "libbloomgate_remote.so.$abi $libdir/libbloomgate_remote.so.$abi")
        [ "$loaded" = "$want" ] && ok "the loader brings one core, one remote, one guard from $libdir" \
            || fail "the guard program loads:"$'\n'"$loaded"
        check_guard_output "pkg-config bloomgate-guard dynamic build" \
            "$(LD_LIBRARY_PATH=$libdir "$work/guard_pc" 2>&1)"
    else
        fail "pkg-config bloomgate-guard build does not compile/link"
    fi
    # Static bloomgate (its three archives, from --static's list), system
    # libraries shared: the binary needs no libbloomgate*.so.
    gsa=()
    for f in $gslibs; do
        case $f in
            -lbloomgate*) gsa+=("-l:lib${f#-l}.a") ;;
            *) gsa+=("$f") ;;
        esac
    done
    # shellcheck disable=SC2086
    if "$cc" -std=c11 -Wall -Wextra -Werror -o "$work/guard_pc_static" "$gexample" $gcflags "${gsa[@]}"; then
        if readelf -d "$work/guard_pc_static" | grep -q 'NEEDED.*libbloomgate'; then
            fail "the guard example built from the archives depends on a libbloomgate*.so"
        else
            ok "guard static link (${gsa[*]}): no libbloomgate*.so"
        fi
        check_guard_output "pkg-config bloomgate-guard static build" "$("$work/guard_pc_static" 2>&1)"
    else
        fail "pkg-config --static bloomgate-guard build does not link"
    fi
    for a in "$libdir/libbloomgate_guard.a" "$libdir/libbloomgate_remote.a"; do
        g=$(nm -g --defined-only "$a" 2>/dev/null | awk 'NF == 3 {print $3}' | grep -v '^bg_' | sort -u || true)
        [ -z "$g" ] && ok "$(basename "$a") defines only bg_/bg__ globals" \
            || fail "$(basename "$a") defines globals outside bg_: $(echo $g)"
    done
    # Each shared library exports exactly its header's functions, holds no
    # copy of a library below it, and has the soname of the release's ABI.
    for lib in remote:REMOTE guard:GUARD; do
        name=${lib%%:*} macro=${lib##*:}
        lso=$libdir/libbloomgate_$name.so
        lexp=$(nm -D --defined-only "$lso" | awk '{print $NF}' | sort)
        ldecl=$(sed -n "/^BG_${macro}_API /{:a;/(/!{N;ba};s/\n/ /g;p}" "$prefix/include/bloomgate/$name.h" \
                | sed -n "s/^BG_${macro}_API [^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p" | sort)
        [ "$lexp" = "$ldecl" ] && ok "$(basename "$lso") exports == BG_${macro}_API declarations ($(echo "$lexp" | wc -l))" \
            || fail "$(basename "$lso") exports differ from BG_${macro}_API:"$'\n'"$(diff <(echo "$ldecl") <(echo "$lexp"))"
        lsoname=$(readelf -d "$lso" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
        [ "$lsoname" = "libbloomgate_$name.so.$abi" ] && ok "soname $lsoname" \
            || fail "soname '$lsoname', expected libbloomgate_$name.so.$abi"
        copies=$(nm --defined-only "$lso" 2>/dev/null | awk '{print $NF}' \
                 | grep -E '^bg_(filter_new|set_allocator)$|^bg__malloc$' || true)
        [ -z "$copies" ] && ok "$(basename "$lso") holds no copy of the core" \
            || fail "$(basename "$lso") defines core functions: $(echo $copies)"
    done
fi

step "exported symbols of $(basename "$so")"
exported=$(nm -D --defined-only "$so" | awk '{print $NF}' | sort)
declared=$(grep -h '^BG_API ' "$prefix"/include/bloomgate/*.h \
           | sed -n 's/^BG_API [^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' | sort)
# The internals that the remote and guard libraries call in the core are
# exported too: declared BG__SHARED in src/common/ (not installed, not API).
shared=$(grep -h '^BG__SHARED ' "$src"/src/common/*.h \
         | sed -n 's/^BG__SHARED [^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' | sort)
echo "$(echo "$exported" | wc -l) exported, $(echo "$declared" | wc -l) declared BG_API," \
     "$(echo "$shared" | wc -l) BG__SHARED"
bad=$(echo "$exported" | grep -v '^bg_' || true)
internal=$(comm -23 <(echo "$exported" | grep -E '^bg__|XXH' || true) <(echo "$shared"))
[ -z "$bad" ] && ok "only bg_* exported" || fail "exported outside bg_*: $(echo $bad)"
[ -z "$internal" ] && ok "no bg__/XXH exported but src/common's BG__SHARED" \
    || fail "internal symbols exported: $(echo $internal)"
extra=$(comm -23 <(echo "$exported") <(sort -u <(echo "$declared") <(echo "$shared")))
missing=$(comm -13 <(echo "$exported") <(sort -u <(echo "$declared") <(echo "$shared")))
[ -z "$extra" ] || fail "exported but not declared BG_API or BG__SHARED: $(echo $extra)"
[ -z "$missing" ] || fail "declared BG_API or BG__SHARED but not exported: $(echo $missing)"
[ -z "$extra$missing" ] && ok "exports == BG_API + BG__SHARED declarations"

# Calls between the library's own functions are bound inside it
# (-fno-semantic-interposition, -Bsymbolic-functions): a PLT slot for a bg_
# function would put an indirect jump into bg_filter_add and _contains.
plt=$(readelf -rW "$so" | awk '/JUMP_SLOT/ && $5 ~ /^bg_/ {print $5}' | sort -u)
[ -z "$plt" ] && ok "no PLT slot for the library's own bg_* functions" \
    || fail "the library calls its own functions through the PLT: $(echo $plt)"

soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[ "$soname" = "libbloomgate.so.$abi" ] && ok "soname $soname" \
    || fail "soname '$soname', expected libbloomgate.so.$abi (BG_ABI_VERSION)"

# The archive's objects may share bg__ internals, but a global XXH_* or any
# other unprefixed name would clash with the user's own symbols.
aglob=$(nm -g --defined-only "$ar" 2>/dev/null | awk 'NF == 3 {print $3}' | grep -v '^bg_' | sort -u || true)
[ -z "$aglob" ] && ok "libbloomgate.a defines only bg_/bg__ globals" \
    || fail "libbloomgate.a defines globals outside bg_: $(echo $aglob)"

step "every installed header stands alone (C99 and C++11)"
cxx=${CXX:-}
[ -z "$cxx" ] && command -v c++ >/dev/null && cxx=c++
for h in "$prefix"/include/bloomgate/*.h; do
    name=bloomgate/$(basename "$h")
    printf '#include <%s>\nint bg__unused;\n' "$name" > "$work/hdr.c"
    "$cc" -std=c99 -pedantic -Wall -Wextra -Werror -I"$prefix/include" -c "$work/hdr.c" \
        -o "$work/hdr.o" || fail "$name does not compile alone as C99"
    if [ -n "$cxx" ]; then
        cp "$work/hdr.c" "$work/hdr.cc"
        "$cxx" -std=c++11 -pedantic -Wall -Wextra -Werror -I"$prefix/include" -c "$work/hdr.cc" \
            -o "$work/hdr.o" || fail "$name does not compile alone as C++11"
    fi
done
ok "headers checked${cxx:+ (C++: $cxx)}"

echo
if [ "$failures" -ne 0 ]; then
    echo "install test: $failures failure(s); scratch files in $work"
    exit 1
fi
echo "install test: all checks passed"
