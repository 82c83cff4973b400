# Writes OUT: one ctest entry per GoogleTest suite of BINARY (running "BINARY --gtest_filter=SUITE.*"), each with
# the label LABEL and the environment variable ENVIRONMENT (one NAME=VALUE). Run after each build of BINARY
# (axonn_add_suite in tests/CMakeLists.txt).
#   cmake -D BINARY=... -D LABEL=... -D ENVIRONMENT=NAME=VALUE -D OUT=... -P discover_suites.cmake
execute_process(COMMAND ${BINARY} --gtest_list_tests OUTPUT_VARIABLE listing ERROR_VARIABLE errors
                RESULT_VARIABLE status TIMEOUT 60)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${BINARY} --gtest_list_tests failed (${status}): ${errors}")
endif()
# A parameter's printed value may hold ';', CMake's list separator: only the suites' lines matter.
string(REPLACE ";" "" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(content "")
foreach(line IN LISTS lines)
  # A suite's line starts in the first column: "Suite." or "Prefix/Suite.  # TypeParam = ..."
  if(line MATCHES "^([A-Za-z0-9_/]+)\\.( |$)")
    set(suite "${CMAKE_MATCH_1}")
    string(APPEND content "add_test([=[${suite}]=] [=[${BINARY}]=] [=[--gtest_filter=${suite}.*]=])\n"
                          "set_tests_properties([=[${suite}]=] PROPERTIES LABELS ${LABEL} "
                          "ENVIRONMENT [=[${ENVIRONMENT}]=])\n")
  endif()
endforeach()
file(WRITE "${OUT}" "${content}")
