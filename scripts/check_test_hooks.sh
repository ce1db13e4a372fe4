#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Checks that the test and bench hooks are in the testing archives and only
# there (src/remote/remote_testing.h and src/guard/guard_testing.h say why).
#
# Usage: check_test_hooks.sh NM --production LIB... --testing LIB...
#                                                   (ctest: layering.test_hooks)
#
#   --production  the libraries that are installed (libbloomgate_remote.so,
#                 .a, libbloomgate_guard.so, .a): none may name a
#                 bg__*_testing_* symbol, defined or referenced, in its
#                 symbol table or (a shared library) its dynamic one.
#   --testing     the testing archives (libbloomgate_COMPONENT_testing.a):
#                 each must define bg__COMPONENT_testing_* symbols, so that
#                 the check cannot pass by finding nothing anywhere (a pattern
#                 that no longer matches, hooks renamed, an empty archive).
# NM is nm from binutils (CMake's CMAKE_NM). Prints each offending symbol
# with its library and exits 1 if any check fails.
set -u

if [ $# -lt 1 ]; then
    echo "usage: $0 NM --production LIB... --testing LIB..." >&2
    exit 2
fi
nm=$1
shift
hook='bg__[A-Za-z0-9_]*_testing_[A-Za-z0-9_]*'
status=0
kind=
checked=0

# The symbols of $1, one "TYPE NAME" a line: the symbol table, and a shared
# library's dynamic one too (a stripped library has only that).
symbols() {
    "$nm" "$1" 2>/dev/null | awk 'NF >= 2 { print $(NF - 1), $NF }'
    case $1 in
    *.so | *.so.*) "$nm" -D "$1" 2>/dev/null | awk 'NF >= 2 { print $(NF - 1), $NF }' ;;
    esac
}

for arg in "$@"; do
    case $arg in
    --production | --testing)
        kind=$arg
        continue
        ;;
    esac
    if [ -z "$kind" ]; then
        echo "$0: $arg: say --production or --testing first" >&2
        exit 2
    fi
    if [ ! -f "$arg" ]; then
        echo "FAIL $arg: no such file (is it built?)" >&2
        status=1
        continue
    fi
    if ! "$nm" "$arg" >/dev/null 2>&1; then
        echo "FAIL $arg: $nm cannot read it" >&2
        status=1
        continue
    fi
    checked=$((checked + 1))
    if [ "$kind" = --production ]; then
        found=$(symbols "$arg" | grep -E "^[A-Za-z?-] $hook\$" | sort -u)
        if [ -n "$found" ]; then
            echo "FAIL $arg: a production library holds test hooks:" >&2
            echo "$found" | sed 's/^/    /' >&2
            status=1
        else
            echo "ok   $arg: no bg__*_testing_* symbol"
        fi
    else
        base=$(basename "$arg")
        component=${base#libbloomgate_}
        component=${component%_testing.a}
        if [ "$component" = "$base" ] || [ -z "$component" ]; then
            echo "FAIL $arg: not a testing archive (libbloomgate_COMPONENT_testing.a)" >&2
            status=1
            continue
        fi
        n=$(symbols "$arg" | grep -cE "^[A-TV-Za-z] bg__${component}_testing_[A-Za-z0-9_]*\$")
        if [ "$n" -eq 0 ]; then
            echo "FAIL $arg: the testing archive defines no bg__${component}_testing_* symbol" >&2
            status=1
        else
            echo "ok   $arg: $n bg__${component}_testing_* symbols defined"
        fi
    fi
done

if [ "$checked" -eq 0 ]; then
    echo "FAIL: no library checked" >&2
    status=1
fi
exit $status
