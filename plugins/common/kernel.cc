#include "oar/sdk/kernel.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "oar/error.hpp"

namespace oar::sdk {

const ops::OpSchema& schema_of(const char* op, const char* plugin) {
  const ops::OpSchema* schema = ops::find_schema(op);
  if (schema == nullptr) {
    throw Error(OAR_STATUS_INTERNAL, std::string(plugin) + " kernel for unknown operator " + op);
  }
  return *schema;
}

void register_signatures(const KernelRegistrar& registrar, const ops::OpSchema& schema,
                         const std::vector<Signature>& signatures, oar_kernel_fn fn, uint32_t flags,
                         void* user_data) {
  const size_t outputs = schema.outputs.size();
  for (const Signature& signature : signatures) {
    require(signature.size() >= outputs, OAR_STATUS_INTERNAL,
            std::string("a signature for ") + schema.name + " has fewer tensors than outputs");
    registrar.add_signature(schema.name, signature.data(), signature.size() - outputs, outputs, fn,
                            flags, user_data);
  }
}

std::vector<Signature> same_signatures(uint32_t bits, size_t inputs, size_t outputs) {
  std::vector<Signature> result;
  for (DLDataType t : ops::dtypes_in(bits)) result.emplace_back(inputs + outputs, t);
  return result;
}

std::vector<Signature> signatures_for(const ops::OpSchema& schema, uint32_t bits,
                                      size_t max_variadic) {
  // The input counts the schema allows: every required input, then each
  // trailing optional one in turn; a variadic last input repeats.
  size_t required = 0;
  bool variadic = false;
  for (const ops::TensorSpec& spec : schema.inputs) {
    required += spec.optional ? 0 : 1;
    variadic |= spec.variadic;
  }
  std::vector<size_t> counts;
  if (variadic) {
    for (size_t n = std::max<size_t>(required, 1); n <= std::max(required, max_variadic); ++n) {
      counts.push_back(n);
    }
  } else {
    for (size_t n = required; n <= schema.inputs.size(); ++n) counts.push_back(n);
  }
  const size_t outputs = schema.outputs.size();
  const std::vector<DLDataType> data = ops::dtypes_in(bits & schema.dtypes);
  std::vector<Signature> result;
  for (size_t inputs : counts) {
    for (DLDataType t : data) {
      switch (schema.rule) {
        case ops::DtypeRule::kSame:
          result.emplace_back(inputs + outputs, t);
          break;
        case ops::DtypeRule::kCompare: {
          Signature s(inputs, t);
          s.insert(s.end(), outputs, dtype::boolean);
          result.push_back(std::move(s));
          break;
        }
        case ops::DtypeRule::kArgReduce: {
          Signature s(inputs, t);
          s.insert(s.end(), outputs, dtype::i64);
          result.push_back(std::move(s));
          break;
        }
        case ops::DtypeRule::kWhere: {
          Signature s(inputs + outputs, t);
          s[0] = dtype::boolean;
          result.push_back(std::move(s));
          break;
        }
        case ops::DtypeRule::kIndexed:
          for (DLDataType index : {dtype::i32, dtype::i64}) {
            Signature s(inputs + outputs, t);
            if (schema.index_input >= 0 && size_t(schema.index_input) < inputs) {
              s[size_t(schema.index_input)] = index;
            }
            result.push_back(std::move(s));
          }
          break;
        case ops::DtypeRule::kCast:
          for (DLDataType out : data) {
            Signature s(inputs, t);
            s.insert(s.end(), outputs, out);
            result.push_back(std::move(s));
          }
          break;
        case ops::DtypeRule::kCustom: {
          // Data inputs of |t| (an index input i32 or i64), outputs as the
          // schema says; operators with other mixes list their signatures.
          const bool indexed = schema.index_input >= 0 && size_t(schema.index_input) < inputs;
          for (DLDataType index : {dtype::i32, dtype::i64}) {
            Signature s(inputs, t);
            if (indexed) s[size_t(schema.index_input)] = index;
            for (DLDataType out : schema.output_dtypes_fn(schema, t)) s.push_back(out);
            result.push_back(std::move(s));
            if (!indexed) break;
          }
          break;
        }
      }
    }
  }
  return result;
}

std::pair<oar_memory_t, uint64_t> KernelCall::scratch(uint64_t size) const {
  require(call.scratch_allocate != nullptr, OAR_STATUS_INTERNAL,
          "the core passed no scratch allocator");
  oar_memory_t memory = nullptr;
  uint64_t offset = 0;
  oar_status_t status = call.scratch_allocate(call.scratch_context, size, &memory, &offset);
  if (status != OAR_STATUS_OK) {
    throw Error(status, std::string(schema.name) + ": no scratch memory of " +
                            std::to_string(size) + " bytes");
  }
  return {memory, offset};
}

void KernelTable::add(const KernelRegistrar& registrar, const char* op, KernelBody body,
                      const std::vector<Signature>& signatures, uint32_t flags, void* user_data) {
  require_not_null(body, "kernel body");
  const ops::OpSchema& schema = schema_of(op);
  entries_.push_back(Entry{body, &schema, user_data});
  register_signatures(registrar, schema, signatures, &KernelTable::run, flags, &entries_.back());
}

void KernelTable::add(const KernelRegistrar& registrar, const char* op, KernelBody body,
                      uint32_t dtype_bits, uint32_t flags, void* user_data) {
  add(registrar, op, body, signatures_for(schema_of(op), dtype_bits), flags, user_data);
}

oar_status_t KernelTable::run(const oar_kernel_call_t* call) {
  return guard([call] {
    require_not_null(call, "kernel call");
    const auto* entry = static_cast<const Entry*>(call->user_data);
    require_not_null(entry, "kernel call user_data");
    try {
      KernelCall kernel_call{*call, *entry->schema,
                             ops::Attrs(*entry->schema, call->attrs, call->num_attrs),
                             entry->user_data};
      entry->body(kernel_call);
    } catch (const oar::Error& e) {  // the schema's attribute lookups
      throw Error(e.code(), e.message());
    }
  });
}

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
    uint32_t half_mantissa = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half_mantissa & 1u))) ++half_mantissa;
    return uint16_t(sign | half_mantissa);
  }
  uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

ByteSpan byte_span(const DLTensor& t, const char* what) {
  if (t.ndim < 0 || t.ndim > kMaxDims) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, std::string(what) + " has " + std::to_string(t.ndim) +
                                                 " dimensions (at most " +
                                                 std::to_string(kMaxDims) + ")");
  }
  const uint64_t element = uint64_t(t.dtype.bits / 8) * t.dtype.lanes;
  // Element offsets below and above element 0 that the tensor reaches.
  int64_t low = 0;
  int64_t high = 0;
  bool overflow = false;
  for (int i = 0; i < t.ndim; ++i) {
    const int64_t extent = t.shape[i];
    if (extent < 0) {
      throw Error(OAR_STATUS_INVALID_ARGUMENT, std::string(what) + " has a negative extent");
    }
    if (extent == 0) return ByteSpan{t.byte_offset, 0};
    int64_t stride = 1;
    if (t.strides != nullptr) {
      stride = t.strides[i];
    } else {
      for (int j = i + 1; j < t.ndim; ++j)
        overflow |= __builtin_mul_overflow(stride, t.shape[j], &stride);
    }
    int64_t reach = 0;
    overflow |= __builtin_mul_overflow(extent - 1, stride, &reach);
    overflow |= __builtin_add_overflow(reach < 0 ? low : high, reach, reach < 0 ? &low : &high);
  }
  int64_t range = 0;
  uint64_t count = 0;
  uint64_t bytes = 0;
  overflow |= __builtin_sub_overflow(high, low, &range);
  overflow |= __builtin_add_overflow(uint64_t(range), uint64_t(1), &count);
  overflow |= __builtin_mul_overflow(count, element, &bytes);
  if (overflow) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                std::string(what) + ": its shape and strides span more than 2^63 elements");
  }
  const uint64_t below = uint64_t(-low) * element;
  if (below > t.byte_offset) {
    throw Error(OAR_STATUS_OUT_OF_RANGE,
                std::string(what) + ": negative strides reach before the allocation");
  }
  return ByteSpan{t.byte_offset - below, bytes};
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

bool TensorView::contiguous() const {
  int64_t expected = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

TensorView view_of(const DLTensor& t) {
  if (t.ndim < 0 || t.ndim > kMaxDims) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "a tensor has " + std::to_string(t.ndim) +
                                                 " dimensions (at most " +
                                                 std::to_string(kMaxDims) + ")");
  }
  TensorView v;
  v.data = data_pointer(t);
  v.dtype = t.dtype;
  v.ndim = t.ndim;
  for (int i = 0; i < t.ndim; ++i) v.shape[i] = t.shape[i];
  if (t.strides != nullptr) {
    for (int i = 0; i < t.ndim; ++i) v.strides[i] = t.strides[i];
  } else {
    contiguous_strides(v.ndim, v.shape, v.strides);
  }
  return v;
}

void contiguous_strides(int ndim, const int64_t* shape, int64_t* out_strides) {
  int64_t stride = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    out_strides[i] = stride;
    stride *= shape[i];
  }
}

int normalize_axis(int64_t axis, int rank, const char* what) {
  if (rank == 0 && axis == 0) return 0;
  if (axis < -rank || axis >= rank) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, std::string(what) + ": axis " + std::to_string(axis) +
                                                 " is out of range for rank " +
                                                 std::to_string(rank));
  }
  return int(axis < 0 ? axis + rank : axis);
}

uint64_t scalar_bits(double value, DLDataType t) {
  const uint32_t bit = ops::dtype_bit(t);
  if (bit == ops::kF64) {
    uint64_t bits;
    std::memcpy(&bits, &value, 8);
    return bits;
  }
  if (bit == ops::kF32 || bit == ops::kF16 || bit == ops::kBF16) {
    float f = float(value);
    uint32_t word;
    if (bit != ops::kF32 && !std::isnan(value) && double(f) != value) {
      if (std::fabs(double(f)) > std::fabs(value)) f = std::nextafter(f, 0.0f);
      std::memcpy(&word, &f, 4);
      word |= 1u;
      std::memcpy(&f, &word, 4);
    }
    std::memcpy(&word, &f, 4);
    if (bit == ops::kF16) return float_to_half(f);
    if (bit == ops::kBF16) return float_to_bf16(f);
    return word;
  }
  if (bit == ops::kBool) return value != 0 || std::isnan(value) ? 1 : 0;
  const bool fits = std::isfinite(value) && std::fabs(value) < 0x1p63;
  const uint64_t v = fits ? uint64_t(int64_t(value)) : 0;
  return bit == ops::kI32 ? v & 0xffffffffu : v;
}

}  // namespace oar::sdk
