// The plugin's kernels (kernels/kernels.cu) compiled by nvcc into one fatbin,
// embedded by embed_image.cmake into kernels_image.cc at build time.
#pragma once

#include <cstddef>

namespace oar::cuda {

// The fatbin, for cuModuleLoadData.
const void* kernel_image();
size_t kernel_image_size();
// The names of its kernels (kernels/kernels.list), for cuModuleGetFunction.
const char* const* kernel_names();
size_t kernel_count();

}  // namespace oar::cuda
