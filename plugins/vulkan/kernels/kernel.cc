#include "kernels/kernel.h"

#include <cstring>
#include <memory>
#include <mutex>

#include "oar/sdk/kernel.hpp"

namespace oar::vulkan {
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

// Checks run for every tensor of every operation: their messages are built
// only on failure.
TensorRef ref_of(oar_stream_s* stream, const DLTensor& t, const char* what) {
  if (t.ndim > ops::kMaxDims) {
    throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                          std::string(what) + " has more than 8 dimensions");
  }
  TensorRef r;
  r.memory = static_cast<oar_memory_s*>(t.data);
  stream->device->require_allocation(r.memory, what);
  r.dtype = t.dtype;
  r.ndim = t.ndim;
  size_t element = t.dtype.bits / 8;
  if (element == 0 || t.byte_offset % element != 0) {
    throw oar::sdk::Error(
        OAR_STATUS_INVALID_ARGUMENT,
        std::string(what) + ": byte_offset is not a multiple of the element size");
  }
  r.offset = int64_t(t.byte_offset / element);
  for (int i = 0; i < t.ndim; ++i) {
    r.shape[i] = t.shape[i];
    r.strides[i] = t.strides[i];
  }
  // The bytes the tensor reaches, negative strides included (the SDK's
  // byte_span), must lie in its allocation.
  const oar::sdk::ByteSpan span = oar::sdk::byte_span(t, what);
  if (span.size != 0) check_range(r.memory, span.offset, span.size, what);
  return r;
}

oar_status_t run_kernel(const oar_kernel_call_t* call) {
  return oar::sdk::guard([call] {
    require_not_null(call, "kernel call");
    const auto* entry = static_cast<const Entry*>(call->user_data);
    require_not_null(entry, "kernel call user_data");
    require_not_null(call->stream, "kernel call stream");
    KernelContext context{call,
                          call->stream,
                          *entry->schema,
                          ops::Attrs(*entry->schema, call->attrs, call->num_attrs),
                          {},
                          {}};
    bool sixteen = false;
    context.inputs.reserve(call->num_inputs);
    context.outputs.reserve(call->num_outputs);
    for (size_t i = 0; i < call->num_inputs; ++i) {
      context.inputs.push_back(ref_of(call->stream, call->inputs[i], "input"));
      sixteen |= call->inputs[i].dtype.bits == 16;
    }
    for (size_t i = 0; i < call->num_outputs; ++i) {
      context.outputs.push_back(ref_of(call->stream, call->outputs[i], "output"));
      sixteen |= call->outputs[i].dtype.bits == 16;
    }
    if (sixteen && !call->stream->device->physical->storage16) {
      throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                            "this device has no 16-bit storage buffers (storageBuffer16BitAccess): "
                            "no f16 or bf16 tensors");
    }
    entry->body(context);
  });
}

}  // namespace

int64_t TensorRef::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

std::vector<int64_t> TensorRef::contiguous_strides() const {
  std::vector<int64_t> s(size_t(ndim), 1);
  for (int i = ndim - 2; i >= 0; --i) s[size_t(i)] = s[size_t(i) + 1] * shape[i + 1];
  return s;
}

int shader_dtype(DLDataType t) {
  switch (ops::dtype_bit(t)) {
    case ops::kF16:
      return 1;
    case ops::kBF16:
      return 2;
    case ops::kF32:
      return 3;
    case ops::kI32:
      return 4;
    case ops::kI64:
      return 5;
    case ops::kBool:
      return 6;
    case ops::kI8:
      return 7;
    case ops::kU8:
      return 8;
    case ops::kI16:
      return 9;
    default:
      break;
  }
  throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                        "the vulkan plugin has no shaders for dtype " + dtype_name(t));
}

std::string module_name(const char* base, std::initializer_list<DLDataType> dtypes) {
  std::string name = base;  // short enough for no heap allocation
  for (DLDataType t : dtypes) {
    name += '_';
    name += char('0' + shader_dtype(t));  // 1..9
  }
  return name;
}

void register_op(const oar::sdk::KernelRegistrar& registrar, const char* op, KernelBody body,
                 const std::vector<std::vector<DLDataType>>& signatures, uint32_t flags) {
  const ops::OpSchema& schema = oar::sdk::schema_of(op, "vulkan");
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  entries().push_back(std::make_unique<Entry>(Entry{body, &schema}));
  oar::sdk::register_signatures(registrar, schema, signatures, &run_kernel, flags,
                                entries().back().get());
}

std::vector<std::vector<DLDataType>> same_signatures(uint32_t bits, size_t inputs, size_t outputs) {
  return oar::sdk::same_signatures(bits & kSupported, inputs, outputs);
}

int normalize_axis(int64_t axis, int rank) {
  if (rank == 0) return 0;
  return int(axis < 0 ? axis + rank : axis);
}

void require_loop_budget(const KernelContext& c, uint64_t items, uint64_t iterations,
                         const char* what) {
  const PhysicalDevice& physical = *c.stream->device->physical;
  uint64_t threads = uint64_t(physical.max_groups) * 64;
  uint64_t rounds = (items + threads - 1) / threads;
  oar::sdk::require(rounds * iterations <= physical.loop_budget, OAR_STATUS_UNIMPLEMENTED,
                    std::string(c.schema.name) + ": " + what + " needs " +
                        std::to_string(rounds * iterations) +
                        " loop iterations in one shader invocation; this driver (llvmpipe) stops "
                        "loops after about " +
                        std::to_string(physical.loop_budget) +
                        " and the plugin refuses rather "
                        "than compute a wrong result");
}

void Params::add_float(float value) {
  int32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  words_.push_back(bits);
}

void Params::add8(const int64_t* values, int count, int64_t pad) {
  for (int i = 0; i < ops::kMaxDims; ++i) add(i < count ? values[i] : pad);
}

Operand broadcast(const TensorRef& t, const std::vector<int64_t>& shape) {
  Operand o;
  o.tensor = &t;
  o.offset = t.offset;
  int rank = int(shape.size());
  o.strides.assign(size_t(rank), 0);
  for (int d = 0; d < t.ndim; ++d) {
    int out = rank - t.ndim + d;
    o.strides[size_t(out)] = t.shape[d] == 1 ? 0 : t.strides[d];
  }
  return o;
}

Operand as_is(const TensorRef& t) {
  Operand o;
  o.tensor = &t;
  o.offset = t.offset;
  o.strides.assign(t.strides, t.strides + t.ndim);
  return o;
}

void map(oar_stream_s* stream, int op, const std::vector<int64_t>& shape, const Operand& a,
         const Operand& b, const Operand& c, const Operand& y, int32_t scalar0, int32_t scalar1) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (n == 0) return;
  Params p;
  p.add(n);
  p.add(int64_t(shape.size()));
  p.add8(shape.data(), int(shape.size()), 1);
  for (const Operand* o : {&a, &b, &c, &y}) {
    p.add(o->offset);
    p.add8(o->strides.data(), int(o->strides.size()), 0);
  }
  p.add(scalar0);
  p.add(scalar1);
  // The module: a's dtype (or y's for fill), b's, y's.
  DLDataType ya = y.tensor->dtype;
  DLDataType da = a.tensor != nullptr ? a.tensor->dtype : ya;
  DLDataType db = b.tensor != nullptr ? b.tensor->dtype : da;
  std::vector<Binding> bindings;
  bindings.reserve(4);
  if (a.tensor) bindings.push_back({0, a.tensor->buffer()});
  if (b.tensor) bindings.push_back({1, b.tensor->buffer()});
  if (c.tensor) bindings.push_back({2, c.tensor->buffer()});
  bindings.push_back({3, y.tensor->buffer()});
  dispatch(stream, module_name("map", {da, db, ya}), op, bindings, p.data(), p.size(), uint64_t(n));
}

}  // namespace oar::vulkan
