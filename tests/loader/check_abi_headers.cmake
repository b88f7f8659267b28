# cmake -DC_COMPILER=.. -DCXX_COMPILER=.. -DINCLUDE_DIRS=a;b -DHEADER_DIR=.. -DWORK_DIR=..
#       -P check_abi_headers.cmake
# Compiles every C ABI header alone, as C99 and as C++17, with warnings as
# errors, so that each header includes what it uses and stays valid in both
# languages. Fails naming every header that does not compile.
foreach(var C_COMPILER CXX_COMPILER INCLUDE_DIRS HEADER_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_abi_headers.cmake: -D${var}=... is required")
  endif()
endforeach()

set(include_flags "")
foreach(dir IN LISTS INCLUDE_DIRS)
  list(APPEND include_flags "-I${dir}")
endforeach()
set(warning_flags -Wall -Wextra -Werror -pedantic)

file(GLOB headers RELATIVE "${HEADER_DIR}" "${HEADER_DIR}/*.h")
list(SORT headers)
if(NOT headers)
  message(FATAL_ERROR "no headers in ${HEADER_DIR}")
endif()
file(MAKE_DIRECTORY "${WORK_DIR}")

set(failed "")
foreach(header IN LISTS headers)
  string(MAKE_C_IDENTIFIER "${header}" stem)
  foreach(language c99 c++17)
    if(language STREQUAL "c99")
      set(compiler "${C_COMPILER}")
      set(source "${WORK_DIR}/${stem}.c")
    else()
      set(compiler "${CXX_COMPILER}")
      set(source "${WORK_DIR}/${stem}.cc")
    endif()
    file(WRITE "${source}" "#include \"oar/${header}\"\n")
    execute_process(
      COMMAND "${compiler}" -std=${language} ${warning_flags} ${include_flags} -fsyntax-only
              "${source}"
      RESULT_VARIABLE result
      OUTPUT_VARIABLE output
      ERROR_VARIABLE output)
    if(NOT result EQUAL 0)
      message("oar/${header} does not compile alone as ${language}:\n${output}")
      list(APPEND failed "oar/${header} (${language})")
    endif()
  endforeach()
endforeach()

list(LENGTH headers count)
if(failed)
  list(JOIN failed ", " failed_text)
  message(FATAL_ERROR "headers that do not compile alone: ${failed_text}")
endif()
message(STATUS "${count} headers compile alone as C99 and C++17")
