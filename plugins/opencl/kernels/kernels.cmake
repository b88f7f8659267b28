# The host side of the kernels/*.cl operators (kernels/*.cc, written against
# kernels/kernel.h's Backend), compiled once into a static library that both
# the opencl plugin and the level_zero plugin link: each implements the
# Backend. Included by both plugins' CMakeLists.txt; the first defines it.
# Needs the OpenCL headers (CL/cl_platform.h: the sources' scalar types).
if(NOT TARGET oar_cl_kernels)
  find_path(OAR_CL_PLATFORM_INCLUDE_DIR CL/cl_platform.h REQUIRED)
  set(dir ${CMAKE_CURRENT_LIST_DIR})
  add_library(oar_cl_kernels STATIC
    ${dir}/kernel.cc ${dir}/elementwise.cc ${dir}/layout.cc ${dir}/reduction.cc ${dir}/nn.cc
    ${dir}/grad.cc ${dir}/nn_grad.cc ${dir}/optimizer.cc ${dir}/layout_v2.cc ${dir}/math_v2.cc
    ${dir}/gemm.cc)
  set_target_properties(oar_cl_kernels PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_include_directories(oar_cl_kernels PUBLIC ${dir}/.. ${OAR_CL_PLATFORM_INCLUDE_DIR})
  target_compile_definitions(oar_cl_kernels PUBLIC CL_TARGET_OPENCL_VERSION=120)
  target_compile_options(oar_cl_kernels PRIVATE -Wall -Wextra)
  target_link_libraries(oar_cl_kernels PUBLIC oar::plugin_sdk)
endif()
