#include "kernels/kernel.h"

#include <memory>
#include <mutex>

namespace oar::cpu {
namespace {

// What register_op stores as a kernel's user_data; lives as long as the plugin.
struct Entry {
  KernelBody body;
  const ops::OpSchema* schema;
  AllocationTable* table;
};

std::vector<std::unique_ptr<Entry>>& entries() {
  static std::vector<std::unique_ptr<Entry>> all;
  return all;
}

oar_status_t run_kernel(const oar_kernel_call_t* call) {
  return oar::sdk::guard([call] {
    require_not_null(call, "kernel call");
    const auto* entry = static_cast<const Entry*>(call->user_data);
    require_not_null(entry, "kernel call user_data");
    KernelContext context{
        call, *entry->schema, ops::Attrs(*entry->schema, call->attrs, call->num_attrs), {}, {}};
    for (size_t i = 0; i < call->num_inputs; ++i) {
      context.inputs.push_back(view_of(*entry->table, call->inputs[i], "input"));
    }
    for (size_t i = 0; i < call->num_outputs; ++i) {
      context.outputs.push_back(view_of(*entry->table, call->outputs[i], "output"));
    }
    entry->body(context);
  });
}

}  // namespace

float half_to_float(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t word;
  if (exponent == 0x1f) {
    word = sign | 0x7f800000u | (mantissa << 13);  // inf or NaN
  } else if (exponent != 0) {
    word = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    word = sign;
  } else {  // subnormal: normalise
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    word = sign | (uint32_t(113 - shift) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}

uint16_t float_to_half(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  uint16_t sign = uint16_t((word >> 16) & 0x8000u);
  uint32_t magnitude = word & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (magnitude >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf
  if (magnitude < 0x38800000u) {                                  // subnormal half (or zero)
    if (magnitude < 0x33000000u) return sign;
    uint32_t exponent = magnitude >> 23;
    uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exponent;  // 14..24
    uint32_t half_mantissa = mantissa >> (shift);
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half_mantissa & 1u))) ++half_mantissa;
    return uint16_t(sign | half_mantissa);
  }
  uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
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

View view_of(const AllocationTable& table, const DLTensor& t, const char* what) {
  oar::sdk::require(t.ndim <= ops::kMaxDims, OAR_STATUS_INVALID_ARGUMENT,
                    std::string(what) + " has more than 8 dimensions");
  View v;
  v.dtype = t.dtype;
  v.ndim = t.ndim;
  int64_t last = 0;
  bool empty = false;
  for (int i = 0; i < t.ndim; ++i) {
    v.shape[i] = t.shape[i];
    v.strides[i] = t.strides[i];
    empty |= t.shape[i] == 0;
    last += (t.shape[i] - 1) * t.strides[i];
  }
  uint64_t bytes = empty ? 0 : uint64_t(last + 1) * uint64_t(t.dtype.bits / 8);
  table.check_range(t.data, t.byte_offset, bytes, what);
  v.data = address(static_cast<oar_memory_t>(t.data), t.byte_offset);
  return v;
}

void launch(const oar_kernel_call_t* call, std::function<void()> work) {
  call->stream->queue->submit(std::move(work), {oar::plugin::TaskInfo::kKernel, 0});
}

void register_op(const oar::sdk::KernelRegistrar& registrar, const char* op, KernelBody body,
                 const std::vector<std::vector<DLDataType>>& signatures, uint32_t flags,
                 AllocationTable* table) {
  const ops::OpSchema& schema = oar::plugin::schema_of(op, "cpu");
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  entries().push_back(std::make_unique<Entry>(Entry{body, &schema, table}));
  oar::plugin::register_signatures(registrar, schema, signatures, &run_kernel, flags,
                                   entries().back().get());
}

}  // namespace oar::cpu
