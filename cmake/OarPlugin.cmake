# oar_add_plugin(<name> SOURCES <src>...
#                [LIBRARIES <lib>...]       what the plugin links besides the SDK
#                [OUTPUT_DIR <dir>]         where the library is built
#                                           (default <build>/<libdir>/oar/plugins)
#                [MANIFEST_DIR <dir>]       where the build-tree manifest is written
#                                           (default <build>/<datadir>/oar/plugins.d)
#                [NO_INSTALL]               no install rules
#                [ALLOW_UNDEFINED])         link without -z defs (a plugin whose
#                                           symbols a host provides; rarely right)
#
# Builds liboar_plugin_<name>.so as a module with hidden visibility that exports
# only oar_plugin_query (linker version script), links oar::plugin_sdk, refuses
# undefined symbols at link time, defines OAR_PLUGIN_NAME="<name>" for its
# sources (OAR_PLUGIN_DEFINE(MyPlugin, OAR_PLUGIN_NAME, ...) keeps the table's
# name equal to the manifest's), and writes the manifest <name>.json that names
# it. `cmake --install` puts the library in <prefix>/<libdir>/oar/plugins and a
# manifest pointing at it in <prefix>/<datadir>/oar/plugins.d, where the core
# finds it when OAR is installed in the same prefix; otherwise point
# OAR_PLUGIN_PATH at that plugins.d folder.
#
# In OAR's tree this file is included by the top-level CMakeLists.txt; out of
# the tree, find_package(oar CONFIG REQUIRED) includes it.
set(OAR_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

# "MAJOR.MINOR" of the C ABI headers (OAR_ABI_MAJOR/OAR_ABI_MINOR in
# oar/plugin.h of oar::headers) in <out>: the ABI the plugin is built against,
# which its manifest declares (docs/abi.md, "Manifests").
function(_oar_headers_abi out)
  get_target_property(dirs oar::headers INTERFACE_INCLUDE_DIRECTORIES)
  foreach(dir IN LISTS dirs)
    string(REGEX REPLACE "^\\$<BUILD_INTERFACE:(.*)>$" "\\1" dir "${dir}")
    if(dir MATCHES "^\\$<" OR NOT EXISTS "${dir}/oar/plugin.h")
      continue()
    endif()
    file(STRINGS "${dir}/oar/plugin.h" lines REGEX "^#define OAR_ABI_(MAJOR|MINOR) [0-9]+")
    string(REGEX MATCH "OAR_ABI_MAJOR ([0-9]+)" major "${lines}")
    set(major "${CMAKE_MATCH_1}")
    string(REGEX MATCH "OAR_ABI_MINOR ([0-9]+)" minor "${lines}")
    set(minor "${CMAKE_MATCH_1}")
    if(NOT major STREQUAL "" AND NOT minor STREQUAL "")
      set(${out} "${major}.${minor}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "oar_add_plugin: no OAR_ABI_MAJOR/OAR_ABI_MINOR found in oar/plugin.h "
                      "of oar::headers (${dirs})")
endfunction()

function(oar_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL;ALLOW_UNDEFINED" "MANIFEST_DIR;OUTPUT_DIR" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT TARGET oar::plugin_sdk)
    message(FATAL_ERROR "oar_add_plugin(${name}): the target oar::plugin_sdk does not exist; "
                        "call find_package(oar CONFIG REQUIRED) before oar_add_plugin")
  endif()
  if(NOT name MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "oar_add_plugin(${name}): a plugin name is short and lowercase "
                        "([a-z][a-z0-9_]*): it names the library, the manifest and the table")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "oar_add_plugin(${name}): no SOURCES")
  endif()
  foreach(library IN LISTS ARG_LIBRARIES)
    if(library STREQUAL "oar::oar" OR library STREQUAL "oar")
      message(FATAL_ERROR "oar_add_plugin(${name}): a plugin must not link ${library} (liboar, "
                          "the framework's runtime): it reaches the core only through the host "
                          "services (docs/abi.md, P21). oar::plugin_sdk is linked already.")
    endif()
  endforeach()
  foreach(variable OAR_PLUGIN_INSTALL_DIR OAR_MANIFEST_INSTALL_DIR)
    if(NOT DEFINED ${variable})
      message(FATAL_ERROR "oar_add_plugin(${name}): ${variable} is not set; include "
                          "OarPlugin.cmake through find_package(oar CONFIG REQUIRED)")
    endif()
  endforeach()

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
  target_compile_definitions(${target} PRIVATE OAR_PLUGIN_NAME="${name}")
  target_link_libraries(${target} PRIVATE oar::plugin_sdk ${ARG_LIBRARIES})

  if(NOT ARG_MANIFEST_DIR)
    set(ARG_MANIFEST_DIR "${PROJECT_BINARY_DIR}/${OAR_MANIFEST_INSTALL_DIR}")
  endif()
  set(OAR_MANIFEST_NAME ${name})
  _oar_headers_abi(OAR_MANIFEST_ABI)
  file(RELATIVE_PATH OAR_MANIFEST_LIBRARY "${ARG_MANIFEST_DIR}"
       "${ARG_OUTPUT_DIR}/liboar_plugin_${name}.so")
  configure_file("${OAR_PLUGIN_CMAKE_DIR}/manifest.json.in" "${ARG_MANIFEST_DIR}/${name}.json" @ONLY)

  if(NOT ARG_NO_INSTALL)
    file(RELATIVE_PATH OAR_MANIFEST_LIBRARY "/p/${OAR_MANIFEST_INSTALL_DIR}"
         "/p/${OAR_PLUGIN_INSTALL_DIR}/liboar_plugin_${name}.so")
    install(TARGETS ${target} LIBRARY DESTINATION ${OAR_PLUGIN_INSTALL_DIR})
    set(installed "${CMAKE_CURRENT_BINARY_DIR}/installed-manifest/${name}.json")
    configure_file("${OAR_PLUGIN_CMAKE_DIR}/manifest.json.in" "${installed}" @ONLY)
    install(FILES "${installed}" DESTINATION ${OAR_MANIFEST_INSTALL_DIR})
  endif()
endfunction()
