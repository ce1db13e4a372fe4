# SPDX-License-Identifier: BSD-3-Clause
# libFuzzer, for the fuzz targets (BG_FUZZ): the C compiler must be clang,
# and a program built with -fsanitize=fuzzer must link (Debian: clang and
# libclang-rt-dev, which holds the runtime). Sets LibFuzzer_FOUND.
include(FindPackageHandleStandardArgs)
set(LibFuzzer_COMPILER_IS_CLANG "")
if(CMAKE_C_COMPILER_ID MATCHES "Clang")
  set(LibFuzzer_COMPILER_IS_CLANG TRUE)
  include(CheckCSourceCompiles)
  include(CMakePushCheckState)
  cmake_push_check_state(RESET)
  set(CMAKE_REQUIRED_FLAGS -fsanitize=fuzzer)
  set(CMAKE_REQUIRED_QUIET ON)
  check_c_source_compiles([[
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    (void)data;
    (void)size;
    return 0;
}
]] BG_LIBFUZZER_LINKS)
  cmake_pop_check_state()
  # A failure is not kept: once libclang-rt-dev is installed, the next
  # configure tries again.
  if(NOT BG_LIBFUZZER_LINKS)
    unset(BG_LIBFUZZER_LINKS CACHE)
  endif()
endif()
find_package_handle_standard_args(LibFuzzer
  REQUIRED_VARS LibFuzzer_COMPILER_IS_CLANG BG_LIBFUZZER_LINKS
  REASON_FAILURE_MESSAGE "the C compiler must be clang, with libFuzzer's runtime")
