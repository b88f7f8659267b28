// What the sample's kernel files share (kernels.cc here and
// samples/primitives_plugin/kernels.cc): the helpers every kernel body uses,
// and the kernels of the operators both samples register (creation, layout,
// argmax and matmul, in common_kernels.cc). A vendor copying this sample keeps the
// three files together.
#pragma once

#include <cstring>
#include <functional>
#include <type_traits>
#include <utility>

#include "oar/sdk/queue_streams.hpp"
#include "sample.h"

namespace sample {

namespace sdk = oar::sdk;
namespace ops = oar::ops;
using sdk::KernelCall;
using sdk::TensorView;

constexpr uint32_t kFloats = ops::kFloats;
constexpr uint32_t kNumbers = ops::kNumbers;
// Every dtype of the set, the narrow integers included (the plumbing operators).
constexpr uint32_t kAll = ops::kAll | ops::kSmallInts;

// --- what every kernel shares ---------------------------------------------------

inline const sdk::AllocationTable& allocations_of(const KernelCall& call) {
  return *static_cast<const sdk::AllocationTable*>(call.user_data);
}

inline TensorView input(const KernelCall& call, size_t i) {
  allocations_of(call).check_tensor(call.input(i), "input");
  return sdk::view_of(call.input(i));
}

inline TensorView output(const KernelCall& call, size_t i = 0) {
  allocations_of(call).check_tensor(call.output(i), "output");
  return sdk::view_of(call.output(i));
}

inline void launch(const KernelCall& call, std::function<void()> work) {
  sdk::QueueStreams::submit(call.call.stream, std::move(work), {sdk::TaskInfo::kKernel, 0});
}

// A float value as double, an integer as itself (int32_t for the narrow ones).
template <typename T>
using wide_t = std::conditional_t<std::is_integral_v<sdk::compute_t<T>>, sdk::compute_t<T>, double>;

template <typename T>
wide_t<T> get(const TensorView& v, int64_t i) {
  return wide_t<T>(sdk::load(v.ptr<T>() + i));
}

template <typename T, typename V>
void put(const TensorView& v, int64_t i, V value) {
  sdk::store(v.ptr<T>() + i, value);
}

// A float truncated toward zero into an integer; NaN and values outside
// int64's range give 0 (docs/ops.md leaves them unspecified).
inline int64_t truncate(double value) {
  return value >= -9223372036854775808.0 && value < 9223372036854775808.0 ? int64_t(value) : 0;
}

// Integer arithmetic wraps (docs/ops.md): done in the unsigned type.
template <typename I, typename F>
I wrap(I a, I b, F f) {
  using U = std::make_unsigned_t<I>;
  return I(f(U(a), U(b)));
}

// Rows of |v| along |axis|: outer x extent x inner, contiguous.
struct Rows {
  int64_t outer = 1, extent = 1, inner = 1;
};

inline Rows rows_of(const TensorView& v, int axis) {
  Rows r;
  for (int d = 0; d < v.ndim; ++d) {
    if (d < axis) r.outer *= v.shape[d];
    if (d == axis) r.extent = v.shape[d];
    if (d > axis) r.inner *= v.shape[d];
  }
  return r;
}

// Copies |from| into |to| element by element (any strides; one shape).
void move_elements(const TensorView& to, const TensorView& from);

// --- the kernels both samples register (common_kernels.cc) ---------------------

void fill(const KernelCall& call);       // every dtype (kAll)
void copy(const KernelCall& call);       // any strides: OAR_KERNEL_FLAG_STRIDED_INPUTS
void cast(const KernelCall& call);       // docs/ops.md's cast table
void transpose(const KernelCall& call);  // any permutation
void concat(const KernelCall& call);     // 1..32 inputs (oar::sdk::signatures_for)
void slice(const KernelCall& call);      // start, step along one axis
void argmax(const KernelCall& call);     // the first extreme; a NaN is extreme
void argmin(const KernelCall& call);     // (registered by samples/primitives_plugin)
void matmul(const KernelCall& call);     // floats, batched and broadcast

}  // namespace sample
