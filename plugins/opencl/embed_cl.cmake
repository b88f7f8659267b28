# Turns one OpenCL C source into a C++ header holding it as a raw string, so
# that the plugin carries its kernels and the .cl files stay the one source.
#   cmake -DINPUT=<file.cl> -DOUTPUT=<file.h> -DNAME=<identifier> -P embed_cl.cmake
file(READ "${INPUT}" text)
string(FIND "${text}" ")oarcl\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )oarcl\"")
endif()
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${INPUT} by embed_cl.cmake; edit the .cl file.\n#pragma once\n"
     "inline constexpr const char ${NAME}[] = R\"oarcl(${text})oarcl\";\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
