#include "kernels/kernel.h"

#include <atomic>
#include <memory>
#include <mutex>

#include "kernels/dtype_tag.h"
#include "oar_cl/elementwise_cl.h"
#include "oar_cl/gemm_cl.h"
#include "oar_cl/grad_cl.h"
#include "oar_cl/layout_v2_cl.h"
#include "oar_cl/math_v2_cl.h"
#include "oar_cl/nn_cl.h"
#include "oar_cl/nn_grad_cl.h"
#include "oar_cl/optimizer_cl.h"
#include "oar_cl/reduction_cl.h"
#include "program.h"

namespace oar::opencl {
namespace {

// What register_op stores as a kernel's user_data; lives as long as the plugin.
struct Entry {
  KernelBody body;
  const ops::OpSchema* schema;
  const KernelRef* const* kernels;
};

std::vector<std::unique_ptr<Entry>>& entries() {
  static std::vector<std::unique_ptr<Entry>> all;
  return all;
}

// Fills |v| with |t| after checking its range; builds no message unless it
// throws.
void view_of(const DLTensor& t, const char* what, View& v) {
  if (t.ndim > ops::kMaxDims) {
    throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                          std::string(what) + " has more than 8 dimensions");
  }
  v.memory = reinterpret_cast<cl_mem>(t.data);
  v.offset = t.byte_offset;
  v.dtype = t.dtype;
  v.ndim = t.ndim;
  for (int i = 0; i < t.ndim; ++i) {
    v.shape[i] = t.shape[i];
    v.strides[i] = t.strides != nullptr ? t.strides[i] : 0;
  }
  if (t.strides == nullptr) contiguous_strides(v.ndim, v.shape, v.strides);
  // The bytes the tensor reaches, negative strides included (the SDK's
  // byte_span), must lie in its allocation.
  const oar::sdk::ByteSpan span = oar::sdk::byte_span(t, what);
  // The common case checked here without building check_range's messages;
  // anything else (NULL, unknown, out of range) through check_range, which
  // throws with them.
  AllocationTable::Allocation allocation;
  if (v.memory != nullptr && plugin().allocations().find(v.memory, &allocation) &&
      span.offset <= allocation.size && span.size <= allocation.size - span.offset) {
    return;
  }
  plugin().allocations().check_range(v.memory, span.offset, span.size, what);
}

oar_status_t run_kernel(const oar_kernel_call_t* call) {
  return oar::sdk::guard([call] {
    require_not_null(call, "kernel call");
    const auto* entry = static_cast<const Entry*>(call->user_data);
    require_not_null(entry, "kernel call user_data");
    KernelContext context{
        call, *entry->schema, ops::Attrs(*entry->schema, call->attrs, call->num_attrs), {},
        {},   entry->kernels};
    context.inputs.reserve(call->num_inputs);
    context.outputs.reserve(call->num_outputs);
    for (size_t i = 0; i < call->num_inputs; ++i) {
      view_of(call->inputs[i], "input", context.inputs.add());
    }
    for (size_t i = 0; i < call->num_outputs; ++i) {
      view_of(call->outputs[i], "output", context.outputs.add());
    }
    entry->body(context);
  });
}

struct SourceInfo {
  const char* name;
  const char* text;
};

SourceInfo source_info(Source source) {
  switch (source) {
    case Source::kElementwise:
      return {"elementwise", kClElementwiseSource};
    case Source::kReduction:
      return {"reduction", kClReductionSource};
    case Source::kNn:
      return {"nn", kClNnSource};
    case Source::kGrad:
      return {"grad", kClGradSource};
    case Source::kNnGrad:
      return {"nn_grad", kClNnGradSource};
    case Source::kOptimizer:
      return {"optimizer", kClOptimizerSource};
    case Source::kLayoutV2:
      return {"layout_v2", kClLayoutV2Source};
    case Source::kMathV2:
      return {"math_v2", kClMathV2Source};
    case Source::kGemm:  // kernels/gemm.cc adds the device's tile shape
      return {"gemm", kClGemmSource};
  }
  return {"", ""};
}

// The program slot of (source, dtype): one per dtype bit (1 << 0 .. 1 << 15).
// Throws for dtypes outside the set and for f64 without cl_khr_fp64.
size_t program_slot(const KernelContext& context, Source source, DLDataType dtype,
                    const char** tag) {
  uint32_t bit = ops::dtype_bit(dtype);
  if (bit == ops::kF64 && !context.device().fp64) {
    throw oar::sdk::Error(
        OAR_STATUS_UNIMPLEMENTED,
        std::string(context.schema.name) + ": the device has no cl_khr_fp64, so no f64 kernels");
  }
  *tag = dtype_tag(dtype);  // throws for dtypes outside the set
  return size_t(source) * 16 + size_t(__builtin_ctz(bit));
}

KernelSlot& find_kernel(const KernelContext& context, Source source, DLDataType dtype,
                        const char* kernel) {
  const char* tag = nullptr;
  size_t slot = program_slot(context, source, dtype, &tag);
  SourceInfo info = source_info(source);
  return context.device().programs->kernel(slot, info.name, info.text, tag, kernel);
}

KernelSlot& find_kernel(const KernelContext& context, Source source, DLDataType dtype,
                        const KernelRef& kernel) {
  const char* tag = nullptr;
  size_t slot = program_slot(context, source, dtype, &tag);
  SourceInfo info = source_info(source);
  return context.device().programs->kernel(slot, kernel.id, info.name, info.text, tag, kernel.name);
}

void enqueue(const KernelContext& context, KernelSlot& slot, const char* kernel, cl_uint dims,
             const size_t* global, const size_t* local, std::initializer_list<KArg> args) {
  // Arguments and enqueue under the kernel's lock: another stream may use the
  // same cl_kernel, and enqueueing captures the arguments.
  std::lock_guard<std::mutex> lock(slot.mutex);
  cl_uint index = 0;
  for (const KArg& arg : args) {
    cl_int code = cl().clSetKernelArg(slot.kernel, index, arg.size, arg.data);
    if (code != CL_SUCCESS) {
      check(code,
            (std::string("clSetKernelArg(") + kernel + ", " + std::to_string(index) + ")").c_str());
    }
    ++index;
  }
  cl_int code = cl().clEnqueueNDRangeKernel(context.call->stream->queue, slot.kernel, dims, nullptr,
                                            global, local, 0, nullptr, nullptr);
  if (code != CL_SUCCESS) {
    check(code, (std::string("clEnqueueNDRangeKernel(") + kernel + ")").c_str());
  }
}

// The 1-D range of launch: |global| work-items, padded to the work-group
// size unless one small group does.
template <typename Kernel>
void launch_1d(const KernelContext& context, Source source, DLDataType dtype, const Kernel& kernel,
               const char* name, int64_t global, std::initializer_list<KArg> args) {
  if (global <= 0) return;
  KernelSlot& slot = find_kernel(context, source, dtype, kernel);
  size_t most = context.device().max_work_group_size;
  size_t group = most < 64 ? most : 64;
  if (size_t(global) <= group) {
    // One small group: let the driver pick its shape, as a plain
    // clEnqueueNDRangeKernel would (PoCL runs a 1-item range faster).
    size_t exact = size_t(global);
    enqueue(context, slot, name, 1, &exact, nullptr, args);
    return;
  }
  size_t padded = (size_t(global) + group - 1) / group * group;
  enqueue(context, slot, name, 1, &padded, &group, args);
}

std::atomic<size_t>& next_ref_id() {
  static std::atomic<size_t> next{0};
  return next;
}

}  // namespace

const char* dtype_tag(DLDataType dtype) {
  if (const char* tag = source_dtype_tag(dtype)) return tag;
  throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                        "the opencl plugin has no kernels for dtype " + dtype_name(dtype));
}

int64_t View::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

bool View::contiguous() const {
  int64_t expected = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

KernelRef::KernelRef(const char* kernel_name) : name(kernel_name), id(next_ref_id()++) {}

void ViewList::reserve(size_t count) {
  if (count <= kInline) return;
  heap_.reset(new unsigned char[count * sizeof(View)]);
  data_ = reinterpret_cast<View*>(heap_.get());
}

void KernelContext::launch(Source source, DLDataType dtype, const char* kernel, int64_t global,
                           std::initializer_list<KArg> args) const {
  launch_1d(*this, source, dtype, kernel, kernel, global, args);
}

void KernelContext::launch(Source source, DLDataType dtype, const KernelRef& kernel, int64_t global,
                           std::initializer_list<KArg> args) const {
  launch_1d(*this, source, dtype, kernel, kernel.name, global, args);
}

void KernelContext::launch_nd(Source source, DLDataType dtype, const char* kernel, cl_uint dims,
                              const size_t* global, const size_t* local,
                              std::initializer_list<KArg> args) const {
  for (cl_uint d = 0; d < dims; ++d) {
    if (global[d] == 0) return;
  }
  KernelSlot& slot = find_kernel(*this, source, dtype, kernel);
  enqueue(*this, slot, kernel, dims, global, local, args);
}

void register_op(const oar::sdk::KernelRegistrar& registrar, const char* op, KernelBody body,
                 const std::vector<std::vector<DLDataType>>& signatures, uint32_t flags,
                 const KernelRef* const* kernels) {
  const ops::OpSchema& schema = oar::sdk::schema_of(op, "opencl");
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  entries().push_back(std::make_unique<Entry>(Entry{body, &schema, kernels}));
  oar::sdk::register_signatures(registrar, schema, signatures, &run_kernel, flags,
                                entries().back().get());
}

void OpenclPlugin::register_kernels(const oar_kernel_registrar_t* registrar) {
  require_not_null(registrar, "registrar");
  oar::sdk::KernelRegistrar kernels(registrar);
  register_elementwise_kernels(kernels);
  register_layout_kernels(kernels);
  register_reduction_kernels(kernels);
  register_nn_kernels(kernels);
  register_gemm_kernels(kernels);
  register_grad_kernels(kernels);
  register_nn_grad_kernels(kernels);
  register_optimizer_kernels(kernels);
  register_layout_v2_kernels(kernels);
  register_math_v2_kernels(kernels);
}

}  // namespace oar::opencl
