#!/usr/bin/env bash
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
  jq                                             # the CLI tests validate --json output
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root to install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
