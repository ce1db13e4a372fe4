# SPDX-License-Identifier: BSD-3-Clause
# ctest example.api: runs api_example and requires its output to be exactly
# the block the README shows after "It prints:", so the README's figures
# (bits, k) cannot drift from what the library computes.
# Usage: cmake -DEXE=... -DREADME=... -P check_readme_output.cmake
execute_process(COMMAND ${EXE} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "api_example exited with ${rc}")
endif()
file(READ ${README} readme)
string(FIND "${readme}" "It prints:\n\n```\n" begin)
if(begin EQUAL -1)
  message(FATAL_ERROR "README.md has no \"It prints:\" block")
endif()
string(LENGTH "It prints:\n\n```\n" skip)
math(EXPR begin "${begin} + ${skip}")
string(SUBSTRING "${readme}" ${begin} -1 rest)
string(FIND "${rest}" "```" end)
string(SUBSTRING "${rest}" 0 ${end} shown)
if(NOT out STREQUAL shown)
  message(FATAL_ERROR "api_example printed:\n${out}\nbut README.md shows:\n${shown}")
endif()
message(STATUS "output matches README.md:\n${out}")
