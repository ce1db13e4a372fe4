#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian packages that building, testing, benchmarking and the
# demo need. Idempotent, and fast when everything is present: apt-get runs
# only when a package is missing. Needs root (or sudo) only then.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config   # the build
  libxxhash-dev                                  # XXH3, inlined from its header
  libcmocka-dev                                  # unit tests
  libbloom-dev                                   # the benchmark's baseline
  clang libclang-rt-dev                          # sanitizers and fuzzing with clang
  liblzf-dev                                     # ... the RDB fuzzer reads Redis's LZF strings
  jq                                             # the CLI tests validate --json output
  redis-server redis-tools                       # the Redis module's tests and benchmark
  libhiredis-dev                                 # the Redis benchmark's load generator
  python3 python3-redis                          # its integration tests (redis-py: a real client)
  dpkg-dev                                       # apt-get source (redismodule.h, below)
  libmicrohttpd-dev                              # examples/products: the HTTP server
  libsqlite3-dev libpq-dev libmariadb-dev        # ... its storage: SQLite, PostgreSQL, MariaDB
  postgresql mariadb-server                      # ... the servers its tests and demo start
  wrk curl                                       # ... the demo's load generator, the tests' client
  sqlite3                                        # the README's quick starts feed the tool from a database
  debhelper                                      # make deb: the Debian packages (debian/, dpkg-dev above)
  lintian                                        # ... their check (ctest package.deb)
  man-db                                         # ... which finds the tool's manual page with man -w
)
# node and npm for the README's node-redis quick start: whichever node is
# installed (Debian's nodejs, or another vendor's that bundles npm) is
# used; Debian's packages only when there is none, so that Debian's npm is
# never installed over a node that brings its own.
if ! command -v node >/dev/null 2>&1; then
  packages+=(nodejs)
fi
if ! command -v npm >/dev/null 2>&1; then
  packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
here=$(cd "$(dirname "$0")/.." && pwd)

# redismodule.h: no Debian -dev package ships it, so it comes from Debian's
# source package of the installed redis-server, the exact same version, into
# .deps/redis/ (not committed). Needs deb-src lines for `apt-get source`.
fetch_redismodule_h() {
  local ver dest tmp
  ver=$(dpkg-query -W -f='${Version}' redis-server)
  dest="$here/.deps/redis"
  if [ -f "$dest/redismodule.h" ] && [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$ver" ]; then
    return 0
  fi
  if ! apt-get source --print-uris -qq "redis=$ver" >/dev/null 2>&1; then
    echo "deps: adding deb-src lines for apt-get source" >&2
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      sed -e 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
        | $sudo tee /etc/apt/sources.list.d/bloomgate-deb-src.sources >/dev/null
    else
      sed -n -e 's/^deb /deb-src /p' /etc/apt/sources.list \
        | $sudo tee /etc/apt/sources.list.d/bloomgate-deb-src.list >/dev/null
    fi
    $sudo apt-get update -qq
  fi
  echo "deps: fetching redismodule.h from Debian's redis $ver source package" >&2
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get source -qq "redis=$ver" >/dev/null 2>&1) ||
    { echo "deps: apt-get source redis=$ver failed" >&2; rm -rf "$tmp"; exit 1; }
  mkdir -p "$dest"
  cp "$tmp"/redis-*/src/redismodule.h "$dest/redismodule.h"
  echo "$ver" >"$dest/VERSION"
  rm -rf "$tmp"
}

# node-redis, pinned by tests/quickstart/node/package-lock.json, into
# .deps/node/node_modules (not committed) from the npm registry, again only
# when the lock file changed. Without the registry the quick start's node
# test skips (fails under BG_REQUIRE_ALL), and nothing else is affected.
fetch_node_redis() {
  local src="$here/tests/quickstart/node" dest="$here/.deps/node"
  if [ -f "$dest/node_modules/redis/package.json" ] &&
    cmp -s "$src/package-lock.json" "$dest/package-lock.json"; then
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "deps: no npm: node-redis not installed (the quickstart.module_node test skips)" >&2
    return 0
  fi
  echo "deps: installing node-redis into .deps/node (npm ci)" >&2
  mkdir -p "$dest"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  if ! (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
    echo "deps: npm ci failed: node-redis not installed (the quickstart.module_node test skips)" >&2
    rm -f "$dest/package-lock.json"
  fi
}

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
fi

if [ ${#missing[@]} -eq 0 ]; then
  fetch_redismodule_h
  fetch_node_redis
  exit 0
fi

echo "deps: installing ${missing[*]}" >&2
if [ -n "$sudo" ]; then
  command -v sudo >/dev/null || { echo "deps: need root to install ${missing[*]}" >&2; exit 1; }
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# A fresh install starts the servers as system services; the tests and the
# demo start their own, on loopback, in temporary directories.
for unit in redis-server postgresql mariadb; do
  $sudo systemctl disable --now "$unit" >/dev/null 2>&1 || true
done
fetch_redismodule_h
fetch_node_redis
