# SPDX-License-Identifier: BSD-3-Clause
# products_store: the products service's storage (store.h) on SQLite,
# PostgreSQL and MariaDB. examples/products/CMakeLists.txt includes this
# file, and so does tests/integration/store when it is built alone; both
# guard with if(NOT TARGET products_store).
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq)
pkg_check_modules(LIBMARIADB REQUIRED IMPORTED_TARGET libmariadb)

add_library(products_store STATIC
  ${CMAKE_CURRENT_LIST_DIR}/store.c
  ${CMAKE_CURRENT_LIST_DIR}/store_kind.c
  ${CMAKE_CURRENT_LIST_DIR}/store_sqlite.c
  ${CMAKE_CURRENT_LIST_DIR}/store_postgres.c
  ${CMAKE_CURRENT_LIST_DIR}/store_mariadb.c)
target_include_directories(products_store PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(products_store
  PUBLIC bloomgate_guard Threads::Threads
  PRIVATE PkgConfig::SQLITE3 PkgConfig::LIBPQ PkgConfig::LIBMARIADB)
