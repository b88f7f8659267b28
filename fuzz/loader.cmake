# The loader's and the environment's fuzzers (issue 12). Each parses bytes
# from outside the process: a manifest file, an environment variable, the
# header of a library file.
oar_add_fuzzer(manifest SOURCES ${CMAKE_CURRENT_LIST_DIR}/manifest_fuzzer.cc LIBRARIES oar::oar)
oar_add_fuzzer(elf_header SOURCES ${CMAKE_CURRENT_LIST_DIR}/elf_header_fuzzer.cc LIBRARIES oar::oar)
# The sim plugin's parsers are compiled in: a plugin module exports nothing to call.
oar_add_fuzzer(environment
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/environment_fuzzer.cc
          ${PROJECT_SOURCE_DIR}/plugins/sim/faults.cc
          ${PROJECT_SOURCE_DIR}/plugins/sim/profile.cc
          ${PROJECT_SOURCE_DIR}/plugins/sim/settings.cc
  LIBRARIES oar::oar oar::plugin_sdk)
target_include_directories(fuzz_environment PRIVATE ${PROJECT_SOURCE_DIR}/plugins/sim)
