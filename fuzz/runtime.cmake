# The runtime's fuzzers (issue 12): DLPack import, and operator calls with
# fuzzed shapes, strides, dtypes and attributes on the cpu and sim plugins.
# Both load the plugins of this build through their manifests.
set(OAR_FUZZ_MANIFEST_DIR "${PROJECT_BINARY_DIR}/${OAR_MANIFEST_INSTALL_DIR}")
oar_add_fuzzer(dlpack SOURCES ${CMAKE_CURRENT_LIST_DIR}/dlpack_fuzzer.cc
  ${CMAKE_CURRENT_LIST_DIR}/plugin_sanitizer_options.cc LIBRARIES oar::oar)
target_compile_definitions(fuzz_dlpack PRIVATE
  OAR_FUZZ_CPU_MANIFEST="${OAR_FUZZ_MANIFEST_DIR}/cpu.json")
add_dependencies(fuzz_dlpack oar_plugin_cpu)

oar_add_fuzzer(ops SOURCES ${CMAKE_CURRENT_LIST_DIR}/ops_fuzzer.cc
  ${CMAKE_CURRENT_LIST_DIR}/plugin_sanitizer_options.cc LIBRARIES oar::oar)
target_compile_definitions(fuzz_ops PRIVATE
  OAR_FUZZ_CPU_MANIFEST="${OAR_FUZZ_MANIFEST_DIR}/cpu.json"
  OAR_FUZZ_SIM_MANIFEST="${OAR_FUZZ_MANIFEST_DIR}/sim.json")
add_dependencies(fuzz_ops oar_plugin_cpu oar_plugin_sim)
