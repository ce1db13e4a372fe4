# SPDX-License-Identifier: BSD-3-Clause
# cmocka (Debian: libcmocka-dev), the unit tests' framework:
# PkgConfig::CMOCKA. BloomgateFindLibrary.cmake says how.
include(${CMAKE_CURRENT_LIST_DIR}/BloomgateFindLibrary.cmake)
bg_find_library(Cmocka CMOCKA cmocka HEADERS cmocka.h LIBRARY cmocka)
