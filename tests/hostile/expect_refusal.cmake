# cmake -DCMD="prog|arg|..." -DREGEX=... -DLIMIT=seconds [-DEXIT=status] [-DRUN=1]
#       [-DMKFIFO=path] [-DWRITE=path -DCONTENT=text] [-DPRE=shell-command] -P expect_refusal.cmake
# The hostile-input contract (docs/design/architecture.md, Invariants, 3): the command exits
# with status EXIT (default 2), within LIMIT seconds, and prints exactly one line in all (stdout and stderr
# together), "zerotron: error: ..." matching REGEX. RUN=1: a run that trains and then stops, so
# stdout holds its log and only stderr must be that one line. MKFIFO makes a FIFO first (removed
# after); WRITE writes CONTENT to a file first ("@DEEP@" expands to 100000 nested arrays, "@LONG@"
# to a string of 100000 bytes); PRE runs a shell command first (making a crafted dataset), which
# must succeed.
string(REPLACE "|" ";" CMD "${CMD}")
if(DEFINED MKFIFO)
  file(REMOVE "${MKFIFO}")
  execute_process(COMMAND mkfifo "${MKFIFO}" RESULT_VARIABLE mk)
  if(NOT mk EQUAL 0)
    message(FATAL_ERROR "FAIL: mkfifo ${MKFIFO}: ${mk}")
  endif()
endif()
if(DEFINED WRITE)
  string(REPEAT "[" 100000 open)
  string(REPEAT "]" 100000 close)
  string(REPLACE "@DEEP@" "${open}1${close}" CONTENT "${CONTENT}")
  string(REPEAT "x" 100000 long)
  string(REPLACE "@LONG@" "${long}" CONTENT "${CONTENT}")
  file(WRITE "${WRITE}" "${CONTENT}")
endif()
if(DEFINED PRE)
  execute_process(COMMAND sh -c "${PRE}" RESULT_VARIABLE pre OUTPUT_VARIABLE pre_out
                  ERROR_VARIABLE pre_out)
  if(NOT pre EQUAL 0)
    message(FATAL_ERROR "FAIL: the set-up command failed (${pre}):\n${pre_out}")
  endif()
endif()
string(TIMESTAMP t0 "%s%f")
if(NOT DEFINED EXIT)
  set(EXIT 2)
endif()
if(RUN)
  execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE out
                  TIMEOUT ${LIMIT})
else()
  execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out
                  TIMEOUT ${LIMIT})
endif()
string(TIMESTAMP t1 "%s%f")
math(EXPR ms "(${t1} - ${t0}) / 1000")
if(DEFINED MKFIFO)
  file(REMOVE "${MKFIFO}")
endif()
message("---- output (exit status: ${rc}, ${ms} ms) ----\n${log}${out}----")
if(rc MATCHES "timeout")
  message(FATAL_ERROR "FAIL: still running after ${LIMIT} s (a hang)")
endif()
if(NOT rc EQUAL EXIT)
  message(FATAL_ERROR "FAIL: exit status ${rc}, expected ${EXIT}")
endif()
string(REGEX MATCHALL "\n" newlines "${out}")
list(LENGTH newlines lines)
if(NOT lines EQUAL 1 OR NOT out MATCHES "^zerotron: error: [^\n]*\n$")
  message(FATAL_ERROR "FAIL: expected exactly one line 'zerotron: error: ...', got ${lines}")
endif()
if(NOT out MATCHES "${REGEX}")
  message(FATAL_ERROR "FAIL: output does not match '${REGEX}'")
endif()
message("PASS: one line, exit status ${rc}, ${ms} ms")
