# SPDX-License-Identifier: BSD-3-Clause
# products_store: the products service's storage (store.h) on SQLite,
# PostgreSQL and MariaDB. examples/products/CMakeLists.txt includes this
# file, and so does tests/integration/store when it is built alone; both
# guard with if(NOT TARGET products_store). The three client libraries are
# found by the top CMakeLists.txt: SQLite::SQLite3 and PostgreSQL::PostgreSQL
# (CMake's own Find modules), PkgConfig::LIBMARIADB (cmake/FindMariaDB.cmake).

add_library(products_store STATIC
  ${CMAKE_CURRENT_LIST_DIR}/store.c
  ${CMAKE_CURRENT_LIST_DIR}/store_kind.c
  ${CMAKE_CURRENT_LIST_DIR}/store_sqlite.c
  ${CMAKE_CURRENT_LIST_DIR}/store_postgres.c
  ${CMAKE_CURRENT_LIST_DIR}/store_mariadb.c)
target_include_directories(products_store PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(products_store
  PUBLIC bloomgate_guard Threads::Threads
  PRIVATE SQLite::SQLite3 PostgreSQL::PostgreSQL PkgConfig::LIBMARIADB)
