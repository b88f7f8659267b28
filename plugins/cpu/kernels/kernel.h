// What every cpu kernel is built from: host views of the call's tensors
// (copied, because the call record dies with the call), element types with
// their float conversions, a dtype switch, and launching work on the call's
// stream. Kernels validate and read attributes on the submitting thread, so a
// bad call fails at once with a message, then run their loops on the stream's
// worker, parallelised with OpenMP.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu.h"
#include "kernel_signatures.h"
#include "oar/ops.hpp"

namespace oar::cpu {

// IEEE half and bfloat16 as storage types; arithmetic happens in float.
struct half {
  uint16_t bits;
};
struct bfloat16 {
  uint16_t bits;
};

float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);  // round to nearest even
inline float bf16_to_float(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}
inline uint16_t float_to_bf16(float value) {  // round to nearest even; NaN stays NaN
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  if ((word & 0x7fffffffu) > 0x7f800000u) return uint16_t((word >> 16) | 0x40);
  word += 0x7fffu + ((word >> 16) & 1u);
  return uint16_t(word >> 16);
}

// The type arithmetic on T happens in: float for the 16-bit floats and f32,
// double for f64, the integer itself otherwise.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16>, float,
                                     std::conditional_t<std::is_same_v<T, bool>, int32_t, T>>;

template <typename T>
inline compute_t<T> load(const T* p) {
  if constexpr (std::is_same_v<T, half>)
    return half_to_float(p->bits);
  else if constexpr (std::is_same_v<T, bfloat16>)
    return bf16_to_float(p->bits);
  else if constexpr (std::is_same_v<T, bool>)
    return *reinterpret_cast<const uint8_t*>(p) != 0;
  else
    return *p;
}

template <typename T, typename V>
inline void store(T* p, V value) {
  if constexpr (std::is_same_v<T, half>)
    p->bits = float_to_half(float(value));
  else if constexpr (std::is_same_v<T, bfloat16>)
    p->bits = float_to_bf16(float(value));
  else if constexpr (std::is_same_v<T, bool>)
    *reinterpret_cast<uint8_t*>(p) = value != V(0);
  else
    *p = static_cast<T>(value);
}

template <typename T>
constexpr DLDataType dtype_of() {
  if constexpr (std::is_same_v<T, half>)
    return dtype::f16;
  else if constexpr (std::is_same_v<T, bfloat16>)
    return dtype::bf16;
  else if constexpr (std::is_same_v<T, float>)
    return dtype::f32;
  else if constexpr (std::is_same_v<T, double>)
    return dtype::f64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return dtype::i32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return dtype::i64;
  else
    return dtype::boolean;
}

// Calls |f(T{})| with the element type of |t|: any of the operator set's
// dtypes, or (|floats_only|) only f16, bf16, f32 and f64, so that float-only
// kernels are not instantiated for integers.
template <bool floats_only = false, typename F>
decltype(auto) with_dtype(DLDataType t, F&& f) {
  switch (ops::dtype_bit(t)) {
    case ops::kF16:
      return f(half{});
    case ops::kBF16:
      return f(bfloat16{});
    case ops::kF32:
      return f(float{});
    case ops::kF64:
      return f(double{});
    default:
      break;
  }
  if constexpr (!floats_only) {
    switch (ops::dtype_bit(t)) {
      case ops::kI32:
        return f(int32_t{});
      case ops::kI64:
        return f(int64_t{});
      case ops::kBool:
        return f(bool{});
      default:
        break;
    }
  }
  throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                        "the cpu plugin has no kernel for dtype " + dtype_name(t));
}

template <typename F>
decltype(auto) with_float(DLDataType t, F&& f) {
  return with_dtype<true>(t, std::forward<F>(f));
}

// A tensor as a kernel's loop sees it: host address of element 0, shape and
// strides in elements. Small and copyable into the worker's closure.
struct View {
  char* data = nullptr;
  DLDataType dtype{};
  int ndim = 0;
  int64_t shape[ops::kMaxDims] = {};
  int64_t strides[ops::kMaxDims] = {};

  int64_t numel() const;
  bool contiguous() const;
  template <typename T>
  T* ptr() const {
    return reinterpret_cast<T*>(data);
  }
  // Byte size of one element.
  size_t element_size() const { return size_t(dtype.bits / 8); }
};

// The view of |t|, range-checked against the plugin's allocation table.
View view_of(const AllocationTable& table, const DLTensor& t, const char* what);

// What a kernel body receives: the call, its operator's schema (attributes
// with defaults through |attrs|), and views of every tensor. The core has
// checked arity, dtypes, attributes and output shapes against the schema.
struct KernelContext {
  const oar_kernel_call_t* call;
  const ops::OpSchema& schema;
  ops::Attrs attrs;
  std::vector<View> inputs;
  std::vector<View> outputs;
};

// Runs |work| on the call's stream, after everything submitted before it.
void launch(const oar_kernel_call_t* call, std::function<void()> work);

// One kernel entry point per operator: validates and launches. Registered for
// every dtype signature the operator takes on cpu.
using KernelBody = void (*)(KernelContext& context);

// Registers |body| for |op| with one signature per entry of |signatures|
// (input dtypes then output dtypes, as the schema orders them).
void register_op(const oar::sdk::KernelRegistrar& registrar, const char* op, KernelBody body,
                 const std::vector<std::vector<DLDataType>>& signatures, uint32_t flags,
                 AllocationTable* table);

using oar::plugin::same_signatures;

// Each kernels/*.cc file registers its operators' kernels.
void register_elementwise_kernels(const oar::sdk::KernelRegistrar& registrar,
                                  AllocationTable* table);
void register_layout_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table);
void register_reduction_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table);
void register_nn_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table);

// Element offset of the |linear|-th element (row-major order) of |v|.
inline int64_t offset_of(const View& v, int64_t linear) {
  int64_t offset = 0;
  for (int d = v.ndim - 1; d >= 0; --d) {
    int64_t extent = v.shape[d];
    int64_t index = linear % extent;
    linear /= extent;
    offset += index * v.strides[d];
  }
  return offset;
}

}  // namespace oar::cpu
