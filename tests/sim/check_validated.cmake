# Runs the whole suite on a plugin under the validation layer and requires a
# certified verdict with nothing reported: the suite is a correct program, so
# the layer must stay silent (no refusals, no leaks).
# cmake -DOAR_CONFORM=<exe> -DPLUGIN=<manifest> -DREPORT_DIR=<dir> [-DPROFILE=core|full]
#       -P check_validated.cmake
file(REMOVE_RECURSE "${REPORT_DIR}")
if(NOT PROFILE)
  set(PROFILE best)
endif()
execute_process(COMMAND "${OAR_CONFORM}" --plugin "${PLUGIN}" --validate --report "${REPORT_DIR}"
                        --profile "${PROFILE}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  string(LENGTH "${out}" length)
  math(EXPR start "${length} - 3000")
  if(start LESS 0)
    set(start 0)
  endif()
  string(SUBSTRING "${out}" ${start} -1 tail)
  message(FATAL_ERROR "not certified under validation (exit ${rc}):\n${tail}\n${err}")
endif()
if(NOT out MATCHES "validation layer: on")
  message(FATAL_ERROR "oar-conform did not turn the validation layer on")
endif()
set(log "${REPORT_DIR}/test-output.log")
if(EXISTS "${log}")
  file(STRINGS "${log}" reports REGEX "validation:")
  if(reports)
    list(JOIN reports "\n" text)
    message(FATAL_ERROR "the validation layer reported on a correct program:\n${text}")
  endif()
endif()
message(STATUS "certified under validation, nothing reported")
