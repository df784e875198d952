# cmake -DCMD="prog|arg|..." -DREGEX=... [-DREGEX2=...] [-DEXIT=status] -DLIMIT=seconds [-DMPIRUN_ARGS=...] -P expect_failure.cmake
# Runs CMD and passes only when it exits non-zero, within LIMIT seconds, with output matching
# REGEX (and REGEX2, if given; stdout and stderr together). Used for the hang and harness tests: a job that fails
# without the message, fails too late, or does not fail at all is a test failure.
string(REPLACE "|" ";" CMD "${CMD}")  # the caller joins the command's words with |
if(DEFINED MPIRUN_ARGS)
  set(ENV{ZT_MPIRUN_ARGS} "${MPIRUN_ARGS}")
endif()
string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out
                TIMEOUT ${LIMIT})
string(TIMESTAMP t1 "%s")
math(EXPR elapsed "${t1} - ${t0}")
message("---- output (exit status: ${rc}, ${elapsed} s) ----\n${out}----")
if(rc MATCHES "timeout")
  message(FATAL_ERROR "FAIL: still running after ${LIMIT} s (a hang)")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "FAIL: exited 0, expected a non-zero status")
endif()
if(DEFINED EXIT AND NOT rc EQUAL EXIT)
  message(FATAL_ERROR "FAIL: exit status ${rc}, expected ${EXIT}")
endif()
foreach(re IN ITEMS "${REGEX}" "${REGEX2}")
  if(NOT re STREQUAL "" AND NOT out MATCHES "${re}")
    message(FATAL_ERROR "FAIL: output does not match '${re}'")
  endif()
endforeach()
message("PASS: exit status ${rc} after ${elapsed} s, message found")
