# cmake -DOAR=<oar> -DMANIFEST=<level_zero.json> -DCASE=real|fake [-DFAKE=<fake loader>]
#       -P check_oar_list.cmake
# Runs `oar list` with only the level_zero plugin and checks what it says.
function(oar_list out)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env OAR_PLUGINS=${MANIFEST} ${ARGN} ${OAR} list
                  OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "oar list failed (${rc}):\n${stdout}${stderr}")
  endif()
  if(NOT stdout MATCHES "level_zero +loaded")
    message(FATAL_ERROR "oar list: the level_zero plugin did not load:\n${stdout}${stderr}")
  endif()
  set(${out} "${stdout}${stderr}" PARENT_SCOPE)
endfunction()

function(expect text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "oar list: expected /${regex}/ in:\n${text}")
  endif()
endfunction()

if(CASE STREQUAL "real")
  # No Intel GPU here: zero devices and the reason (no loader, or zeInit's
  # result); on a machine with one, its devices.
  oar_list(text OAR_LEVEL_ZERO_LOADER=)
  if(text MATCHES "level_zero +loaded[^\n]* 0 device\\(s\\)")
    expect("${text}" "level_zero: (no Level Zero loader: libze_loader.so.1 not found|zeInit failed: ZE_RESULT_[A-Z_]+|no device|no usable device)[^\n]*The plugin serves 0 devices")
  else()
    expect("${text}" "level_zero:0 ")
  endif()
else()
  oar_list(text OAR_LEVEL_ZERO_LOADER=${FAKE}.absent)
  expect("${text}" "level_zero: no Level Zero loader: ${FAKE}.absent not found")
  expect("${text}" "level_zero +loaded[^\n]* 0 device\\(s\\)")
  oar_list(text OAR_LEVEL_ZERO_LOADER=${FAKE} OAR_ZE_FAKE_INIT_RESULT=0x78000001)
  expect("${text}" "level_zero: zeInit failed: ZE_RESULT_ERROR_UNINITIALIZED")
  oar_list(text OAR_LEVEL_ZERO_LOADER=${FAKE} OAR_ZE_FAKE_DEVICES=2)
  expect("${text}" "level_zero +loaded[^\n]* 2 device\\(s\\)")
  expect("${text}" "level_zero:1 +OAR fake Level Zero device 1 \\(no GPU\\)")
endif()
