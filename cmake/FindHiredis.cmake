# SPDX-License-Identifier: BSD-3-Clause
# hiredis (Debian: libhiredis-dev), for the remote client, the guard, the
# seen example, the tests' Redis helpers and the bench's redis_load:
# PkgConfig::HIREDIS. BloomgateFindLibrary.cmake says how.
include(${CMAKE_CURRENT_LIST_DIR}/BloomgateFindLibrary.cmake)
bg_find_library(Hiredis HIREDIS hiredis HEADERS hiredis/hiredis.h hiredis.h
                PATH_SUFFIXES hiredis LIBRARY hiredis)
