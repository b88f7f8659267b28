// sum, mean, max, min, prod, argmax, argmin (shaders/reduce.comp): the host
// splits x's dimensions into kept and reduced ones, each with its strides.
// A reduction longer than kChunk elements runs in two (or more) passes over
// partial results in scratch memory: one invocation must not walk a million
// elements (llvmpipe's loop limit, and no parallelism either).
#include <algorithm>

#include "kernels/kernel.h"

namespace oar::vulkan {
namespace {

constexpr int64_t kChunk = 8192;

int op_code(const std::string& name) {
  static const char* const names[] = {"sum", "mean", "max", "min", "prod", "argmax", "argmin"};
  for (int i = 0; i < 7; ++i) {
    if (name == names[i]) return i;
  }
  throw oar::sdk::Error(OAR_STATUS_INTERNAL, "no reduce.comp operation for " + name);
}

// Scratch memory on the call's stream, as a buffer and an element offset.
std::pair<oar_memory_s*, int64_t> scratch(KernelContext& c, int64_t elements, size_t element) {
  oar_memory_t memory = nullptr;
  uint64_t offset = 0;
  oar::sdk::require(c.call->scratch_allocate != nullptr, OAR_STATUS_INTERNAL,
                    "the kernel call has no scratch allocator");
  oar_status_t status = c.call->scratch_allocate(
      c.call->scratch_context, uint64_t(elements) * element + element, &memory, &offset);
  oar::sdk::require(status == OAR_STATUS_OK, status, "scratch_allocate failed for a reduction");
  // Round up to a whole element.
  uint64_t rounded = (offset + element - 1) / element;
  return {memory, int64_t(rounded)};
}

}  // namespace

void reduce_dispatch(KernelContext& c, const Reduction& r) {
  int64_t outputs = 1;
  for (int64_t s : r.kept_shape) outputs *= s;
  if (outputs == 0) return;
  bool arg = r.op >= 5;
  int64_t chunk = std::max<int64_t>(1, std::min(r.count, kChunk));
  int64_t chunks = r.count <= kChunk ? 1 : (r.count + kChunk - 1) / kChunk;
  bool partial = chunks > 1;
  bool floats = shader_dtype(r.x_dtype) <= 3;
  // Partial results: f32 for float sums (never rounded to f16 in between),
  // the input dtype otherwise; arg reductions keep values and indices.
  DLDataType partial_dtype = arg ? dtype::i64 : floats ? dtype::f32 : r.x_dtype;
  Reduction second;
  oar_memory_s* values = nullptr;
  int64_t values_offset = 0;
  VkBuffer y = r.y;
  int64_t y_offset = r.y_offset;
  DLDataType y_dtype = r.y_dtype;
  if (partial) {
    auto [memory, offset] = scratch(c, outputs * chunks, partial_dtype.bits / 8);
    y = memory->buffer.buffer;
    y_offset = offset;
    y_dtype = partial_dtype;
    if (arg) {
      auto [vmemory, voffset] = scratch(c, outputs * chunks, r.x_dtype.bits / 8);
      values = vmemory;
      values_offset = voffset;
    }
  }
  Params p;
  p.add(outputs * chunks);
  p.add(int64_t(r.kept_shape.size()));
  p.add8(r.kept_shape.data(), int(r.kept_shape.size()), 1);
  p.add8(r.kept_strides.data(), int(r.kept_strides.size()), 0);
  p.add(int64_t(r.reduced_shape.size()));
  p.add8(r.reduced_shape.data(), int(r.reduced_shape.size()), 1);
  p.add8(r.reduced_strides.data(), int(r.reduced_strides.size()), 0);
  p.add(r.count);
  p.add(r.x_offset);
  p.add(y_offset);
  p.add_float(float(r.divisor));
  p.add(chunk);
  p.add(chunks);
  p.add(arg ? (r.indices != VK_NULL_HANDLE ? 2 : partial ? 1 : 0) : 0);
  p.add(r.indices != VK_NULL_HANDLE ? r.indices_offset : values_offset);
  std::vector<Binding> bindings = {{0, r.x}, {3, y}};
  if (values != nullptr) bindings.push_back({4, values->buffer.buffer});
  if (r.indices != VK_NULL_HANDLE) bindings.push_back({1, r.indices});
  // A partial mean is a sum; the division comes with the last pass.
  int op = partial && r.op == 1 ? 0 : r.op;
  std::string module =
      arg ? module_name("argreduce", {r.x_dtype}) : module_name("reduce", {r.x_dtype, y_dtype});
  dispatch(c.stream, module, op, bindings, p.data(), p.size(), uint64_t(outputs * chunks));
  if (!partial) return;
  // The partial results are [outputs, chunks]: reduce the chunks.
  second = r;
  second.x = arg ? values->buffer.buffer : y;
  second.x_dtype = arg ? r.x_dtype : partial_dtype;
  second.x_offset = arg ? values_offset : y_offset;
  second.kept_strides.assign(r.kept_shape.size(), 0);
  int64_t stride = chunks;
  for (size_t d = r.kept_shape.size(); d-- > 0;) {
    second.kept_strides[d] = stride;
    stride *= r.kept_shape[d];
  }
  second.reduced_shape = {chunks};
  second.reduced_strides = {1};
  second.count = chunks;
  if (arg) {
    second.indices = y;
    second.indices_offset = y_offset;
  }
  reduce_dispatch(c, second);
}

namespace {

void reduce(KernelContext& c, const std::vector<bool>& reduced) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  Reduction r;
  r.op = op_code(c.schema.name);
  r.count = 1;
  for (int d = 0; d < x.ndim; ++d) {
    if (reduced[size_t(d)]) {
      r.reduced_shape.push_back(x.shape[d]);
      r.reduced_strides.push_back(x.strides[d]);
      r.count *= x.shape[d];
    } else {
      r.kept_shape.push_back(x.shape[d]);
      r.kept_strides.push_back(x.strides[d]);
    }
  }
  // max, min and the arg reductions have no identity: an empty reduced axis
  // fails even when the output is empty.
  oar::sdk::require(r.count > 0 || r.op == 0 || r.op == 1 || r.op == 4, OAR_STATUS_INVALID_ARGUMENT,
                    "over an empty axis there is no value to return (no identity)");
  r.divisor = double(r.count);
  r.x = x.buffer();
  r.x_dtype = x.dtype;
  r.x_offset = x.offset;
  r.y = y.buffer();
  r.y_dtype = y.dtype;
  r.y_offset = y.offset;
  reduce_dispatch(c, r);
}

void reduction_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  std::vector<int64_t> axes = c.attrs.get_ints("axes");
  std::vector<bool> reduced(size_t(x.ndim), axes.empty());
  for (int64_t axis : axes) {
    if (x.ndim > 0) reduced[size_t(normalize_axis(axis, x.ndim))] = true;
  }
  reduce(c, reduced);
}

void arg_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  std::vector<bool> reduced(size_t(x.ndim), false);
  if (x.ndim > 0) reduced[size_t(normalize_axis(c.attrs.get_int("axis"), x.ndim))] = true;
  reduce(c, reduced);
}

}  // namespace

void register_reduction_kernels(const oar::sdk::KernelRegistrar& registrar) {
  for (const char* op : {"sum", "mean", "max", "min", "prod"}) {
    register_op(registrar, op, reduction_kernel,
                same_signatures(ops::find_schema(op)->dtypes, 1, 1));
  }
  std::vector<std::vector<DLDataType>> arg;
  for (DLDataType t : ops::dtypes_in(ops::kNumbers & kSupported)) arg.push_back({t, dtype::i64});
  register_op(registrar, "argmax", arg_kernel, arg);
  register_op(registrar, "argmin", arg_kernel, arg);
}

}  // namespace oar::vulkan
