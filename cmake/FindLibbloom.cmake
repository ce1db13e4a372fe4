# SPDX-License-Identifier: BSD-3-Clause
# libbloom (Debian: libbloom-dev, which ships no pkg-config file), the
# benchmark's baseline: bloom.h and libbloom.so. Sets Libbloom_FOUND and the
# imported target Libbloom::Libbloom.
include(FindPackageHandleStandardArgs)
find_path(LIBBLOOM_INCLUDE_DIR bloom.h)
find_library(LIBBLOOM_LIBRARY bloom)
mark_as_advanced(LIBBLOOM_INCLUDE_DIR LIBBLOOM_LIBRARY)
find_package_handle_standard_args(Libbloom REQUIRED_VARS LIBBLOOM_LIBRARY LIBBLOOM_INCLUDE_DIR)
if(Libbloom_FOUND AND NOT TARGET Libbloom::Libbloom)
  add_library(Libbloom::Libbloom UNKNOWN IMPORTED)
  set_target_properties(Libbloom::Libbloom PROPERTIES
    IMPORTED_LOCATION "${LIBBLOOM_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LIBBLOOM_INCLUDE_DIR}")
endif()
