# Runs oar-conform on one plugin and checks its verdict and report.json.
# cmake -DOAR_CONFORM=<exe> -DPLUGIN=<manifest> -DREPORT_DIR=<dir>
#       -DFILTER=<glob,...> -DEXPECT=certified|not_certified|clean
#       [-DEXPECTATIONS=<conformance.json, used when it exists>]
#       [-DEXTRA_ARGS=<more oar-conform arguments, '|'-separated>]
#       [-DAREA=<area>] [-DOPS=<regex of op names>] [-DDTYPE=<dtype>]
#       [-DID_REGEX=<regex>] -P check_report.cmake
# not_certified demands exit code 1 and at least one failed, crashed or timed
# out test that matches AREA, OPS, DTYPE and ID_REGEX (those given);
# certified demands exit code 0, verdict certified and no such test at all;
# clean demands exit code 0 and no failed test, whatever the verdict (a filtered
# run is a partial run, never a certificate).
foreach(var OAR_CONFORM PLUGIN REPORT_DIR EXPECT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_report.cmake needs -D${var}=...")
  endif()
endforeach()

file(REMOVE_RECURSE "${REPORT_DIR}")
set(args --plugin "${PLUGIN}" --report "${REPORT_DIR}")
if(FILTER)
  list(APPEND args --filter "${FILTER}")
endif()
if(EXTRA_ARGS)
  string(REPLACE "|" ";" extra "${EXTRA_ARGS}")
  list(APPEND args ${extra})
endif()
if(EXPECTATIONS AND EXISTS "${EXPECTATIONS}")
  list(APPEND args --expectations "${EXPECTATIONS}")
endif()
execute_process(COMMAND "${OAR_CONFORM}" ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
list(JOIN args " " shown)
message(STATUS "oar-conform ${shown} exited ${rc}")

set(report_file "${REPORT_DIR}/report.json")
if(NOT EXISTS "${report_file}")
  message(FATAL_ERROR "no ${report_file}; oar-conform said:\n${out}\n${err}")
endif()
file(READ "${report_file}" report)
string(JSON schema ERROR_VARIABLE json_error GET "${report}" schema_version)
if(json_error)
  message(FATAL_ERROR "report.json has no schema_version: ${json_error}")
endif()
string(JSON verdict GET "${report}" verdict)
string(JSON count LENGTH "${report}" tests)
if(count EQUAL 0)
  message(FATAL_ERROR "the report lists no tests: --filter '${FILTER}' selects nothing")
endif()

# Every test that did not pass, and those of them the defect should explain.
# Messages may hold ';' and brackets, so the listing is a string, not a list.
set(failed_count 0)
set(failed_listing "")
set(expected "")
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON id GET "${report}" tests ${i} id)
  string(JSON area GET "${report}" tests ${i} area)
  string(JSON op GET "${report}" tests ${i} op)
  string(JSON dtype GET "${report}" tests ${i} dtype)
  string(JSON status GET "${report}" tests ${i} status)
  if(NOT status MATCHES "^(failed|crashed|timeout)$")
    continue()
  endif()
  string(JSON message GET "${report}" tests ${i} message)
  math(EXPR failed_count "${failed_count} + 1")
  string(APPEND failed_listing "\n  ${id} [${status}] ${message}")
  if(DEFINED AREA AND NOT area STREQUAL AREA)
    continue()
  endif()
  if(DEFINED OPS AND NOT op MATCHES "^(${OPS})$")
    continue()
  endif()
  if(DEFINED DTYPE AND NOT dtype STREQUAL DTYPE)
    continue()
  endif()
  if(DEFINED ID_REGEX AND NOT id MATCHES "${ID_REGEX}")
    continue()
  endif()
  list(APPEND expected "${id}")
endforeach()
message(STATUS "${count} tests, ${failed_count} not passed, verdict ${verdict}")
if(failed_count GREATER 0)
  message(STATUS "not passed:${failed_listing}")
endif()

if(EXPECT STREQUAL "certified")
  if(NOT rc EQUAL 0 OR NOT verdict STREQUAL "certified" OR failed_count GREATER 0)
    message(FATAL_ERROR "expected certified (exit 0), got exit ${rc}, verdict ${verdict}:\n"
                        "${out}\n${err}")
  endif()
elseif(EXPECT STREQUAL "clean")
  if(NOT rc EQUAL 0 OR failed_count GREATER 0)
    message(FATAL_ERROR "expected no failure (exit 0), got exit ${rc}, verdict ${verdict}:\n"
                        "${out}\n${err}")
  endif()
elseif(EXPECT STREQUAL "not_certified")
  if(NOT rc EQUAL 1)
    message(FATAL_ERROR "expected exit code 1 (not certified), got ${rc}:\n${out}\n${err}")
  endif()
  if(NOT verdict STREQUAL "not_certified")
    message(FATAL_ERROR "expected verdict not_certified, got ${verdict}")
  endif()
  if(NOT expected)
    message(FATAL_ERROR "no failed test in area '${AREA}' (op '${OPS}', dtype '${DTYPE}', "
                        "id '${ID_REGEX}'); the tests that did not pass:${failed_listing}")
  endif()
  list(JOIN expected ", " expected_listing)
  message(STATUS "caught by: ${expected_listing}")
else()
  message(FATAL_ERROR "EXPECT must be certified, not_certified or clean, not '${EXPECT}'")
endif()
