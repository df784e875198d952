# zt_add_expect_test(name SCRIPT script.cmake LABEL label LIMIT seconds PROCESSORS n
#                    COMMAND program args... [DEFINES -DNAME=value...])
# A test of how a command ends (fails, refuses, times out): CTest runs
#   cmake -DCMD=<program|args|...> -DLIMIT=<seconds> <DEFINES> -P <script>
# and the script (tests/dist/expect_failure.cmake, tests/hostile/expect_refusal.cmake) runs the
# command, stops it at LIMIT and checks how it ended. CTest's own timeout is 30 s above LIMIT,
# so an overrun is reported by the script, with the output so far.
function(zt_add_expect_test name)
  cmake_parse_arguments(ARG "" "SCRIPT;LABEL;LIMIT;PROCESSORS" "COMMAND;DEFINES" ${ARGN})
  string(REPLACE ";" "|" cmd "${ARG_COMMAND}")
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} "-DCMD=${cmd}" -DLIMIT=${ARG_LIMIT} ${ARG_DEFINES}
                   -P ${ARG_SCRIPT})
  math(EXPR ctest_timeout "${ARG_LIMIT} + 30")
  set_tests_properties(${name} PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ctest_timeout}
                       PROCESSORS ${ARG_PROCESSORS})
endfunction()
