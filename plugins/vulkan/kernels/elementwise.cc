// fill, copy, cast, where, unary and binary operators and comparisons: all
// one strided pass of shaders/map.comp, the operator a specialisation
// constant. And matmul_w8 (int8 weights, shaders/matmul_w8.comp).
#include <cmath>
#include <cstring>

#include "kernels/kernel.h"

namespace oar::vulkan {
namespace {

// map.comp operation codes.
int op_code(const std::string& name) {
  static const std::pair<const char*, int> codes[] = {
      {"neg", 10},   {"abs", 11}, {"relu", 12},  {"exp", 13},     {"log", 14},        {"sqrt", 15},
      {"rsqrt", 16}, {"sin", 17}, {"cos", 18},   {"tanh", 19},    {"sigmoid", 20},    {"gelu", 21},
      {"silu", 23},  {"erf", 24}, {"floor", 25}, {"ceil", 26},    {"reciprocal", 27}, {"add", 40},
      {"sub", 41},   {"mul", 42}, {"div", 43},   {"maximum", 44}, {"minimum", 45},    {"pow", 46},
      {"eq", 60},    {"ne", 61},  {"lt", 62},    {"le", 63},      {"gt", 64},         {"ge", 65}};
  for (const auto& [op, code] : codes) {
    if (name == op) return code;
  }
  throw oar::sdk::Error(OAR_STATUS_INTERNAL, "no map.comp operation for " + name);
}

std::vector<int64_t> shape_of(const TensorRef& t) { return {t.shape, t.shape + t.ndim}; }

void unary_kernel(KernelContext& c) {
  int op = op_code(c.schema.name);
  if (op == 21) {
    std::string approximate = c.attrs.get_string("approximate");
    oar::sdk::require(
        approximate == "none" || approximate == "tanh", OAR_STATUS_INVALID_ARGUMENT,
        "gelu: approximate must be \"none\" or \"tanh\", not \"" + approximate + "\"");
    if (approximate == "tanh") op = 22;
  }
  const TensorRef& y = c.outputs[0];
  std::vector<int64_t> shape = shape_of(y);
  map(c.stream, op, shape, broadcast(c.inputs[0], shape), {}, {}, as_is(y));
}

void binary_kernel(KernelContext& c) {
  const TensorRef& y = c.outputs[0];
  std::vector<int64_t> shape = shape_of(y);
  map(c.stream, op_code(c.schema.name), shape, broadcast(c.inputs[0], shape),
      broadcast(c.inputs[1], shape), {}, as_is(y));
}

void where_kernel(KernelContext& c) {
  const TensorRef& y = c.outputs[0];
  std::vector<int64_t> shape = shape_of(y);
  map(c.stream, kMapWhere, shape, broadcast(c.inputs[0], shape), broadcast(c.inputs[1], shape),
      broadcast(c.inputs[2], shape), as_is(y));
}

void copy_kernel(KernelContext& c) {
  const TensorRef& y = c.outputs[0];
  std::vector<int64_t> shape = shape_of(y);
  map(c.stream, kMapCopy, shape, as_is(c.inputs[0]), {}, {}, as_is(y));
}

void cast_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  std::vector<int64_t> shape = shape_of(y);
  bool same = shader_dtype(x.dtype) == shader_dtype(y.dtype);
  map(c.stream, same ? kMapCopy : kMapCast, shape, as_is(x), {}, {}, as_is(y));
}

// The bits of |value| stored as |t|: the host does the one rounding, the
// shader only writes them.
void fill_bits(double value, DLDataType t, int32_t* low, int32_t* high) {
  *high = 0;
  switch (shader_dtype(t)) {
    case 1:
    case 2:
    case 3: {
      float f = float(value);
      uint32_t word;
      std::memcpy(&word, &f, sizeof(word));
      if (shader_dtype(t) == 3) {
        *low = int32_t(word);
      } else if (shader_dtype(t) == 2) {
        // bf16 from f32 rounded to odd (toward zero, last bit set when
        // inexact): the second rounding is then the one correct rounding of
        // the double, not a double rounding.
        if (std::isfinite(f) && double(f) != value) {
          if (std::fabs(double(f)) > std::fabs(value)) --word;
          word |= 1u;
        }
        if ((word & 0x7fffffffu) > 0x7f800000u) {
          *low = int32_t((word >> 16) | 0x40u);
        } else {
          word += 0x7fffu + ((word >> 16) & 1u);
          *low = int32_t(word >> 16);
        }
      } else {
        // f16: round the double directly (no double rounding through f32).
        double magnitude = std::fabs(value);
        uint32_t sign = std::signbit(value) ? 0x8000u : 0u;
        uint32_t bits;
        if (std::isnan(value)) {
          bits = 0x7e00u;
        } else if (magnitude >= 65520.0) {
          bits = 0x7c00u;
        } else if (magnitude < std::ldexp(1.0, -14)) {
          bits = uint32_t(std::nearbyint(magnitude * std::ldexp(1.0, 24)));  // subnormal
        } else {
          int exponent;
          double mantissa = std::frexp(magnitude, &exponent);  // [0.5, 1)
          double scaled = std::nearbyint(mantissa * 2048.0);   // 11 bits, ties to even
          if (scaled >= 2048.0) {
            scaled /= 2.0;
            ++exponent;
          }
          bits = uint32_t(exponent + 14) << 10 | (uint32_t(scaled) & 0x3ffu);
          if (exponent + 14 >= 31) bits = 0x7c00u;
        }
        *low = int32_t(sign | bits);
      }
      return;
    }
    case 4:
    case 5:
    case 7:  // the narrow integers: the shader keeps the low bits
    case 8:
    case 9: {
      // Truncate toward zero; the range is half-open, [-2^63, 2^63), so the
      // most negative value of every signed type (INT32_MIN, INT64_MIN, exact
      // as doubles) is kept. NaN and values outside give 0 (unspecified).
      double truncated = std::trunc(value);
      int64_t v = truncated >= -0x1p63 && truncated < 0x1p63 ? int64_t(truncated) : 0;
      *low = int32_t(uint32_t(uint64_t(v)));
      *high = int32_t(uint32_t(uint64_t(v) >> 32));
      return;
    }
    default:
      *low = value != 0 || std::isnan(value) ? 1 : 0;
  }
}

void fill_kernel(KernelContext& c) {
  const TensorRef& y = c.outputs[0];
  int32_t low, high;
  fill_bits(c.attrs.get_float("value"), y.dtype, &low, &high);
  map(c.stream, kMapFill, shape_of(y), {}, {}, {}, as_is(y), low, high);
}

// matmul_w8 (matmul_w8.comp): y[r, n] = scale[n] * sum_k x[r, k] * weight[n,
// k], one invocation per output; the inputs are contiguous.
void matmul_w8_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& w = c.inputs[1];
  const TensorRef& s = c.inputs[2];
  const TensorRef& y = c.outputs[0];
  int64_t outputs = y.numel();
  if (outputs == 0) return;
  int64_t n = w.shape[0], k = w.shape[1];
  require_loop_budget(c, uint64_t(outputs), uint64_t(k), "the inner dimension K");
  Params p;
  p.add(outputs);
  p.add(n);
  p.add(k);
  p.add(x.offset);
  p.add(w.offset);
  p.add(s.offset);
  p.add(y.offset);
  dispatch(c.stream, module_name("w8matmul", {y.dtype}), 0,
           {{0, x.buffer()}, {1, w.buffer()}, {2, s.buffer()}, {3, y.buffer()}}, p.data(), p.size(),
           uint64_t(outputs));
}

}  // namespace

void register_elementwise_kernels(const oar::sdk::KernelRegistrar& registrar) {
  for (const char* op : {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
                         "sigmoid", "relu", "gelu", "silu", "erf", "floor", "ceil", "reciprocal"}) {
    register_op(registrar, op, unary_kernel, same_signatures(ops::find_schema(op)->dtypes, 1, 1));
  }
  for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum", "pow"}) {
    register_op(registrar, op, binary_kernel, same_signatures(ops::find_schema(op)->dtypes, 2, 1));
  }
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    std::vector<std::vector<DLDataType>> signatures;
    for (DLDataType t : ops::dtypes_in(ops::find_schema(op)->dtypes & kSupported))
      signatures.push_back({t, t, dtype::boolean});
    register_op(registrar, op, binary_kernel, signatures);
  }
  std::vector<std::vector<DLDataType>> casts, wheres;
  const uint32_t cast_dtypes = ops::find_schema("cast")->dtypes & kSupported;
  for (DLDataType in : ops::dtypes_in(cast_dtypes)) {
    for (DLDataType out : ops::dtypes_in(cast_dtypes)) casts.push_back({in, out});
  }
  for (DLDataType in : ops::dtypes_in(ops::find_schema("where")->dtypes & kSupported)) {
    wheres.push_back({dtype::boolean, in, in, in});
  }
  std::vector<std::vector<DLDataType>> w8;
  for (DLDataType t : ops::dtypes_in(ops::find_schema("matmul_w8")->dtypes & kSupported)) {
    w8.push_back({t, dtype::i8, t, t});
  }
  register_op(registrar, "matmul_w8", matmul_w8_kernel, w8);
  register_op(registrar, "cast", cast_kernel, casts);
  register_op(registrar, "where", where_kernel, wheres);
  register_op(registrar, "copy", copy_kernel,
              same_signatures(ops::find_schema("copy")->dtypes, 1, 1),
              OAR_KERNEL_FLAG_STRIDED_INPUTS);
  register_op(registrar, "fill", fill_kernel,
              same_signatures(ops::find_schema("fill")->dtypes, 0, 1));
}

}  // namespace oar::vulkan
