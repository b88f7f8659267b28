# CMake helpers for the GPU plugins' tests (cuda, hip, level_zero), which run
# without a GPU against a fake vendor library.
include_guard(GLOBAL)

# oar_add_fake_library(<target> <source> NAME <library name, no "lib"> SUFFIX <.so.N>
#                      [INCLUDES <dirs>...])
# The fake vendor library, named lib<NAME><SUFFIX> in a folder of its own
# named after <source> (fake_driver.cc: fake_driver/), so that either the
# plugin's variable naming the library's path or LD_LIBRARY_PATH=<folder>
# selects it. Its source may include fake_gpu_runtime.h.
function(oar_add_fake_library target source)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "NAME;SUFFIX" "INCLUDES")
  get_filename_component(folder ${source} NAME_WE)
  add_library(${target} SHARED ${source})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${arg_NAME} SUFFIX ${arg_SUFFIX} NO_SONAME ON
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/${folder}
    CXX_VISIBILITY_PRESET hidden)
  # fake_gpu_runtime.h: the bookkeeping the fakes share.
  target_include_directories(${target} PRIVATE ${arg_INCLUDES} ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  target_compile_options(${target} PRIVATE -Wall -Wextra)
endfunction()

# oar_add_gpu_plugin_gtest(<plugin> [DEPENDS <fake libraries>...] [DEFINITIONS <defs>...])
# The plugin's gtest program oar_<plugin>_plugin_test from plugin_test.cc
# (with gpu_plugin_test_util.h), built after the plugin and its fakes, its
# tests listed as <plugin>_plugin.*.
function(oar_add_gpu_plugin_gtest plugin)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "DEPENDS;DEFINITIONS")
  set(target oar_${plugin}_plugin_test)
  add_executable(${target} plugin_test.cc)
  target_link_libraries(${target} PRIVATE oar::headers GTest::gtest_main ${CMAKE_DL_LIBS})
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  target_compile_definitions(${target} PRIVATE ${arg_DEFINITIONS})
  add_dependencies(${target} oar_plugin_${plugin} ${arg_DEPENDS})
  gtest_discover_tests(${target} TEST_PREFIX ${plugin}_plugin. DISCOVERY_TIMEOUT 30)
endfunction()

# oar_add_oar_list_tests(<plugin> <library word>
#   RUNTIME_VAR <env var naming the vendor library> FAKE_TARGET <the fake library's target>
#   REASONS <regex: the reasons the plugin gives for serving 0 devices>
#   MISSING <the reason's text when the library is absent>
#   CASES <script with the plugin's own cases against the fake library>
#   [ARGS <-D<name>=<value> the CASES script uses>...])
# Registers <plugin>_plugin_oar_list_real_<word> (`oar list` with the
# plugin's manifest only and the machine's own library: it loads and either
# serves the machine's GPUs or says why it serves none) and
# <plugin>_plugin_oar_list_fake_<word> (the same through the fake library:
# an absent library, then CASES), both run by check_oar_list.cmake.
function(oar_add_oar_list_tests plugin word)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "RUNTIME_VAR;FAKE_TARGET;REASONS;MISSING;CASES"
                        "ARGS")
  set(script ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/check_oar_list.cmake)
  set(manifest ${PROJECT_BINARY_DIR}/${CMAKE_INSTALL_DATADIR}/oar/plugins.d/${plugin}.json)
  set(common -DOAR=$<TARGET_FILE:oar_cli> -DMANIFEST=${manifest} -DPLUGIN=${plugin}
             -DRUNTIME_VAR=${arg_RUNTIME_VAR})
  add_test(NAME ${plugin}_plugin_oar_list_real_${word}
           COMMAND ${CMAKE_COMMAND} ${common} -DCASE=real "-DREASONS=${arg_REASONS}"
                   -P ${script})
  add_test(NAME ${plugin}_plugin_oar_list_fake_${word}
           COMMAND ${CMAKE_COMMAND} ${common} -DCASE=fake -DFAKE=$<TARGET_FILE:${arg_FAKE_TARGET}>
                   "-DMISSING=${arg_MISSING}" -DCASES=${arg_CASES} ${arg_ARGS}
                   -P ${script})
  set_tests_properties(${plugin}_plugin_oar_list_real_${word} ${plugin}_plugin_oar_list_fake_${word}
                       PROPERTIES TIMEOUT 60)
endfunction()
