# SPDX-License-Identifier: BSD-3-Clause
# MariaDB's client library, libmariadb (Debian: libmariadb-dev), one of the
# products store's backends: PkgConfig::LIBMARIADB.
# BloomgateFindLibrary.cmake says how.
include(${CMAKE_CURRENT_LIST_DIR}/BloomgateFindLibrary.cmake)
bg_find_library(MariaDB LIBMARIADB libmariadb HEADERS mysql.h PATH_SUFFIXES mariadb
                LIBRARY mariadb)
