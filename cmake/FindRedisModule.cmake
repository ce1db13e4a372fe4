# SPDX-License-Identifier: BSD-3-Clause
# redismodule.h, the Redis module API header, for bloomgate.so. No Debian
# -dev package ships it: -DBG_REDISMODULE_H=PATH names one (the header of
# the Redis the module will run in), else it is looked for in .deps/redis/,
# where scripts/deps.sh puts the one from Debian's redis source package of
# the installed redis-server (apt-get source redis). Only there: a
# redismodule.h found elsewhere could be any Redis's.
# Sets RedisModule_FOUND and the imported target RedisModule::RedisModule
# (its include directory is a system one: the header's own style is not
# ours to warn about).
include(FindPackageHandleStandardArgs)
set(BG_REDISMODULE_H "" CACHE FILEPATH "redismodule.h to build the Redis module against")
if(BG_REDISMODULE_H)
  # Named on purpose: a wrong path is an error, not a reason to skip.
  if(NOT EXISTS "${BG_REDISMODULE_H}" OR IS_DIRECTORY "${BG_REDISMODULE_H}")
    message(FATAL_ERROR "BG_REDISMODULE_H=${BG_REDISMODULE_H}: no such file")
  endif()
  get_filename_component(RedisModule_INCLUDE_DIR "${BG_REDISMODULE_H}" DIRECTORY)
else()
  find_path(BG_REDISMODULE_DIR redismodule.h PATHS ${PROJECT_SOURCE_DIR}/.deps/redis
            NO_DEFAULT_PATH)
  mark_as_advanced(BG_REDISMODULE_DIR)
  set(RedisModule_INCLUDE_DIR ${BG_REDISMODULE_DIR})
endif()
find_package_handle_standard_args(RedisModule REQUIRED_VARS RedisModule_INCLUDE_DIR)
if(RedisModule_FOUND AND NOT TARGET RedisModule::RedisModule)
  add_library(RedisModule::RedisModule INTERFACE IMPORTED)
  set_target_properties(RedisModule::RedisModule PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${RedisModule_INCLUDE_DIR}")
endif()
