# SPDX-License-Identifier: BSD-3-Clause
# bg_find_library(NAME PREFIX MODULE HEADERS h... [PATH_SUFFIXES dir...]
#                 LIBRARY lib): the body of
# the Find modules next to this file, for a C library that Debian ships with
# a pkg-config file.
#
# Through pkg-config when it is there (pkg_check_modules(PREFIX MODULE)),
# else by hand: the directory of each header in HEADERS, also looked for in
# PATH_SUFFIXES below the usual places (the code includes some as
# <dir/name.h> and some as <name.h>: every directory goes in), and
# libLIBRARY. Either way the result is the imported target
# PkgConfig::PREFIX, the name pkg_check_modules gives it, so that targets
# exported with a dependency on it (bloomgate::remote on hiredis) read the
# same whichever way it was found. Sets NAME_FOUND (through
# find_package_handle_standard_args) and NAME_VERSION when pkg-config knows
# it.
#
# A Find module rather than pkg_check_modules alone: find_package(NAME) can
# be turned off from the command line (-DCMAKE_DISABLE_FIND_PACKAGE_NAME=ON),
# which is how tests/install/minimal.sh hides every optional dependency.
include(FindPackageHandleStandardArgs)

macro(bg_find_library _bg_name _bg_prefix _bg_module)
  cmake_parse_arguments(_bg_fl "" "LIBRARY" "HEADERS;PATH_SUFFIXES" ${ARGN})
  if(NOT TARGET PkgConfig::${_bg_prefix})
    find_package(PkgConfig QUIET)
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(${_bg_prefix} QUIET IMPORTED_TARGET ${_bg_module})
    endif()
  endif()
  if(NOT TARGET PkgConfig::${_bg_prefix})
    set(_bg_fl_dirs "")
    set(_bg_fl_all TRUE)
    foreach(_bg_fl_h IN LISTS _bg_fl_HEADERS)
      string(MAKE_C_IDENTIFIER "${_bg_prefix}_${_bg_fl_h}" _bg_fl_var)
      string(TOUPPER "${_bg_fl_var}" _bg_fl_var)
      find_path(${_bg_fl_var}_DIR ${_bg_fl_h} PATH_SUFFIXES ${_bg_fl_PATH_SUFFIXES})
      mark_as_advanced(${_bg_fl_var}_DIR)
      if(${_bg_fl_var}_DIR)
        list(APPEND _bg_fl_dirs ${${_bg_fl_var}_DIR})
      else()
        set(_bg_fl_all FALSE)
      endif()
    endforeach()
    find_library(${_bg_prefix}_LIBRARY ${_bg_fl_LIBRARY})
    mark_as_advanced(${_bg_prefix}_LIBRARY)
    if(_bg_fl_all AND ${_bg_prefix}_LIBRARY)
      add_library(PkgConfig::${_bg_prefix} INTERFACE IMPORTED)
      set_target_properties(PkgConfig::${_bg_prefix} PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${_bg_fl_dirs}"
        INTERFACE_LINK_LIBRARIES "${${_bg_prefix}_LIBRARY}")
    endif()
  endif()
  if(TARGET PkgConfig::${_bg_prefix})
    set(${_bg_name}_TARGET PkgConfig::${_bg_prefix})
  else()
    set(${_bg_name}_TARGET "")
  endif()
  if(${_bg_prefix}_VERSION)
    set(${_bg_name}_VERSION ${${_bg_prefix}_VERSION})
  endif()
  find_package_handle_standard_args(${_bg_name} REQUIRED_VARS ${_bg_name}_TARGET
                                    VERSION_VAR ${_bg_name}_VERSION)
endmacro()
