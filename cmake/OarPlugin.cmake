# oar_add_plugin(<name> SOURCES <src>... [LIBRARIES <lib>...]
#                [MANIFEST_DIR <dir>] [NO_INSTALL])
#
# Builds liboar_plugin_<name>.so as a module with hidden visibility that exports
# only oar_plugin_query (linker version script), refuses undefined symbols at
# link time, and writes the manifest <name>.json that names it. Installed
# plugins get an installed manifest pointing at the installed library.
set(OAR_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(oar_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL;ALLOW_UNDEFINED" "MANIFEST_DIR;OUTPUT_DIR" "SOURCES;LIBRARIES" ${ARGN})
  set(target oar_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME oar_plugin_${name}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS "${OAR_PLUGIN_CMAKE_DIR}/plugin.map")
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR "${PROJECT_BINARY_DIR}/${OAR_PLUGIN_INSTALL_DIR}")
  endif()
  set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIR}")
  target_link_options(${target} PRIVATE
    "-Wl,--version-script=${OAR_PLUGIN_CMAKE_DIR}/plugin.map" "-Wl,--exclude-libs,ALL")
  if(NOT ARG_ALLOW_UNDEFINED)
    target_link_options(${target} PRIVATE "-Wl,-z,defs")
  endif()
  target_link_libraries(${target} PRIVATE oar::plugin_sdk ${ARG_LIBRARIES})

  if(NOT ARG_MANIFEST_DIR)
    set(ARG_MANIFEST_DIR "${PROJECT_BINARY_DIR}/${OAR_MANIFEST_INSTALL_DIR}")
  endif()
  set(OAR_MANIFEST_NAME ${name})
  set(OAR_MANIFEST_ABI "1.0")
  file(RELATIVE_PATH OAR_MANIFEST_LIBRARY "${ARG_MANIFEST_DIR}"
       "${ARG_OUTPUT_DIR}/liboar_plugin_${name}.so")
  configure_file("${OAR_PLUGIN_CMAKE_DIR}/manifest.json.in" "${ARG_MANIFEST_DIR}/${name}.json" @ONLY)

  if(NOT ARG_NO_INSTALL AND DEFINED OAR_PLUGIN_DIR_FROM_MANIFEST_DIR)
    install(TARGETS ${target} LIBRARY DESTINATION ${OAR_PLUGIN_INSTALL_DIR})
    set(OAR_MANIFEST_LIBRARY "${OAR_PLUGIN_DIR_FROM_MANIFEST_DIR}/liboar_plugin_${name}.so")
    set(installed "${CMAKE_CURRENT_BINARY_DIR}/installed-manifest/${name}.json")
    configure_file("${OAR_PLUGIN_CMAKE_DIR}/manifest.json.in" "${installed}" @ONLY)
    install(FILES "${installed}" DESTINATION ${OAR_MANIFEST_INSTALL_DIR})
  endif()
endfunction()
