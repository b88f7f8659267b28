#include "kernels/kernel.h"

#include <memory>
#include <mutex>

#include "oar_cl/elementwise_cl.h"
#include "oar_cl/nn_cl.h"
#include "oar_cl/reduction_cl.h"
#include "program.h"

namespace oar::opencl {
namespace {

// What register_op stores as a kernel's user_data; lives as long as the plugin.
struct Entry {
  KernelBody body;
  const ops::OpSchema* schema;
};

std::vector<std::unique_ptr<Entry>>& entries() {
  static std::vector<std::unique_ptr<Entry>> all;
  return all;
}

View view_of(const DLTensor& t, const char* what) {
  oar::sdk::require(t.ndim <= ops::kMaxDims, OAR_STATUS_INVALID_ARGUMENT,
                    std::string(what) + " has more than 8 dimensions");
  View v;
  v.memory = reinterpret_cast<cl_mem>(t.data);
  v.offset = t.byte_offset;
  v.dtype = t.dtype;
  v.ndim = t.ndim;
  int64_t low = 0;
  int64_t high = 0;
  bool empty = false;
  for (int i = 0; i < t.ndim; ++i) {
    v.shape[i] = t.shape[i];
    v.strides[i] = t.strides != nullptr ? t.strides[i] : 0;
    empty |= t.shape[i] == 0;
  }
  if (t.strides == nullptr) contiguous_strides(v.ndim, v.shape, v.strides);
  for (int i = 0; i < t.ndim; ++i) {
    int64_t reach = (v.shape[i] - 1) * v.strides[i];
    (reach < 0 ? low : high) += reach;
  }
  uint64_t element = uint64_t(t.dtype.bits / 8);
  oar::sdk::require(empty || uint64_t(-low) * element <= t.byte_offset, OAR_STATUS_OUT_OF_RANGE,
                    std::string(what) + ": negative strides reach before the allocation");
  uint64_t start = empty ? t.byte_offset : t.byte_offset - uint64_t(-low) * element;
  uint64_t bytes = empty ? 0 : uint64_t(high - low + 1) * element;
  plugin().allocations().check_range(v.memory, start, bytes, what);
  return v;
}

oar_status_t run_kernel(const oar_kernel_call_t* call) {
  return oar::sdk::guard([call] {
    require_not_null(call, "kernel call");
    const auto* entry = static_cast<const Entry*>(call->user_data);
    require_not_null(entry, "kernel call user_data");
    KernelContext context{
        call, *entry->schema, ops::Attrs(*entry->schema, call->attrs, call->num_attrs), {}, {}};
    context.inputs.reserve(call->num_inputs);
    context.outputs.reserve(call->num_outputs);
    for (size_t i = 0; i < call->num_inputs; ++i) {
      context.inputs.push_back(view_of(call->inputs[i], "input"));
    }
    for (size_t i = 0; i < call->num_outputs; ++i) {
      context.outputs.push_back(view_of(call->outputs[i], "output"));
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
  }
  return {"", ""};
}

KernelSlot& find_kernel(const KernelContext& context, Source source, DLDataType dtype,
                        const char* kernel) {
  PhysicalDevice& device = context.device();
  uint32_t bit = ops::dtype_bit(dtype);
  oar::sdk::require(
      !(bit == ops::kF64 && !device.fp64), OAR_STATUS_UNIMPLEMENTED,
      std::string(context.schema.name) + ": the device has no cl_khr_fp64, so no f64 kernels");
  const char* tag = dtype_tag(dtype);  // throws for dtypes outside the set
  // One slot per (source, dtype bit): bits are 1 << 0 .. 1 << 6.
  size_t slot = size_t(source) * 8 + size_t(__builtin_ctz(bit));
  SourceInfo info = source_info(source);
  return device.programs->kernel(slot, info.name, info.text, tag, kernel);
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
  check(cl().clEnqueueNDRangeKernel(context.call->stream->queue, slot.kernel, dims, nullptr, global,
                                    local, 0, nullptr, nullptr),
        (std::string("clEnqueueNDRangeKernel(") + kernel + ")").c_str());
}

}  // namespace

const char* dtype_tag(DLDataType dtype) {
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
    default:
      break;
  }
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

void contiguous_strides(int ndim, const int64_t* shape, int64_t* out) {
  int64_t stride = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    out[i] = stride;
    stride *= shape[i];
  }
}

int normalize_axis(int64_t axis, int rank, const char* what) {
  if (rank == 0 && axis == 0) return 0;
  oar::sdk::require(axis >= -rank && axis < rank, OAR_STATUS_INVALID_ARGUMENT,
                    std::string(what) + ": axis " + std::to_string(axis) +
                        " is out of range for rank " + std::to_string(rank));
  return int(axis < 0 ? axis + rank : axis);
}

void KernelContext::launch(Source source, DLDataType dtype, const char* kernel, int64_t global,
                           std::initializer_list<KArg> args) const {
  if (global <= 0) return;
  KernelSlot& slot = find_kernel(*this, source, dtype, kernel);
  size_t group = device().max_work_group_size < 64 ? device().max_work_group_size : 64;
  if (size_t(global) <= group) {
    // One small group: let the driver pick its shape, as a plain
    // clEnqueueNDRangeKernel would (PoCL runs a 1-item range faster).
    size_t exact = size_t(global);
    enqueue(*this, slot, kernel, 1, &exact, nullptr, args);
    return;
  }
  size_t padded = (size_t(global) + group - 1) / group * group;
  enqueue(*this, slot, kernel, 1, &padded, &group, args);
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
                 const std::vector<std::vector<DLDataType>>& signatures, uint32_t flags) {
  const ops::OpSchema& schema = oar::plugin::schema_of(op, "opencl");
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  entries().push_back(std::make_unique<Entry>(Entry{body, &schema}));
  oar::plugin::register_signatures(registrar, schema, signatures, &run_kernel, flags,
                                   entries().back().get());
}

void OpenclPlugin::register_kernels(const oar_kernel_registrar_t* registrar) {
  require_not_null(registrar, "registrar");
  oar::sdk::KernelRegistrar kernels(registrar);
  register_elementwise_kernels(kernels);
  register_layout_kernels(kernels);
  register_reduction_kernels(kernels);
  register_nn_kernels(kernels);
}

}  // namespace oar::opencl
