# SPDX-License-Identifier: BSD-3-Clause
# bloomgateConfig.cmake: what find_package(bloomgate) loads.
#
#   find_package(bloomgate 0.2 CONFIG REQUIRED)              # bloomgate::bloomgate, bloomgate::static
#   find_package(bloomgate 0.2 CONFIG REQUIRED COMPONENTS guard)  # also the remote and guard targets
#
# Each library comes shared (libbloomgate*.so) and static (libbloomgate*.a):
#   core    bloomgate::bloomgate, bloomgate::static (include/bloomgate/filter.h, ...)
#   remote  bloomgate::remote, bloomgate::remote_static: filters held in Redis
#           (include/bloomgate/remote.h), on hiredis, found here through
#           pkg-config (Debian: libhiredis-dev)
#   guard   bloomgate::guard, bloomgate::guard_static: the read-path guard
#           (include/bloomgate/guard.h); implies remote
# The shared libraries link one another (guard -> remote -> core), so a
# program that links bloomgate::guard holds one core: one allocator for
# bg_set_allocator, one CPU dispatch. The static targets link the static ones
# below them. Do not mix the two kinds in one program: each static core is a
# copy of its own.
# The core targets are always there. A component that was not installed, or
# whose dependency is missing, sets bloomgate_<component>_FOUND to FALSE
# and, when it was REQUIRED, bloomgate_FOUND to FALSE with the reason.

include(CMakeFindDependencyMacro)
include("${CMAKE_CURRENT_LIST_DIR}/bloomgateTargets.cmake")

set(_bloomgate_want_remote FALSE)
set(_bloomgate_want_guard FALSE)
foreach(_bloomgate_c IN LISTS bloomgate_FIND_COMPONENTS)
  if(_bloomgate_c STREQUAL "remote")
    set(_bloomgate_want_remote TRUE)
  elseif(_bloomgate_c STREQUAL "guard")
    set(_bloomgate_want_remote TRUE)
    set(_bloomgate_want_guard TRUE)
  else()
    set(bloomgate_${_bloomgate_c}_FOUND FALSE)
    set(_bloomgate_why "unknown component '${_bloomgate_c}' (there are: remote, guard)")
  endif()
endforeach()

# pkg-config's variables stay inside the function; the imported target
# PkgConfig::HIREDIS (the name bloomgate::remote links to) is visible in the
# caller's directory, as find_package's own targets are.
function(_bloomgate_find_hiredis)
  if(TARGET PkgConfig::HIREDIS)
    return()
  endif()
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(HIREDIS QUIET IMPORTED_TARGET hiredis)
  endif()
endfunction()

if(_bloomgate_want_remote)
  if(NOT EXISTS "${CMAKE_CURRENT_LIST_DIR}/bloomgateRemoteTargets.cmake")
    set(_bloomgate_why "component 'remote' was not built with this installation (BG_BUILD_REMOTE=OFF, or libhiredis-dev missing when it was built)")
  else()
    find_dependency(Threads)
    _bloomgate_find_hiredis()
    if(TARGET PkgConfig::HIREDIS)
      include("${CMAKE_CURRENT_LIST_DIR}/bloomgateRemoteTargets.cmake")
      set(bloomgate_remote_FOUND TRUE)
    else()
      set(_bloomgate_why "component 'remote' needs hiredis, which pkg-config does not find (Debian: libhiredis-dev)")
    endif()
  endif()
endif()

if(_bloomgate_want_guard AND bloomgate_remote_FOUND)
  if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/bloomgateGuardTargets.cmake")
    include("${CMAKE_CURRENT_LIST_DIR}/bloomgateGuardTargets.cmake")
    set(bloomgate_guard_FOUND TRUE)
  else()
    set(_bloomgate_why "component 'guard' was not built with this installation (BG_BUILD_GUARD=OFF, or libhiredis-dev missing when it was built)")
  endif()
endif()

foreach(_bloomgate_c IN LISTS bloomgate_FIND_COMPONENTS)
  if(NOT bloomgate_${_bloomgate_c}_FOUND AND bloomgate_FIND_REQUIRED_${_bloomgate_c})
    set(bloomgate_FOUND FALSE)
    set(bloomgate_NOT_FOUND_MESSAGE "${_bloomgate_why}")
  endif()
endforeach()
unset(_bloomgate_c)
unset(_bloomgate_want_remote)
unset(_bloomgate_want_guard)
unset(_bloomgate_why)
