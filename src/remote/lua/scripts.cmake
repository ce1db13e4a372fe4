# SPDX-License-Identifier: BSD-3-Clause
# Included by src/remote/CMakeLists.txt: the Lua scripts (one file each) as
# one generated C source in the build tree, BG_REMOTE_LUA_SOURCE, for
# bloomgate_remote's sources (embed.cmake; nothing generated is committed).
file(GLOB BG_REMOTE_LUA_SCRIPTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.lua)
list(SORT BG_REMOTE_LUA_SCRIPTS)
set(BG_REMOTE_LUA_SOURCE ${CMAKE_CURRENT_BINARY_DIR}/lua_scripts.c)
add_custom_command(
  OUTPUT ${BG_REMOTE_LUA_SOURCE}
  COMMAND ${CMAKE_COMMAND} -DOUT=${BG_REMOTE_LUA_SOURCE} "-DSCRIPTS=${BG_REMOTE_LUA_SCRIPTS}"
          -P ${CMAKE_CURRENT_LIST_DIR}/embed.cmake
  DEPENDS ${BG_REMOTE_LUA_SCRIPTS} ${CMAKE_CURRENT_LIST_DIR}/embed.cmake
  COMMENT "Embedding the remote client's Lua scripts"
  VERBATIM)
