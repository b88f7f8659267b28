// The tag by which the opencl plugin's .cl sources name a dtype ("f32"): the
// opencl plugin builds one program per source and tag, and the level_zero
// plugin loads the SPIR-V modules compiled from the same sources and tags.
#pragma once

#include <dlpack/dlpack.h>

#include "oar/ops.hpp"

namespace oar::opencl {

// nullptr for a dtype the sources have no kernels for.
inline const char* source_dtype_tag(DLDataType dtype) {
  switch (ops::dtype_bit(dtype)) {
    case ops::kF16:
      return "f16";
    case ops::kBF16:
      return "bf16";
    case ops::kF32:
      return "f32";
    case ops::kF64:
      return "f64";
    case ops::kI32:
      return "i32";
    case ops::kI64:
      return "i64";
    case ops::kBool:
      return "bool";
    case ops::kI8:
      return "i8";
    case ops::kU8:
      return "u8";
    case ops::kI16:
      return "i16";
    default:
      return nullptr;
  }
}

}  // namespace oar::opencl
