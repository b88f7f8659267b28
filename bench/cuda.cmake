# The cuda plugin against the CUDA driver API and cuBLAS called directly
# (cuda_bench.cc; issue 20's Performance section). Builds wherever the plugin
# builds (the CUDA toolkit's headers; the driver and cuBLAS are loaded at run
# time), and skips every benchmark, exiting 0, without a GPU.
if(TARGET oar_plugin_cuda)
  find_package(CUDAToolkit QUIET)
  add_executable(oar_bench_cuda ${CMAKE_CURRENT_LIST_DIR}/cuda_bench.cc)
  target_include_directories(oar_bench_cuda PRIVATE ${PROJECT_SOURCE_DIR}
                                                    ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(oar_bench_cuda PRIVATE oar::oar benchmark::benchmark_main
                                               ${CMAKE_DL_LIBS})
  target_compile_definitions(oar_bench_cuda PRIVATE
    OAR_BENCH_CPU_MANIFEST="${PROJECT_BINARY_DIR}/${OAR_MANIFEST_INSTALL_DIR}/cpu.json"
    OAR_BENCH_CUDA_MANIFEST="${PROJECT_BINARY_DIR}/${OAR_MANIFEST_INSTALL_DIR}/cuda.json"
    OAR_BENCH_CUDA_FATBIN="${PROJECT_BINARY_DIR}/plugins/cuda/kernels.fatbin")
  add_dependencies(oar_bench_cuda oar_plugin_cuda)
endif()
