# SPDX-License-Identifier: BSD-3-Clause
# libmicrohttpd (Debian: libmicrohttpd-dev), the products service's HTTP
# server: PkgConfig::MICROHTTPD. BloomgateFindLibrary.cmake says how.
include(${CMAKE_CURRENT_LIST_DIR}/BloomgateFindLibrary.cmake)
bg_find_library(Microhttpd MICROHTTPD libmicrohttpd HEADERS microhttpd.h LIBRARY microhttpd)
