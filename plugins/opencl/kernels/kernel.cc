#include "kernels/kernel.h"

#include <atomic>
#include <memory>
#include <mutex>

#include "kernels/dtype_tag.h"
#include "oar/dtype.hpp"

namespace oar::opencl {
namespace {

// What register_op stores as a kernel's user_data; lives as long as the plugin.
struct Entry {
  KernelBody body;
  const ops::OpSchema* schema;
  const KernelRef* const* kernels;
  const Backend* backend;
};

// The backend of the operators being registered (register_all_kernels).
const Backend* g_registering = nullptr;

std::vector<std::unique_ptr<Entry>>& entries() {
  static std::vector<std::unique_ptr<Entry>> all;
  return all;
}

// Fills |v| with |t| after checking its range; builds no message unless it
// throws.
void view_of(const Backend& backend, const oar_kernel_call_t& call, const DLTensor& t,
             const char* what, View& v) {
  if (t.ndim > ops::kMaxDims) {
    throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                          std::string(what) + " has more than 8 dimensions");
  }
  v.memory = t.data;
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
  backend.check_view(call, v.memory, oar::sdk::byte_span(t, what), what);
}

oar_status_t run_kernel(const oar_kernel_call_t* call) {
  return oar::sdk::guard([call] {
    oar::sdk::require_not_null(call, "kernel call");
    const auto* entry = static_cast<const Entry*>(call->user_data);
    oar::sdk::require_not_null(entry, "kernel call user_data");
    const Backend& backend = *entry->backend;
    KernelContext context{call,
                          *entry->schema,
                          ops::Attrs(*entry->schema, call->attrs, call->num_attrs),
                          {},
                          {},
                          entry->kernels,
                          &backend};
    context.inputs.reserve(call->num_inputs);
    context.outputs.reserve(call->num_outputs);
    for (size_t i = 0; i < call->num_inputs; ++i) {
      view_of(backend, *call, call->inputs[i], "input", context.inputs.add());
    }
    for (size_t i = 0; i < call->num_outputs; ++i) {
      view_of(backend, *call, call->outputs[i], "output", context.outputs.add());
    }
    entry->body(context);
  });
}

std::atomic<size_t>& next_ref_id() {
  static std::atomic<size_t> next{0};
  return next;
}

}  // namespace

const char* dtype_tag(DLDataType dtype) {
  if (const char* tag = source_dtype_tag(dtype)) return tag;
  const char* plugin = g_registering != nullptr ? g_registering->name() : "opencl";
  throw oar::sdk::Error(
      OAR_STATUS_INVALID_ARGUMENT,
      std::string("the ") + plugin + " plugin has no kernels for dtype " + dtype_name(dtype));
}

const char* index_error_operator(int32_t code) {
  static const char* const kNames[] = {"index_select",  "gather",         "embedding",
                                       "cross_entropy", "embedding_grad", "cross_entropy_grad",
                                       "one_hot",       "scatter",        "scatter_add"};
  return code >= 1 && code <= 9 ? kNames[code - 1] : "a kernel";
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

void KernelContext::require_dtype(DLDataType dtype) const {
  if (ops::dtype_bit(dtype) == ops::kF64 && !traits().fp64) {
    throw oar::sdk::Error(
        OAR_STATUS_UNIMPLEMENTED,
        std::string(schema.name) + ": the device has no fp64 (cl_khr_fp64), so no f64 kernels");
  }
}

void KernelContext::launch(Source source, DLDataType dtype, const char* kernel, int64_t global,
                           std::initializer_list<KArg> args) const {
  if (global <= 0) return;
  require_dtype(dtype);
  backend->launch_1d(*call, KernelName{source, dtype, kernel}, global, args);
}

void KernelContext::launch(Source source, DLDataType dtype, const KernelRef& kernel, int64_t global,
                           std::initializer_list<KArg> args) const {
  if (global <= 0) return;
  require_dtype(dtype);
  backend->launch_1d(*call, KernelName{source, dtype, kernel.name, &kernel}, global, args);
}

void KernelContext::launch_nd(Source source, DLDataType dtype, const char* kernel, cl_uint dims,
                              const size_t* global, const size_t* local,
                              std::initializer_list<KArg> args) const {
  launch_nd(KernelName{source, dtype, kernel}, dims, global, local, args);
}

void KernelContext::launch_nd(const KernelName& kernel, cl_uint dims, const size_t* global,
                              const size_t* local, std::initializer_list<KArg> args) const {
  for (cl_uint d = 0; d < dims; ++d) {
    if (global[d] == 0) return;
  }
  require_dtype(kernel.dtype);
  backend->launch_nd(*call, kernel, dims, global, local, args);
}

void register_op(const oar::sdk::KernelRegistrar& registrar, const char* op, KernelBody body,
                 const std::vector<std::vector<DLDataType>>& signatures, uint32_t flags,
                 const KernelRef* const* kernels) {
  oar::sdk::require(g_registering != nullptr, OAR_STATUS_INTERNAL,
                    "register_op outside register_all_kernels");
  const ops::OpSchema& schema = oar::sdk::schema_of(op, g_registering->name());
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  entries().push_back(std::make_unique<Entry>(Entry{body, &schema, kernels, g_registering}));
  oar::sdk::register_signatures(registrar, schema, signatures, &run_kernel, flags,
                                entries().back().get());
}

void register_all_kernels(const oar::sdk::KernelRegistrar& kernels, const Backend& backend) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  g_registering = &backend;
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
