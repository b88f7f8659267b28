# Runs the whole suite on the vulkan plugin with OAR_VULKAN_VALIDATION=1
# (VK_LAYER_KHRONOS_validation plus a debug messenger that prints every
# warning and error as "oar vulkan validation: ...") and requires a certified
# verdict, proof that the layer was on, and not one message.
# cmake -DOAR_CONFORM=<exe> -DPLUGIN=<manifest> -DREPORT_DIR=<dir> -P check_vulkan_validation.cmake
file(REMOVE_RECURSE "${REPORT_DIR}")
set(ENV{OAR_VULKAN_VALIDATION} 1)
execute_process(COMMAND "${OAR_CONFORM}" --plugin "${PLUGIN}" --report "${REPORT_DIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(log "${REPORT_DIR}/test-output.log")
set(text "${out}\n${err}")
if(EXISTS "${log}")
  file(READ "${log}" children)
  string(APPEND text "\n${children}")
endif()
if(NOT rc EQUAL 0)
  string(LENGTH "${out}" length)
  math(EXPR start "${length} - 3000")
  if(start LESS 0)
    set(start 0)
  endif()
  string(SUBSTRING "${out}" ${start} -1 tail)
  message(FATAL_ERROR "not certified under the Vulkan validation layer (exit ${rc}):\n${tail}\n${err}")
endif()
if(NOT text MATCHES "vulkan: VK_LAYER_KHRONOS_validation on")
  message(FATAL_ERROR "the plugin never reported the validation layer on: is "
                      "vulkan-validationlayers installed?")
endif()
string(REGEX MATCHALL "oar vulkan validation:[^\n]*" reports "${text}")
if(reports)
  list(LENGTH reports count)
  list(SUBLIST reports 0 20 first)
  list(JOIN first "\n" shown)
  message(FATAL_ERROR "the validation layer reported ${count} message(s) on the suite:\n${shown}")
endif()
message(STATUS "certified under VK_LAYER_KHRONOS_validation, nothing reported")
