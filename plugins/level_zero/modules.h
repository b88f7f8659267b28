// The level_zero plugin's kernels: the opencl plugin's OpenCL C sources
// (plugins/opencl/kernels/*.cl after common.cl), compiled at build time by
// clang to SPIR-V, one module per (source, dtype) as the opencl plugin builds
// one program per (source, dtype), checked by spirv-val and embedded
// (embed_spirv.cmake writes the definitions).
#pragma once

#include <cstddef>

namespace oar::level_zero {

struct SpirvModule {
  const char* source;  // "elementwise" (kernels/elementwise.cl)
  const char* dtype;   // "f32": built with -DX=f32 -DX_F32
  const unsigned char* data;
  size_t size;
};

// Every embedded module; |count| receives their number.
const SpirvModule* spirv_modules(size_t* count);

// The module of |source| for |dtype|, or null where none was built.
const SpirvModule* find_spirv_module(const char* source, const char* dtype);

}  // namespace oar::level_zero
