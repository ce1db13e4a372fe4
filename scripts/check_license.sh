#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Checks that every source, script and build file says its license: an
# "SPDX-License-Identifier: BSD-3-Clause" line in its first two lines (the
# second when the first is a #! line). Docs, test data and generated files
# are not checked.
#
# Usage: check_license.sh [SOURCE_DIR]            (ctest: layering.license)
#
# The files are git's tracked ones, so that a new file is checked the moment
# it is added; outside a git checkout (a source tarball) every matching file
# under SOURCE_DIR but build trees and .deps. Prints each file without the
# line and exits 1 if there is one, or if no file was found at all (a check
# that finds nothing passes for the wrong reason).
set -u

root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2
tag='SPDX-License-Identifier: BSD-3-Clause'

# The files to check, one a line: C, shell, Python, Lua, JavaScript, CMake,
# make, templates (*.in), the CI entry point, manual pages (roff: a .\"
# comment line) and the Debian packaging, but debian/source/format, a
# single line that takes no comment.
list() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
        [ "$(git rev-parse --show-toplevel)" = "$(pwd -P)" ]; then
        git ls-files
    else
        find . -type d \( -name '.?*' -o -name 'build*' -o -name .deps \) -prune -o -type f -print |
            sed 's|^\./||'
        [ -f .ci/run ] && echo .ci/run
    fi | grep -E '(\.(c|h|sh|py|lua|js|cmake|in)|(^|/)CMakeLists\.txt|(^|/)Makefile|^\.ci/run)$|^docs/man/.*\.[1-9]$|^debian/' |
        grep -vxF debian/source/format | sort -u
}

files=$(list)
for f in $files; do
    [ -f "$f" ] || files=$(echo "$files" | grep -vxF "$f") # deleted, not yet staged
done
if [ -z "$files" ]; then
    echo "FAIL: no file checked under $(pwd)" >&2
    exit 1
fi

# One awk for all the files (a process per file is slow): a file passes when
# one of its first two lines holds the tag; an empty file fails.
# shellcheck disable=SC2086 # one file a word: paths here hold no spaces
awk -v tag="$tag" '
    FNR <= 2 && index($0, tag) { ok[FILENAME] = 1 }
    END {
        bad = 0
        for (i = 1; i < ARGC; i++)
            if (!(ARGV[i] in ok)) {
                printf "FAIL %s: no \"%s\" line in its first two lines\n", ARGV[i], tag > "/dev/stderr"
                bad = 1
            }
        if (!bad)
            printf "ok   %d files carry the %s line\n", ARGC - 1, tag
        exit bad
    }' $files
