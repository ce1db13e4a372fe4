#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Debian packages (ctest package.deb, label package), built, checked,
# installed, used as a user would and purged:
#
#   1. make deb builds libbloomgateABI, libbloomgate-dev, bloomgate,
#      bloomgate-redis-module and bloomgate-doc (Architecture: all) at
#      version.h's version into WORK/deb, and leaves the source checkout as
#      it was
#   2. lintian reports no error and no warning (the rest is printed)
#   3. dpkg -i installs the five; then
#      - /usr/bin/bloomgate --version says version.h's version
#      - man -w bloomgate finds the manual page, which formats without
#        warnings and names 'bloomgate help'
#      - pkg-config bloomgate, bloomgate-remote and bloomgate-guard say the
#        version; a program built with `pkg-config --cflags --libs
#        bloomgate` links /usr/lib/MULTIARCH/libbloomgate.so.ABI and its
#        bg_version() and bg_version_string() say the version
#      - the CMake package's version file says the version
#      - every package's copyright file says BSD-3-Clause, The bloomgate
#        authors
#      - the documentation is bloomgate-doc's, once: /usr/share/doc/bloomgate
#        holds README.md, every docs/*.md of the source tree, the examples
#        and the headers, uncompressed, and no other package holds a
#        markdown file; the tool, the module and the development files
#        suggest bloomgate-doc
#      - every relative link of the markdown files in /usr/share/doc/bloomgate
#        (tests/install/doc_links.sh; not http(s), not a pure #anchor) leads
#        to a file the packages installed
#      - redis-server on a loopback port loads
#        /usr/lib/MULTIARCH/bloomgate/bloomgate.so: BF.ADD and BF.EXISTS
#        answer, MODULE LIST shows bloomgate at MAJOR*10000+MINOR*100+PATCH
#      - no program or library of BUILD_DIR that needs a libbloomgate*.so
#        resolves it to the installed copy (their RUNPATH names the build
#        tree), so that the other tests, which may run meanwhile, do not
#        test the packages instead of the build
#   4. dpkg --purge removes the five, and every file they held
#      (dpkg -L before the purge) is gone
#
# Needs root, dpkg-buildpackage, debhelper, lintian, man, redis-server,
# redis-cli, pkg-config and cc, and none of the five packages installed
# beforehand (the test would replace and then purge them). When one is
# missing: exit status 77 (skip) with the reason, or a failure when
# REQUIRE_ALL is 1/ON (BG_REQUIRE_ALL). The packages are purged whatever
# happens (an EXIT trap).
#
# Usage: package_test.sh SOURCE_DIR BUILD_DIR REDISMODULE_H
# Environment: REQUIRE_ALL, JOBS (make deb -j, default 2).
# Scratch files go to BUILD_DIR/package-test (removed at the start of a
# run, kept afterwards for inspection).
set -uo pipefail

src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
redismodule_h=${3:-}
REQUIRE_ALL=${REQUIRE_ALL:-0}
JOBS=${JOBS:-2}
work=$build/package-test
hdr=$src/include/bloomgate/version.h
num() { sed -n "s/^#define BG_$1 \\([0-9]*\\).*/\\1/p" "$hdr"; }
abi=$(num ABI_VERSION)
# The shared libraries' package is named after their soname,
# libbloomgate.so.ABI (Debian Policy 8.1): a new ABI is a new package that
# can be installed beside the old one.
packages=("libbloomgate$abi" libbloomgate-dev bloomgate bloomgate-redis-module bloomgate-doc)
failures=0
installed=0
redis_pid=""

step() { printf '\n== %s\n' "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; failures=$((failures + 1)); }
die() { fail "$*"; exit 1; }
missing() {
    if [ "$REQUIRE_ALL" = 1 ] || [ "$REQUIRE_ALL" = ON ]; then
        die "$* (required: BG_REQUIRE_ALL)"
    fi
    echo "SKIP: $*"
    exit 77
}

# Runs on every exit: the redis-server stopped, the packages purged, the
# verdict.
finish() {
    local rc=$?
    trap - EXIT
    if [ -n "$redis_pid" ]; then
        kill "$redis_pid" 2>/dev/null
        wait "$redis_pid" 2>/dev/null
    fi
    if [ "$installed" = 1 ]; then
        echo "cleanup: dpkg --purge ${packages[*]}"
        dpkg_locked --purge "${packages[@]}" >/dev/null ||
            echo "FAIL: dpkg --purge ${packages[*]} failed: remove them by hand"
    fi
    if [ "$rc" = 77 ]; then
        exit 77
    fi
    if [ "$rc" != 0 ] || [ "$failures" != 0 ]; then
        printf '\n%d failure(s)\n' "$((failures > 0 ? failures : 1))"
        exit 1
    fi
    printf '\nall package checks passed\n'
    exit 0
}
trap finish EXIT

# dpkg ARGS..., waiting up to two minutes for the lock that another dpkg or
# apt-get (another user's install) holds.
dpkg_locked() {
    local out _
    for _ in $(seq 1 60); do
        if out=$(dpkg "$@" 2>&1); then
            printf '%s\n' "$out"
            return 0
        fi
        case $out in
        *"lock"*) sleep 2 ;;
        *) printf '%s\n' "$out" >&2; return 1 ;;
        esac
    done
    printf '%s\n' "$out" >&2
    return 1
}

step "preconditions"
[ "$(id -u)" = 0 ] || missing "not root: dpkg -i needs root"
for tool in dpkg dpkg-buildpackage dpkg-deb dh lintian man redis-server redis-cli pkg-config cc; do
    command -v "$tool" >/dev/null || missing "no $tool on PATH (scripts/deps.sh installs it)"
done
[ -n "$redismodule_h" ] && [ -f "$redismodule_h" ] ||
    missing "no redismodule.h: this tree does not build the Redis module (BG_REDISMODULE_H)"
if ! deps=$(cd "$src" && dpkg-checkbuilddeps 2>&1); then
    missing "debian/control's Build-Depends: $deps"
fi
for p in "${packages[@]}"; do
    if dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qv '^not-installed$'; then
        missing "$p is installed already: this test would replace it, then purge it"
    fi
done
ok "root, the tools, the build dependencies; none of the packages installed"

major=$(num VERSION_MAJOR) minor=$(num VERSION_MINOR) patch=$(num VERSION_PATCH)
version=$major.$minor.$patch
module_version=$((major * 10000 + minor * 100 + patch))
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
arch=$(dpkg --print-architecture)
libdir=/usr/lib/$multiarch
module=$libdir/bloomgate/bloomgate.so
echo "version $version (module $module_version, soname libbloomgate.so.$abi), $arch ($multiarch)"

rm -rf "$work"
mkdir -p "$work"
deb_dir=$work/deb

step "make deb"
# The checkout's state, when it is one (make deb copies a tarball's tree too).
status() { git -C "$src" status --porcelain --untracked-files=all 2>/dev/null || echo "not a git checkout"; }
before=$(status)
if ! make -C "$src" --no-print-directory deb DEB_DIR="$deb_dir" REDISMODULE_H="$redismodule_h" \
        JOBS="$JOBS" >"$work/make-deb.log" 2>&1; then
    tail -n 40 "$work/make-deb.log"
    die "make deb failed (log: $work/make-deb.log)"
fi
tail -n 6 "$work/make-deb.log"
after=$(status)
[ "$before" = "$after" ] && ok "the source checkout is as it was" ||
    fail "make deb changed the source checkout:"$'\n'"$(diff <(echo "$before") <(echo "$after"))"

debs=()
for p in "${packages[@]}"; do
    # The documentation is the same on every architecture.
    deb_arch=$arch
    [ "$p" = bloomgate-doc ] && deb_arch=all
    deb=$deb_dir/${p}_${version}_$deb_arch.deb
    if [ ! -f "$deb" ]; then
        fail "no $(basename "$deb") (in $deb_dir: $(cd "$deb_dir" && echo *.deb))"
        continue
    fi
    debs+=("$deb")
    got="$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)"
    [ "$got" = "$p $version" ] && ok "$(basename "$deb"): $p $version" ||
        fail "$(basename "$deb") says '$got', expected '$p $version'"
done
[ "${#debs[@]}" = "${#packages[@]}" ] || die "not all ${#packages[@]} packages were built"
doc_deb=$deb_dir/bloomgate-doc_${version}_all.deb
got="$(dpkg-deb -f "$doc_deb" Architecture) $(dpkg-deb -f "$doc_deb" Multi-Arch) $(dpkg-deb -f "$doc_deb" Section)"
[ "$got" = "all foreign doc" ] && ok "bloomgate-doc: Architecture: all, Multi-Arch: foreign, Section: doc" ||
    fail "bloomgate-doc: Architecture, Multi-Arch, Section: '$got', expected 'all foreign doc'"
deps=$(dpkg-deb -f "$deb_dir/bloomgate-redis-module_${version}_$arch.deb" Depends)
[[ ", $deps," == *", redis-server,"* ]] && ok "bloomgate-redis-module depends on redis-server" ||
    fail "bloomgate-redis-module: Depends: $deps (no redis-server)"
contents=$(dpkg-deb -c "$deb_dir/bloomgate-redis-module_${version}_$arch.deb")
if grep -q "^-rwxr-xr-x .* \\.$module\$" <<<"$contents"; then
    ok "bloomgate.so is packaged at $module, mode 755 (redis-server loads no module it cannot execute)"
else
    fail "bloomgate-redis-module does not hold $module with mode 755:"$'\n'"$contents"
fi

step "lintian"
# Errors and warnings fail the test; the rest is printed for the reader.
lintian --fail-on error,warning --display-info "$deb_dir/bloomgate_${version}_$arch.changes" >"$work/lintian.txt" 2>&1
lintian_rc=$?
cat "$work/lintian.txt"
if [ "$lintian_rc" = 0 ] && ! grep -q '^[EW]: ' "$work/lintian.txt"; then
    ok "lintian: no error, no warning"
else
    fail "lintian reports errors or warnings (status $lintian_rc)"
fi

step "dpkg -i"
installed=1
if ! dpkg_locked -i "${debs[@]}" >"$work/dpkg-i.log"; then
    cat "$work/dpkg-i.log"
    die "dpkg -i failed"
fi
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status} ${Version}' "$p" 2>/dev/null)
    [ "$status" = "installed $version" ] && ok "$p installed" || fail "$p: '$status'"
    dpkg -L "$p" >"$work/$p.list"
done
# Every path the packages installed: what the links must lead to, and what
# the purge must remove.
lists=()
for p in "${packages[@]}"; do lists+=("$work/$p.list"); done
sort -u "${lists[@]}" >"$work/installed.list"

step "the tool and its manual page"
out=$(/usr/bin/bloomgate --version 2>&1)
[[ $out == "bloomgate $version (library $version"* ]] && ok "bloomgate --version: $out" ||
    fail "bloomgate --version: '$out', expected 'bloomgate $version (library $version, ...)'"
page=$(man -w bloomgate 2>&1)
if [ "$page" = /usr/share/man/man1/bloomgate.1.gz ]; then
    ok "man -w bloomgate: $page"
    warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >"$work/man.txt")
    [ -z "$warnings" ] && ok "the page formats without warnings" || fail "man --warnings: $warnings"
    grep -q 'bloomgate help' "$work/man.txt" && ok "the page names 'bloomgate help'" ||
        fail "the page does not name 'bloomgate help'"
else
    # A dpkg path-exclude for /usr/share/man (minimal images) drops the page.
    fail "man -w bloomgate: '$page' (dpkg -L bloomgate: $(grep man "$work/bloomgate.list" | tr '\n' ' '))"
fi

step "pkg-config and the CMake package"
# The system's pkg-config search path only: nothing from the environment.
pc() { env -u PKG_CONFIG_PATH -u PKG_CONFIG_LIBDIR -u PKG_CONFIG_SYSROOT_DIR pkg-config "$@"; }
for m in bloomgate bloomgate-remote bloomgate-guard; do
    got=$(pc --modversion "$m" 2>&1)
    [ "$got" = "$version" ] && ok "pkg-config --modversion $m: $got" ||
        fail "pkg-config --modversion $m: '$got', expected $version"
done
got=$(pc --variable=libdir bloomgate)
[ "$got" = "$libdir" ] && ok "bloomgate.pc: libdir=$got" || fail "bloomgate.pc: libdir=$got, expected $libdir"
cat >"$work/version_check.c" <<'EOF'
#include <stdio.h>
#include <string.h>

#include <bloomgate/filter.h>
#include <bloomgate/version.h>

int main(void)
{
    bg_filter *f;
    bg_filter_options opts = {.capacity = 1000, .error_rate = 0.01};
    if (bg_version() != BG_VERSION_HEX) {
        fprintf(stderr, "bg_version() %#x, header %#x\n", bg_version(), (unsigned)BG_VERSION_HEX);
        return 1;
    }
    if (bg_filter_new(&f, &opts) != BG_OK)
        return 1;
    bg_filter_add(f, "alice", 5);
    int found = bg_filter_contains(f, "alice", 5);
    bg_filter_free(f);
    printf("%s %s\n", bg_version_string(), found ? "found" : "lost");
    return found ? 0 : 1;
}
EOF
# shellcheck disable=SC2046 # pkg-config's words are separate arguments
if cc -std=c11 -Wall -Wextra -Werror -o "$work/version_check" "$work/version_check.c" \
        $(pc --cflags --libs bloomgate); then
    out=$("$work/version_check" 2>&1)
    [ "$out" = "$version found" ] && ok "a program built with pkg-config bloomgate: '$out'" ||
        fail "the pkg-config program printed '$out', expected '$version found'"
    # /lib is /usr/lib on a merged-/usr system: compare where they lead.
    got=$(ldd "$work/version_check" | sed -n 's/^[[:space:]]*libbloomgate\.so[^ ]* => \([^ ]*\).*/\1/p')
    [ -n "$got" ] && [ "$(readlink -f "$got")" = "$(readlink -f "$libdir/libbloomgate.so.$abi")" ] &&
        ok "it loads $got" ||
        fail "it loads '$got', expected $libdir/libbloomgate.so.$abi"
else
    fail "a program does not build with pkg-config --cflags --libs bloomgate"
fi
cfgver=$libdir/cmake/bloomgate/bloomgateConfigVersion.cmake
if grep -qF "set(PACKAGE_VERSION \"$version\")" "$cfgver" 2>/dev/null; then
    ok "$cfgver: PACKAGE_VERSION $version"
else
    fail "$cfgver: no PACKAGE_VERSION \"$version\""
fi
for p in "${packages[@]}"; do
    c=/usr/share/doc/$p/copyright
    if grep -q '^License: BSD-3-Clause' "$c" 2>/dev/null && grep -q '^Copyright: .*The bloomgate authors' "$c"; then
        ok "$c: BSD-3-Clause, The bloomgate authors"
    else
        fail "$c does not say BSD-3-Clause, The bloomgate authors"
    fi
done

step "the documentation"
doc=/usr/share/doc/bloomgate
for p in "${packages[@]}"; do
    [ "$p" = bloomgate-doc ] || [ "$p" = "libbloomgate$abi" ] && continue
    sug=$(dpkg-query -W -f='${Suggests}' "$p")
    [[ ", $sug," == *", bloomgate-doc,"* ]] && ok "$p suggests bloomgate-doc" ||
        fail "$p: Suggests: '$sug' (no bloomgate-doc)"
done
want=("$doc/README.md" "$doc/CHANGELOG.md" "$doc/SECURITY.md" "$doc/docs/man/bloomgate.1"
      "$doc/examples/guard_example.c" "$doc/examples/products/README.md" "$doc/include/bloomgate/filter.h")
for f in "$src"/docs/*.md; do want+=("$doc/docs/$(basename "$f")"); done
absent=()
for f in "${want[@]}"; do
    grep -qxF "$f" "$work/bloomgate-doc.list" || absent+=("$f")
done
[ "${#absent[@]}" = 0 ] && ok "bloomgate-doc holds README.md, all $(ls "$src"/docs/*.md | wc -l) docs/*.md, the manual page's source, the examples and the headers in $doc" ||
    fail "bloomgate-doc does not hold: ${absent[*]}"
gz=$(grep "^$doc/.*\.gz\$" "$work/bloomgate-doc.list" || true)
[ -z "$gz" ] && ok "nothing of bloomgate-doc's tree in $doc is compressed" ||
    fail "bloomgate-doc compresses files that the docs link by name: $(echo $gz)"
others=()
for p in "${packages[@]}"; do
    [ "$p" = bloomgate-doc ] || others+=("$work/$p.list")
done
md=$(grep -h '\.md$' "${others[@]}" || true)
[ -z "$md" ] && ok "no other package holds a markdown file" ||
    fail "markdown files outside bloomgate-doc: $(echo $md)"
if bash "$src/tests/install/doc_links.sh" "$doc" "$work/installed.list" >"$work/doc-links.txt"; then
    ok "$(sed -n 's/^ok: //p' "$work/doc-links.txt") (to files the packages installed)"
else
    cat "$work/doc-links.txt"
    fail "relative links in $doc do not resolve"
fi

step "redis-server --loadmodule $module"
rdir=$work/redis
mkdir -p "$rdir"
port=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
    p=$((27000 + RANDOM % 1000))
    rm -f "$rdir/redis.log"
    /usr/bin/redis-server --port "$p" --bind 127.0.0.1 --dir "$rdir" --save '' --appendonly no \
        --logfile "$rdir/redis.log" --loadmodule "$module" &
    redis_pid=$!
    for _w in $(seq 1 100); do
        grep -q "Ready to accept connections" "$rdir/redis.log" 2>/dev/null && { port=$p; break; }
        kill -0 "$redis_pid" 2>/dev/null || break
        sleep 0.05
    done
    [ -n "$port" ] && break
    kill "$redis_pid" 2>/dev/null
    wait "$redis_pid" 2>/dev/null
    redis_pid=""
    grep -q "Address already in use" "$rdir/redis.log" 2>/dev/null || break
done
if [ -z "$port" ]; then
    fail "redis-server did not start with $module: $(tail -n 5 "$rdir/redis.log" 2>/dev/null)"
else
    cli() { redis-cli -p "$port" "$@" 2>&1; }
    got="$(cli BF.ADD k alice) $(cli BF.EXISTS k alice) $(cli BF.EXISTS k bob)"
    [ "$got" = "1 1 0" ] && ok "BF.ADD k alice, BF.EXISTS k alice, BF.EXISTS k bob: $got" ||
        fail "BF.ADD/BF.EXISTS/BF.EXISTS: '$got', expected '1 1 0'"
    list=$(cli MODULE LIST | tr '\n' ' ')
    [[ " $list" == *" name bloomgate ver $module_version "* ]] &&
        ok "MODULE LIST: bloomgate, version $module_version" ||
        fail "MODULE LIST: '$list', expected name bloomgate ver $module_version"
    [[ " $list" == *" path $module "* ]] && ok "MODULE LIST: path $module" ||
        fail "MODULE LIST does not show path $module: '$list'"
    cli SHUTDOWN NOSAVE >/dev/null
    wait "$redis_pid" 2>/dev/null
    redis_pid=""
fi

step "the build tree does not use the installed libraries"
# Every program and library that CMake built here and that needs a
# libbloomgate*.so must find it in the build tree (its RUNPATH), not in
# $libdir (nor in /lib, the same directory on a merged-/usr system).
# Programs without a RUNPATH are the scratch builds of other tests
# (install.package's pkg-config programs), which run them with
# LD_LIBRARY_PATH pointing at their own prefix.
checked=0
unchecked=0
while IFS= read -r -d '' f; do
    needed=$(readelf -d "$f" 2>/dev/null) || continue
    [[ $needed == *"(NEEDED)"*"[libbloomgate"* ]] || continue
    if [[ $needed != *"(RUNPATH)"* && $needed != *"(RPATH)"* ]]; then
        unchecked=$((unchecked + 1))
        continue
    fi
    checked=$((checked + 1))
    wrong=$(ldd "$f" 2>/dev/null | grep -E "libbloomgate[^ ]* => " | grep -vF "=> $build/" || true)
    [ -z "$wrong" ] || fail "$f loads a libbloomgate from outside the build tree: $wrong"
done < <(find "$build" -path "$work" -prune -o -path "$build/CMakeFiles" -prune -o \
              -type f \( -perm -u+x -o -name '*.so*' \) -print0)
[ "$checked" -gt 0 ] &&
    ok "$checked programs and libraries of $build load their own libbloomgate*.so ($unchecked without a RUNPATH not checked)" ||
    fail "no program or library of $build needs a libbloomgate*.so: nothing checked"

step "dpkg --purge"
if dpkg_locked --purge "${packages[@]}" >"$work/dpkg-purge.log"; then
    installed=0
    ok "purged ${packages[*]}"
else
    cat "$work/dpkg-purge.log"
    die "dpkg --purge failed"
fi
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
    [ -z "$status" ] || [ "$status" = not-installed ] && ok "$p is gone from dpkg's database" ||
        fail "$p after the purge: '$status'"
done
left=0
while IFS= read -r path; do
    [ "$path" = /. ] && continue
    if [ -d "$path" ] && [ ! -L "$path" ]; then
        # A directory stays when another package owns it too.
        dpkg -S "$path" >/dev/null 2>&1 && continue
        fail "directory left behind: $path"
        left=$((left + 1))
    elif [ -e "$path" ] || [ -L "$path" ]; then
        fail "file left behind: $path"
        left=$((left + 1))
    fi
done <"$work/installed.list"
[ "$left" = 0 ] && ok "nothing left of the $(wc -l <"$work/installed.list") paths the packages installed" ||
    fail "$left path(s) left behind"
exit 0
