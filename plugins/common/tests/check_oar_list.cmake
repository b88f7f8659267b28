# cmake -DOAR=<oar> -DMANIFEST=<plugin.json> -DPLUGIN=<name> -DRUNTIME_VAR=<env var naming the
#       vendor library> -DCASE=real|fake
#       real: -DREASONS=<regex of the reasons for 0 devices>
#       fake: -DFAKE=<fake vendor library> -DMISSING=<the reason's text when it is absent>
#             -DCASES=<script with the plugin's own fake cases> [-D<name>=<value> it uses]
#       -P check_oar_list.cmake
# Runs `oar list` with only one GPU plugin (cuda, hip, level_zero) and checks
# what it says: the plugin loads, and it serves 0 devices with a reason or
# lists its devices. CASES runs further `oar_list`/`expect` steps against the
# fake library.
foreach(var OAR MANIFEST PLUGIN RUNTIME_VAR CASE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_oar_list.cmake: -D${var}= is missing")
  endif()
endforeach()

# oar_list(<out> [VAR=value...]): `oar list` with those variables; the plugin loaded.
function(oar_list out)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env OAR_PLUGINS=${MANIFEST} ${ARGN} ${OAR} list
                  OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "oar list failed (${rc}):\n${stdout}${stderr}")
  endif()
  if(NOT stdout MATCHES "${PLUGIN} +loaded")
    message(FATAL_ERROR "oar list: the ${PLUGIN} plugin did not load:\n${stdout}${stderr}")
  endif()
  set(${out} "${stdout}${stderr}" PARENT_SCOPE)
endfunction()

function(expect text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "oar list: expected /${regex}/ in:\n${text}")
  endif()
endfunction()

if(CASE STREQUAL "real")
  # No GPU here: zero devices and the reason; on a GPU machine, its devices.
  oar_list(text ${RUNTIME_VAR}=)
  if(text MATCHES "${PLUGIN} +loaded[^\n]* 0 device\\(s\\)")
    expect("${text}" "${PLUGIN}: (${REASONS})[^\n]*The plugin serves 0 devices")
  else()
    expect("${text}" "${PLUGIN}:0 ")
  endif()
else()
  oar_list(text ${RUNTIME_VAR}=${FAKE}.absent)
  expect("${text}" "${PLUGIN}: ${MISSING}: ${FAKE}.absent not found")
  expect("${text}" "${PLUGIN} +loaded[^\n]* 0 device\\(s\\)")
  include(${CASES})
endif()
