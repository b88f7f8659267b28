# Defects the collectives area (oar-conform --collectives-ranks N,
# docs/conformance.md "Collectives") must catch. Needs oar-conform's
# collectives area (MPI).
if(NOT TARGET oar_conformance_collectives)
  return()
endif()

# The staged path: the cpu plugin's host callbacks run at once, so the core's
# engine runs an all_reduce before the fills queued ahead of it.
oar_add_defect(collectives_callback_inline
               FILTER "collectives/staged/stream_order/*"
               EXPECT not_certified AREA collectives ID_REGEX "stream_order"
               ARGS --collectives-ranks 2 TIMEOUT 300)

# The native path: variants of sim's own collective slots (shim.cc over the
# real sim plugin), run on the two devices of sim's gpu profile.
if(NOT TARGET oar_plugin_sim)
  return()
endif()
oar_add_defect_shim(sim)
# oar_add_sim_collective_defect(<name> FILTER <globs> ID_REGEX <regex>)
function(oar_add_sim_collective_defect name)
  cmake_parse_arguments(ARG "" "FILTER;ID_REGEX" "" ${ARGN})
  oar_add_plugin(sim_defect_${name}
    SOURCES $<TARGET_OBJECTS:oar_defect_shim_sim> variants/${name}.cc
    LIBRARIES ${CMAKE_DL_LIBS} Threads::Threads
    OUTPUT_DIR ${OAR_DEFECT_PLUGIN_DIR}
    MANIFEST_DIR ${OAR_DEFECT_MANIFEST_DIR}
    NO_INSTALL)
  add_dependencies(oar_plugin_sim_defect_${name} oar_plugin_sim)
  add_test(NAME conformance_catches_${name}
    COMMAND ${CMAKE_COMMAND}
      -DOAR_CONFORM=$<TARGET_FILE:oar_conform>
      -DPLUGIN=${OAR_DEFECT_MANIFEST_DIR}/sim_defect_${name}.json
      -DREPORT_DIR=${CMAKE_CURRENT_BINARY_DIR}/reports/${name}
      "-DFILTER=${ARG_FILTER}"
      -DEXPECTATIONS=${PROJECT_SOURCE_DIR}/plugins/sim/conformance.json
      -DEXPECT=not_certified -DAREA=collectives "-DID_REGEX=${ARG_ID_REGEX}"
      "-DEXTRA_ARGS=--collectives-ranks|2"
      -P ${CMAKE_CURRENT_SOURCE_DIR}/check_report.cmake)
  set_tests_properties(conformance_catches_${name} PROPERTIES TIMEOUT 300
                       RESOURCE_LOCK oar_conformance_memory ENVIRONMENT "OAR_SIM_PROFILE=gpu")
endfunction()

# The filters select the native path (the staged one would pass: it does not
# use the slots) and the counts where each defect shows.
oar_add_sim_collective_defect(collectives_sim_drops_last_chunk
  FILTER "collectives/native/all_reduce/f32/sum/*"
  ID_REGEX "native/all_reduce/f32/sum/n(65537|5242883)/")
oar_add_sim_collective_defect(collectives_sim_avg_as_sum
  FILTER "collectives/native/*/avg/*"
  ID_REGEX "native/(all_reduce|reduce|reduce_scatter)/.*/avg/n(1|9|131)/")
oar_add_sim_collective_defect(collectives_sim_min_as_max
  FILTER "collectives/native/all_reduce/*/min/*,collectives/native/all_reduce/*/max/*"
  ID_REGEX "native/all_reduce/.*/min/")
