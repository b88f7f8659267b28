// Host side of the elementwise kernels (kernels/elementwise.cl): unary,
// binary with NumPy broadcasting, comparisons, where, cast and fill, and
// matmul_w8 (int8 weights).
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/kernel.h"

namespace oar::opencl {
namespace {

// |input| seen through the output's shape: aligned at the last dimension, a
// size-1 dimension stretched with stride 0.
void broadcast_strides(const View& input, const View& output, int64_t* out) {
  int shift = output.ndim - input.ndim;
  for (int d = 0; d < output.ndim; ++d) {
    int i = d - shift;
    out[d] = (i < 0 || input.shape[i] == 1) ? 0 : input.strides[i];
  }
}

// The output and |count| inputs of |context| as a geo_t.
Geo broadcast_geo(const KernelContext& context, size_t first_input, size_t count) {
  const View& y = context.outputs[0];
  Geo g;
  g.rank = y.ndim;
  g.numel = y.numel();
  for (int d = 0; d < y.ndim; ++d) {
    g.shape[d] = y.shape[d];
    g.strides[0][d] = y.strides[d];
  }
  g.offsets[0] = int64_t(y.offset);
  for (size_t i = 0; i < count; ++i) {
    const View& x = context.inputs[first_input + i];
    broadcast_strides(x, y, g.strides[i + 1]);
    g.offsets[i + 1] = int64_t(x.offset);
  }
  return g;
}

bool same_shape(const View& a, const View& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.shape[d] != b.shape[d]) return false;
  }
  return true;
}

// The kernel of kernels/elementwise.cl for each unary operator but gelu
// (which depends on its attribute), resolved once at registration.
const KernelRef* const* unary_kernels(const std::string& op) {
  static const char* const kNames[][2] = {{"neg", "u_neg"},   {"abs", "u_abs"},
                                          {"exp", "u_exp"},   {"log", "u_log"},
                                          {"sqrt", "u_sqrt"}, {"rsqrt", "u_rsqrt"},
                                          {"sin", "u_sin"},   {"cos", "u_cos"},
                                          {"tanh", "u_tanh"}, {"sigmoid", "u_sigmoid"},
                                          {"relu", "u_relu"}, {"silu", "u_silu"},
                                          {"erf", "u_erf"},   {"floor", "u_floor"},
                                          {"ceil", "u_ceil"}, {"reciprocal", "u_reciprocal"}};
  constexpr size_t kCount = sizeof(kNames) / sizeof(kNames[0]);
  // One entry per operator, each a one-element array for KernelContext::kernels.
  static const auto* refs = [] {
    auto* all = new std::vector<std::unique_ptr<KernelRef>>();  // lives as long as the process
    auto* pointers = new const KernelRef*[kCount];
    for (size_t i = 0; i < kCount; ++i) {
      all->push_back(std::make_unique<KernelRef>(kNames[i][1]));
      pointers[i] = all->back().get();
    }
    return pointers;
  }();
  for (size_t i = 0; i < kCount; ++i) {
    if (op == kNames[i][0]) return &refs[i];
  }
  return nullptr;  // gelu, or an operator unary_body refuses
}

// gelu's kernel for its attribute (the unary operators without a KernelRef).
const char* gelu_kernel(const KernelContext& context) {
  std::string op = context.schema.name;
  if (op != "gelu") {
    throw oar::sdk::Error(OAR_STATUS_INTERNAL, "opencl: no unary kernel for " + op);
  }
  std::string approximate = context.attrs.get_string("approximate");
  if (approximate == "tanh") return "u_gelu_tanh";
  oar::sdk::require(approximate == "none", OAR_STATUS_INVALID_ARGUMENT,
                    "gelu: approximate must be \"none\" or \"tanh\", not \"" + approximate + "\"");
  return "u_gelu";
}

void unary_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  int64_t n = y.numel();
  cl_ulong xo = x.offset;
  cl_ulong yo = y.offset;
  if (context.kernels != nullptr) {
    context.launch(Source::kElementwise, x.dtype, *context.kernels[0], n,
                   {x.memory, xo, y.memory, yo, n});
    return;
  }
  context.launch(Source::kElementwise, x.dtype, gelu_kernel(context), n,
                 {x.memory, xo, y.memory, yo, n});
}

// Binary operators and comparisons: "b_add_c" (contiguous, same shapes) and
// "b_add_s" (strided, broadcast), "c_lt_c", ...; made once at registration.
const KernelRef* const* binary_kernels(const ops::OpSchema& schema) {
  std::string base =
      std::string(std::string(schema.category) == "compare" ? "c_" : "b_") + schema.name;
  // Registration may run once per plugin instance: one pair per operator.
  static std::mutex mutex;
  static auto* made = new std::unordered_map<std::string, const KernelRef**>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = made->find(base);
  if (it != made->end()) return it->second;
  auto* names = new std::string[2]{base + "_c", base + "_s"};  // lives as long as the process
  auto** pair =
      new const KernelRef* [2] { new KernelRef(names[0].c_str()), new KernelRef(names[1].c_str()) };
  made->emplace(base, pair);
  return pair;
}

void binary_body(KernelContext& context) {
  const View& a = context.inputs[0];
  const View& b = context.inputs[1];
  const View& y = context.outputs[0];
  int64_t n = y.numel();
  if (n == 0) return;
  if (same_shape(a, y) && same_shape(b, y) && a.contiguous() && b.contiguous()) {
    cl_ulong ao = a.offset;
    cl_ulong bo = b.offset;
    cl_ulong yo = y.offset;
    context.launch(Source::kElementwise, a.dtype, *context.kernels[0], n,
                   {a.memory, ao, b.memory, bo, y.memory, yo, n});
    return;
  }
  Geo g = broadcast_geo(context, 0, 2);
  context.launch(Source::kElementwise, a.dtype, *context.kernels[1], n,
                 {a.memory, b.memory, y.memory, g});
}

void where_body(KernelContext& context) {
  const View& y = context.outputs[0];
  int64_t n = y.numel();
  if (n == 0) return;
  Geo g = broadcast_geo(context, 0, 3);
  context.launch(
      Source::kElementwise, y.dtype, "where_s", n,
      {context.inputs[0].memory, context.inputs[1].memory, context.inputs[2].memory, y.memory, g});
}

void cast_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  if (y.numel() == 0) return;
  if (ops::dtype_bit(x.dtype) == ops::kBool && ops::dtype_bit(y.dtype) == ops::kBool) {
    // bool to bool is x != 0, not a bit copy: a stored nonzero is true.
  } else if (x.dtype.code == y.dtype.code && x.dtype.bits == y.dtype.bits) {
    copy_view(context, x, y);  // same dtype: bit-exact
    return;
  }
  int64_t n = y.numel();
  cl_ulong xo = x.offset;
  cl_ulong yo = y.offset;
  std::string name = std::string("cast_to_") + dtype_tag(y.dtype);
  context.launch(Source::kElementwise, x.dtype, name.c_str(), n, {x.memory, xo, y.memory, yo, n});
}

// y[..., n] = scale[n] * sum_k x[..., k] * weight[n, k]: one work-item per
// output (inputs are contiguous).
void matmul_w8_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& w = context.inputs[1];
  const View& s = context.inputs[2];
  const View& y = context.outputs[0];
  int64_t total = y.numel();
  if (total == 0) return;
  int64_t n_out = w.shape[0], k_len = w.shape[1];
  cl_ulong xo = x.offset, wo = w.offset, so = s.offset, yo = y.offset;
  context.launch(Source::kElementwise, x.dtype, "matmul_w8", total,
                 {x.memory, xo, w.memory, wo, s.memory, so, y.memory, yo, n_out, k_len, total});
}

// ---- fill: the value converted on the host, then clEnqueueFillBuffer ------

float bits_to_float(uint32_t word) {
  float value;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}

uint32_t float_bits(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  return word;
}

// |value| rounded toward zero to float with the last bit set when inexact:
// rounding that once more to a narrower format rounds |value| correctly.
float round_to_odd(double value) {
  if (std::isnan(value) || std::isinf(value)) return float(value);
  float f = float(value);
  if (std::fabs(double(f)) > std::fabs(value)) {
    f = std::nextafter(f, 0.0f);  // round toward zero
  }
  if (double(f) != value) f = bits_to_float(float_bits(f) | 1u);
  return f;
}

uint16_t float_to_half(float value) {  // round to nearest even
  uint32_t word = float_bits(value);
  uint16_t sign = uint16_t((word >> 16) & 0x8000u);
  uint32_t magnitude = word & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return uint16_t(sign | 0x7e00u);
  if (magnitude >= 0x477ff000u) return uint16_t(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {
    if (magnitude < 0x33000000u) return sign;
    uint32_t exponent = magnitude >> 23;
    uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exponent;
    uint32_t half_mantissa = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half_mantissa & 1u))) ++half_mantissa;
    return uint16_t(sign | half_mantissa);
  }
  uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

uint16_t float_to_bf16(float value) {  // round to nearest even; NaN stays NaN
  uint32_t word = float_bits(value);
  if ((word & 0x7fffffffu) > 0x7f800000u) return uint16_t((word >> 16) | 0x40);
  word += 0x7fffu + ((word >> 16) & 1u);
  return uint16_t(word >> 16);
}

// Integers truncate toward zero; NaN, inf and out-of-range values give an
// unspecified value (docs/ops.md), here 0, without undefined behaviour.
template <typename I>
I to_integer(double value) {
  double truncated = std::trunc(value);
  if (!(truncated >= -9.2233720368547758e18 && truncated < 9.2233720368547758e18)) return 0;
  return static_cast<I>(static_cast<int64_t>(truncated));
}

void fill_body(KernelContext& context) {
  const View& y = context.outputs[0];
  int64_t n = y.numel();
  if (n == 0) return;
  double value = context.attrs.get_float("value");
  uint8_t pattern[8] = {};
  size_t size = y.element_size();
  switch (ops::dtype_bit(y.dtype)) {
    case ops::kF16: {
      uint16_t v = float_to_half(round_to_odd(value));
      std::memcpy(pattern, &v, 2);
      break;
    }
    case ops::kBF16: {
      uint16_t v = float_to_bf16(round_to_odd(value));
      std::memcpy(pattern, &v, 2);
      break;
    }
    case ops::kF32: {
      float v = float(value);
      std::memcpy(pattern, &v, 4);
      break;
    }
    case ops::kF64:
      std::memcpy(pattern, &value, 8);
      break;
    case ops::kI32: {
      int32_t v = to_integer<int32_t>(value);
      std::memcpy(pattern, &v, 4);
      break;
    }
    case ops::kI64: {
      int64_t v = to_integer<int64_t>(value);
      std::memcpy(pattern, &v, 8);
      break;
    }
    case ops::kI8:
    case ops::kU8: {
      // The low bits of the truncated value (in range: the value itself).
      uint8_t v = uint8_t(uint64_t(to_integer<int64_t>(value)));
      std::memcpy(pattern, &v, 1);
      break;
    }
    case ops::kI16: {
      uint16_t v = uint16_t(uint64_t(to_integer<int64_t>(value)));
      std::memcpy(pattern, &v, 2);
      break;
    }
    default:
      pattern[0] = value != 0;  // NaN != 0 is true, as the spec wants
      break;
  }
  context.fill(y.memory, y.offset, pattern, size, uint64_t(n) * size);
}

}  // namespace

void register_elementwise_kernels(const oar::sdk::KernelRegistrar& registrar) {
  for (const ops::OpSchema& schema : ops::schemas()) {
    std::string category = schema.category;
    if (category == "unary") {
      register_op(registrar, schema.name, unary_body, same_signatures(schema.dtypes, 1, 1), 0,
                  unary_kernels(schema.name));
    } else if (category == "binary" && schema.rule == ops::DtypeRule::kSame) {
      register_op(registrar, schema.name, binary_body, same_signatures(schema.dtypes, 2, 1), 0,
                  binary_kernels(schema));
    } else if (category == "compare") {
      std::vector<std::vector<DLDataType>> signatures;
      for (DLDataType t : ops::dtypes_in(schema.dtypes)) {
        signatures.push_back({t, t, dtype::boolean});
      }
      register_op(registrar, schema.name, binary_body, signatures, 0, binary_kernels(schema));
    }
  }
  std::vector<std::vector<DLDataType>> casts, wheres;
  const uint32_t cast_dtypes = ops::find_schema("cast")->dtypes;
  for (DLDataType in : ops::dtypes_in(cast_dtypes)) {
    for (DLDataType out : ops::dtypes_in(cast_dtypes)) casts.push_back({in, out});
  }
  for (DLDataType in : ops::dtypes_in(ops::find_schema("where")->dtypes)) {
    wheres.push_back({dtype::boolean, in, in, in});
  }
  std::vector<std::vector<DLDataType>> w8;
  for (DLDataType t : ops::dtypes_in(ops::find_schema("matmul_w8")->dtypes)) {
    w8.push_back({t, dtype::i8, t, t});
  }
  register_op(registrar, "matmul_w8", matmul_w8_body, w8);
  register_op(registrar, "cast", cast_body, casts);
  register_op(registrar, "where", where_body, wheres);
  register_op(registrar, "fill", fill_body,
              same_signatures(ops::find_schema("fill")->dtypes, 0, 1));
}

}  // namespace oar::opencl
