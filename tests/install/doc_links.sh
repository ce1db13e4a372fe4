#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every relative link of the markdown files under DIR leads to a file that
# is there: the check that an installed documentation tree (cmake --install,
# the bloomgate-doc package) reads as the source tree does.
#
#   doc_links.sh DIR [LIST]
#
# A link is an inline link or image, [text](target) or ![alt](target), or a
# reference definition, "[label]: target", outside fenced code blocks and
# code spans. Skipped: targets with a scheme (https:, mailto:) and pure
# #anchors; the #fragment of the others is dropped. A target is resolved
# from the directory of the file that holds it, following symlinks, and must
# exist; with LIST (a file of absolute paths, one a line, such as dpkg -L
# prints), the path it resolves to must be on the list too.
#
# Prints "ok: N links in M files resolve" and exits 0, or one "FAIL: FILE:LINE:
# TARGET (why)" line per broken link and exits 1. Used by tests/install/run.sh
# and tests/package/package_test.sh.
set -uo pipefail

dir=$(cd "$1" && pwd)
list=${2:-}
links=0
files=0
broken=0

# FILE -> "LINE<TAB>TARGET" per link. Fences open and close with ``` or ~~~
# at the start of a line (indented up to three spaces); code spans are
# blanked before links are looked for, so `a](b)` in code is no link.
extract() {
    awk '
        /^ {0,3}(```|~~~)/ { fence = !fence; next }
        fence { next }
        {
            line = $0
            gsub(/`[^`]*`/, "``", line)
            if (match(line, /^ {0,3}\[[^]]+\]:[ \t]+/)) {
                t = substr(line, RLENGTH + 1)
                sub(/[ \t].*$/, "", t)
                print NR "\t" t
                next
            }
            while (match(line, /\]\([^)]*\)/)) {
                t = substr(line, RSTART + 2, RLENGTH - 3)
                line = substr(line, RSTART + RLENGTH)
                sub(/^[ \t]+/, "", t)
                sub(/[ \t]+".*$/, "", t)
                print NR "\t" t
            }
        }' "$1"
}

while IFS= read -r -d '' md; do
    files=$((files + 1))
    base=$(dirname "$md")
    while IFS=$'\t' read -r line target; do
        target=${target#<}
        target=${target%>}
        case $target in
        '' | '#'*) continue ;;
        [A-Za-z]*:*) [[ $target =~ ^[A-Za-z][A-Za-z0-9+.-]*: ]] && continue ;;
        esac
        links=$((links + 1))
        path=${target%%#*}
        path=${path//%20/ }
        [[ $path == /* ]] || path=$base/$path
        where=${md#"$dir"/}:$line:\ $target
        if [ ! -e "$path" ]; then
            echo "FAIL: $where (no such file)"
            broken=$((broken + 1))
        elif [ -n "$list" ] && ! grep -qxF "$(readlink -f "$path")" "$list"; then
            echo "FAIL: $where (leads to $(readlink -f "$path"), which no package installed)"
            broken=$((broken + 1))
        fi
    done < <(extract "$md")
done < <(find "$dir" -name '*.md' -type f -print0 | sort -z)

if [ "$broken" != 0 ]; then
    echo "FAIL: $broken of $links relative links in $files markdown files under $dir do not resolve"
    exit 1
fi
if [ "$files" = 0 ]; then
    echo "FAIL: no markdown file under $dir"
    exit 1
fi
echo "ok: $links relative links in $files markdown files under $dir resolve"
