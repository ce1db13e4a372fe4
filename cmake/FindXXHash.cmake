# SPDX-License-Identifier: BSD-3-Clause
# xxhash.h (Debian: libxxhash-dev), the core's one dependency. Only the
# header: XXH3 is compiled inline (XXH_INLINE_ALL), nothing links
# libxxhash. Sets XXHash_FOUND and XXHASH_INCLUDE_DIRS; pkg-config, when it
# is there, only hints where the header is.
include(FindPackageHandleStandardArgs)
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(_BG_XXHASH_PC QUIET libxxhash)
endif()
find_path(XXHASH_INCLUDE_DIR xxhash.h HINTS ${_BG_XXHASH_PC_INCLUDE_DIRS})
mark_as_advanced(XXHASH_INCLUDE_DIR)
if(XXHASH_INCLUDE_DIR AND EXISTS "${XXHASH_INCLUDE_DIR}/xxhash.h")
  file(STRINGS "${XXHASH_INCLUDE_DIR}/xxhash.h" _bg_xxh_ver
       REGEX "^#[ \t]*define[ \t]+XXH_VERSION_(MAJOR|MINOR|RELEASE)[ \t]+[0-9]+")
  set(XXHash_VERSION "")
  foreach(_bg_part MAJOR MINOR RELEASE)
    string(REGEX MATCH "XXH_VERSION_${_bg_part}[ \t]+([0-9]+)" _ "${_bg_xxh_ver}")
    list(APPEND XXHash_VERSION ${CMAKE_MATCH_1})
  endforeach()
  list(JOIN XXHash_VERSION "." XXHash_VERSION)
endif()
find_package_handle_standard_args(XXHash REQUIRED_VARS XXHASH_INCLUDE_DIR VERSION_VAR XXHash_VERSION)
set(XXHASH_INCLUDE_DIRS ${XXHASH_INCLUDE_DIR})
