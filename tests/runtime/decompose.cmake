# Decompositions (core/ops/decompositions/): every decomposition forced on the
# cpu and sim plugins against their own kernels, and the fallback on a cpu
# plugin that lacks those kernels (a shim over the real cpu plugin, built like
# the conformance defect variants).
if(NOT TARGET oar_plugin_cpu)
  return()
endif()
set(OAR_DECOMPOSE_PLUGIN_DIR "${CMAKE_CURRENT_BINARY_DIR}/decompose_plugins")
oar_add_plugin(cpu_no_composites
  SOURCES ${PROJECT_SOURCE_DIR}/tests/conformance/defects/shim.cc
          ${CMAKE_CURRENT_SOURCE_DIR}/decompose_drops_kernels.cc
  LIBRARIES ${CMAKE_DL_LIBS} Threads::Threads
  OUTPUT_DIR ${OAR_DECOMPOSE_PLUGIN_DIR}
  MANIFEST_DIR ${OAR_DECOMPOSE_PLUGIN_DIR}
  NO_INSTALL)
target_include_directories(oar_plugin_cpu_no_composites PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_definitions(oar_plugin_cpu_no_composites PRIVATE
  OAR_DEFECT_PLUGIN_NAME="cpu_no_composites"
  OAR_DEFECT_REAL_PLUGIN="$<TARGET_FILE:oar_plugin_cpu>")
add_dependencies(oar_plugin_cpu_no_composites oar_plugin_cpu)

add_executable(oar_decompose_test decompose_test.cc)
target_link_libraries(oar_decompose_test PRIVATE oar::oar GTest::gtest_main Threads::Threads)
target_include_directories(oar_decompose_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
                           ${PROJECT_SOURCE_DIR})
target_compile_definitions(oar_decompose_test PRIVATE
  OAR_TEST_CPU_MANIFEST="${OAR_TEST_MANIFEST_DIR}/cpu.json"
  OAR_TEST_SIM_MANIFEST="${OAR_TEST_MANIFEST_DIR}/sim.json"
  OAR_TEST_NO_COMPOSITES_MANIFEST="${OAR_DECOMPOSE_PLUGIN_DIR}/cpu_no_composites.json")
add_dependencies(oar_decompose_test oar_plugin_cpu_no_composites)
if(TARGET oar_plugin_sim)
  add_dependencies(oar_decompose_test oar_plugin_sim)
endif()
gtest_discover_tests(oar_decompose_test DISCOVERY_TIMEOUT 60)

# The decompositions certified like kernels: oar-conform over the decomposed
# operators, on the real cpu plugin with every decomposition forced
# (OAR_DECOMPOSE=force) and on cpu_no_composites, where they are the fallback.
if(TARGET oar_conform)
  set(OAR_DECOMPOSED_FILTER "ops/softmax/*,ops/log_softmax/*,ops/gelu/*,ops/silu/*,ops/sigmoid/*,ops/relu/*,ops/mean/*,ops/layer_norm/*,ops/rms_norm/*,ops/batch_norm/*,ops/cross_entropy/*,ops/scaled_dot_product_attention/*,ops/conv2d/*,ops/max_pool2d/*,ops/avg_pool2d/*,ops/reciprocal/*,ops/rsqrt/*,ops/gt/*,ops/ge/*,ops/ne/*,ops/embedding/*,ops/index_select/*")
  foreach(variant cpu_forced cpu_no_composites)
    if(variant STREQUAL "cpu_forced")
      set(manifest "${OAR_TEST_MANIFEST_DIR}/cpu.json")
    else()
      set(manifest "${OAR_DECOMPOSE_PLUGIN_DIR}/cpu_no_composites.json")
    endif()
    add_test(NAME conformance_certifies_decomposed_${variant}
      COMMAND ${CMAKE_COMMAND}
        -DOAR_CONFORM=$<TARGET_FILE:oar_conform>
        -DPLUGIN=${manifest}
        -DREPORT_DIR=${CMAKE_CURRENT_BINARY_DIR}/decompose_reports/${variant}
        "-DFILTER=${OAR_DECOMPOSED_FILTER}"
        -DEXPECTATIONS=${PROJECT_SOURCE_DIR}/plugins/cpu/conformance.json
        -DEXPECT=clean
        -P ${PROJECT_SOURCE_DIR}/tests/conformance/defects/check_report.cmake)
    set_tests_properties(conformance_certifies_decomposed_${variant} PROPERTIES TIMEOUT 600
                         RESOURCE_LOCK oar_conformance_memory)
  endforeach()
  set_tests_properties(conformance_certifies_decomposed_cpu_forced PROPERTIES
                       ENVIRONMENT "OAR_DECOMPOSE=force")
endif()
