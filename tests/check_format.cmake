# Fails listing every source file that .clang-format would change.
# cmake -DCLANG_FORMAT=<exe> -DSOURCE_DIR=<repo> -P check_format.cmake
file(GLOB_RECURSE sources
  "${SOURCE_DIR}/include/*.h" "${SOURCE_DIR}/include/*.hpp"
  "${SOURCE_DIR}/core/*.h" "${SOURCE_DIR}/core/*.cc"
  "${SOURCE_DIR}/plugins/*.h" "${SOURCE_DIR}/plugins/*.cc" "${SOURCE_DIR}/plugins/*.c"
  "${SOURCE_DIR}/cli/*.h" "${SOURCE_DIR}/cli/*.cc"
  "${SOURCE_DIR}/tests/*.h" "${SOURCE_DIR}/tests/*.cc" "${SOURCE_DIR}/tests/*.c"
  "${SOURCE_DIR}/conformance/*.h" "${SOURCE_DIR}/conformance/*.cc"
  "${SOURCE_DIR}/fuzz/*.h" "${SOURCE_DIR}/fuzz/*.cc"
  "${SOURCE_DIR}/bench/*.h" "${SOURCE_DIR}/bench/*.cc"
  "${SOURCE_DIR}/samples/*.h" "${SOURCE_DIR}/samples/*.cc")
# One clang-format process for every file (one per file took most of the
# test's time); each complaint starts with the file's path.
execute_process(COMMAND "${CLANG_FORMAT}" --dry-run --Werror ${sources}
                RESULT_VARIABLE result OUTPUT_QUIET ERROR_VARIABLE complaints)
set(unformatted "")
if(NOT result EQUAL 0)
  foreach(source IN LISTS sources)
    string(FIND "${complaints}" "${source}:" at)
    if(at GREATER -1)
      list(APPEND unformatted "${source}")
    endif()
  endforeach()
  if(NOT unformatted)
    message(FATAL_ERROR "clang-format failed (exit ${result}):\n${complaints}")
  endif()
endif()
if(unformatted)
  list(JOIN unformatted "\n  " listing)
  message(FATAL_ERROR "not formatted by .clang-format (run clang-format -i on them):\n  ${listing}")
endif()
list(LENGTH sources count)
message(STATUS "${count} sources formatted")
