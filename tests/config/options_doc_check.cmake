# docs/options.md is what `zerotron train --help-markdown` prints from the options table.
# cmake -DZEROTRON=... -DDOC=... -P options_doc_check.cmake
execute_process(COMMAND ${ZEROTRON} train --help-markdown OUTPUT_VARIABLE generated
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "zerotron train --help-markdown exited ${rc}")
endif()
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "${DOC} is stale: regenerate it with "
                      "'cmake --build --preset release --target options_doc' "
                      "(zerotron train --help-markdown > docs/options.md)")
endif()
message(STATUS "${DOC} matches the options table")
