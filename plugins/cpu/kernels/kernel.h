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
#include "oar/ops.hpp"
#include "oar/sdk/kernel.hpp"

namespace oar::cpu {

// Element types, dtype dispatch, tensor views and broadcast loops are the
// SDK's (oar/sdk/kernel.hpp).
using oar::sdk::bf16_to_float;
using oar::sdk::bfloat16;
using oar::sdk::compute_t;
using oar::sdk::dtype_of;
using oar::sdk::float_to_bf16;
using oar::sdk::float_to_half;
using oar::sdk::half;
using oar::sdk::half_to_float;
using oar::sdk::load;
using oar::sdk::offset_of;
using oar::sdk::store;
using oar::sdk::with_dtype;
using View = oar::sdk::TensorView;

// Every dtype a cpu kernel may be instantiated for: the operator set's
// dtypes with the narrow integers (i8, u8, i16), which ops::kAll leaves out.
inline constexpr uint32_t kAnyDtype = ops::kAll | ops::kSmallInts;

// |f(T{})| for the floating dtypes only, so that float-only kernels are not
// instantiated for integers.
template <typename F>
decltype(auto) with_float(DLDataType t, F&& f) {
  return with_dtype<ops::kFloats>(t, std::forward<F>(f));
}

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

// Loops with fewer element operations than this stay on one thread: starting
// an OpenMP team costs more than it saves.
inline constexpr int64_t kParallelWork = int64_t(1) << 15;

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

using oar::sdk::same_signatures;

// Each kernels/*.cc file registers its operators' kernels.
void register_elementwise_kernels(const oar::sdk::KernelRegistrar& registrar,
                                  AllocationTable* table);
void register_layout_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table);
void register_reduction_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table);
void register_nn_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table);
void register_attention_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table);
void register_grad_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table);
void register_nn_grad_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table);
void register_optimizer_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table);
void register_layout_v2_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table);
void register_math_v2_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table);

}  // namespace oar::cpu
