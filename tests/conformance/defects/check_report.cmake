# Runs oar-conform on one plugin and checks its verdict and report.json.
# cmake -DOAR_CONFORM=<exe> -DPLUGIN=<manifest> -DREPORT_DIR=<dir>
#       [-DFILTER=<glob,...>] -DEXPECT=certified|not_certified|clean
#       [-DEXPECTATIONS=<conformance.json, used when it exists>]
#       [-DEXTRA_ARGS=<more oar-conform arguments, '|'-separated>]
#       [-DAREA=<area>] [-DOPS=<regex of op names>] [-DDTYPE=<dtype>]
#       [-DID_REGEX=<regex>] [-DSTATUS=failed|crashed|timeout]
#       [-DPROFILE=core|full] [-DMISSING=<op>/<dtype>]
#       [-DNO_PROCESS_LEFT=<name prefix>] -P check_report.cmake
# not_certified demands exit code 1, verdict not_certified and either at least
# one failed, crashed or timed out test that matches AREA, OPS, DTYPE,
# ID_REGEX and STATUS (those given), or, with MISSING, no failed test at all and
# the pair MISSING among the gaps of the profile's coverage (PROFILE, default
# core): a certificate refused for what the plugin does not cover;
# certified demands a run without FILTER, exit code 0, verdict certified, no
# failed test and, with PROFILE, that profile;
# clean demands exit code 0 and no failed test; with FILTER the verdict must be
# partial (a filtered run is never a certificate), without it certified.
# NO_PROCESS_LEFT: after the run, no process whose name or command line starts
# with that prefix may exist (helpers the plugin started must not outlive the
# certification).
cmake_policy(SET CMP0057 NEW)  # if(IN_LIST) in script mode
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
# Each string(JSON) parses the whole report: read the tests one by one only
# when the counts say some did not pass (a full run has thousands).
string(JSON not_passed_count GET "${report}" counts failed)
foreach(status crashed timeout)
  string(JSON n GET "${report}" counts ${status})
  math(EXPR not_passed_count "${not_passed_count} + ${n}")
endforeach()
set(indices "")
if(not_passed_count GREATER 0)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    list(APPEND indices ${i})
  endforeach()
endif()
foreach(i IN LISTS indices)
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
  if(DEFINED STATUS AND NOT status STREQUAL STATUS)
    continue()
  endif()
  list(APPEND expected "${id}")
endforeach()
message(STATUS "${count} tests, ${failed_count} not passed, verdict ${verdict}")
if(failed_count GREATER 0)
  message(STATUS "not passed:${failed_listing}")
endif()

if(NO_PROCESS_LEFT)
  execute_process(COMMAND ps -eo pid=,comm=,args= OUTPUT_VARIABLE processes)
  string(REPLACE "\n" ";" processes "${processes}")
  foreach(process IN LISTS processes)
    if(process MATCHES "^ *[0-9]+ +${NO_PROCESS_LEFT}" OR
       process MATCHES "^ *[0-9]+ +[^ ]+ +${NO_PROCESS_LEFT}")
      message(FATAL_ERROR "a process the plugin started outlived the certification: ${process}")
    endif()
  endforeach()
endif()

# The profile the verdict names and the coverage report.json gives for it.
string(JSON profile ERROR_VARIABLE json_error GET "${report}" profile)
if(json_error)
  message(FATAL_ERROR "report.json has no profile: ${json_error}")
endif()
message(STATUS "profile ${profile}")
if(PROFILE AND NOT EXPECT STREQUAL "not_certified" AND NOT profile STREQUAL PROFILE)
  message(FATAL_ERROR "expected the ${PROFILE} profile, the verdict names '${profile}':\n"
                      "${out}\n${err}")
endif()

if(EXPECT STREQUAL "certified")
  if(FILTER)
    message(FATAL_ERROR "EXPECT=certified needs a run without FILTER: a filtered run is partial")
  endif()
  if(NOT rc EQUAL 0 OR NOT verdict STREQUAL "certified" OR failed_count GREATER 0)
    message(FATAL_ERROR "expected certified (exit 0), got exit ${rc}, verdict ${verdict}:\n"
                        "${out}\n${err}")
  endif()
elseif(EXPECT STREQUAL "clean")
  if(NOT rc EQUAL 0 OR failed_count GREATER 0)
    message(FATAL_ERROR "expected no failure (exit 0), got exit ${rc}, verdict ${verdict}:\n"
                        "${out}\n${err}")
  endif()
  if(FILTER AND NOT verdict STREQUAL "partial")
    message(FATAL_ERROR "a filtered run must be partial, the verdict is ${verdict}")
  endif()
  if(NOT FILTER AND NOT verdict STREQUAL "certified")
    message(FATAL_ERROR "a run of every test without failures must be certified, not ${verdict}")
  endif()
elseif(EXPECT STREQUAL "not_certified")
  if(NOT rc EQUAL 1)
    message(FATAL_ERROR "expected exit code 1 (not certified), got ${rc}:\n${out}\n${err}")
  endif()
  if(NOT verdict STREQUAL "not_certified")
    message(FATAL_ERROR "expected verdict not_certified, got ${verdict}")
  endif()
  if(MISSING)
    if(failed_count GREATER 0)
      message(FATAL_ERROR "expected a refusal for coverage alone, but tests failed:"
                          "${failed_listing}")
    endif()
    if(NOT PROFILE)
      set(PROFILE core)
    endif()
    string(JSON gap_count LENGTH "${report}" coverage ${PROFILE} gaps)
    set(gaps "")
    if(gap_count GREATER 0)
      math(EXPR last_gap "${gap_count} - 1")
      foreach(i RANGE ${last_gap})
        string(JSON gap_op GET "${report}" coverage ${PROFILE} gaps ${i} op)
        string(JSON gap_dtype GET "${report}" coverage ${PROFILE} gaps ${i} dtype)
        list(APPEND gaps "${gap_op}/${gap_dtype}")
      endforeach()
    endif()
    if(NOT MISSING IN_LIST gaps)
      message(FATAL_ERROR "${MISSING} is not among the gaps of the ${PROFILE} profile: ${gaps}")
    endif()
    message(STATUS "refused for coverage: ${PROFILE} profile misses ${MISSING}")
    return()
  endif()
  if(NOT expected)
    message(FATAL_ERROR "no failed test in area '${AREA}' (op '${OPS}', dtype '${DTYPE}', "
                        "id '${ID_REGEX}', status '${STATUS}'); the tests that did not pass:"
                        "${failed_listing}")
  endif()
  list(JOIN expected ", " expected_listing)
  message(STATUS "caught by: ${expected_listing}")
else()
  message(FATAL_ERROR "EXPECT must be certified, not_certified or clean, not '${EXPECT}'")
endif()
