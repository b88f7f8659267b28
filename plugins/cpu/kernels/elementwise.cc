// Elementwise kernels: fill, copy, cast, unary and binary arithmetic,
// comparisons and where. One loop (map) serves them all: inputs broadcast to
// the output's shape, 16-bit floats computed in float and rounded once when
// stored, integers wrapping (arithmetic happens in the unsigned type).
#include <cmath>
#include <functional>
#include <limits>
#include <tuple>
#include <utility>

#include "kernels/kernel.h"
#include "kernels/loops.h"
#include "kernels/simd.h"
#include "kernels/vmath.h"

namespace oar::cpu {
namespace {

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<compute_t<T>>;

// The operators, grouped by the dtypes they take (the schema's groups).
enum class Op {
  // Unary, every signed dtype.
  kNeg,
  kAbs,
  kRelu,
  // Unary, floats only.
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kSin,
  kCos,
  kTanh,
  kSigmoid,
  kGelu,
  kGeluTanh,
  kSilu,
  kErf,
  kFloor,
  kCeil,
  kReciprocal,
  // Binary, every number dtype.
  kAdd,
  kSub,
  kMul,
  kMaximum,
  kMinimum,
  // Binary, floats only.
  kDiv,
  kPow,
  // Comparisons: eq and ne take bool too.
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
};

// Whether |op| has a kernel for T (keeps meaningless instantiations out).
template <Op op, typename T>
constexpr bool takes() {
  if constexpr (std::is_same_v<T, bool>) return op == Op::kEq || op == Op::kNe;
  if constexpr (kIsFloat<T>) return true;
  return !((op >= Op::kExp && op <= Op::kReciprocal) || op == Op::kDiv || op == Op::kPow);
}

// f(a, b) in the unsigned type for integers, so that overflow wraps.
template <typename C, typename F>
C wrapping(F f, C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return C(f(U(a), U(b)));
  } else {
    return f(a, b);
  }
}

// e^x: in f32 (f16 and bf16 compute in f32) vmath.h's polynomial, which the
// loops below vectorize (a libm call per element would stop them: there is
// no vector expf in Debian's aarch64 glibc); f64 takes libm's.
template <typename C>
C exp_of(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return exp_f32(x);
  } else {
    return std::exp(x);
  }
}

template <Op op, typename C>
C unary(C x) {
  constexpr C one = C(1);
  if constexpr (op == Op::kNeg) return wrapping([](auto a, auto) { return -a; }, x, x);
  if constexpr (op == Op::kAbs) return x < C(0) ? unary<Op::kNeg>(x) : x;
  if constexpr (op == Op::kRelu) return x < C(0) ? C(0) : x;  // NaN stays NaN
  if constexpr (op == Op::kExp) return exp_of(x);
  if constexpr (op == Op::kLog) return std::log(x);
  if constexpr (op == Op::kSqrt) return std::sqrt(x);
  if constexpr (op == Op::kRsqrt) return one / std::sqrt(x);
  if constexpr (op == Op::kSin) return std::sin(x);
  if constexpr (op == Op::kCos) return std::cos(x);
  if constexpr (op == Op::kTanh) return std::tanh(x);
  if constexpr (op == Op::kSigmoid) return one / (one + exp_of(-x));
  if constexpr (op == Op::kGelu) {
    if constexpr (std::is_same_v<C, float>) return gelu_f32(x);  // f16, bf16 (f32: gelu_run_f32)
    return x * C(0.5) * (one + std::erf(x * C(0.7071067811865476)));
  }
  if constexpr (op == Op::kGeluTanh) {
    if constexpr (std::is_same_v<C, float>) return gelu_tanh_f32(x);
    constexpr C k = C(0.7978845608028654);  // sqrt(2 / pi)
    return C(0.5) * x * (one + std::tanh(k * (x + C(0.044715) * x * x * x)));
  }
  if constexpr (op == Op::kSilu) return x / (one + exp_of(-x));
  if constexpr (op == Op::kErf) return std::erf(x);
  if constexpr (op == Op::kFloor) return std::floor(x);
  if constexpr (op == Op::kCeil) return std::ceil(x);
  if constexpr (op == Op::kReciprocal) return one / x;
}

template <Op op, typename C>
auto binary(C a, C b) {
  if constexpr (op == Op::kAdd) return wrapping(std::plus<>{}, a, b);
  if constexpr (op == Op::kSub) return wrapping(std::minus<>{}, a, b);
  if constexpr (op == Op::kMul) return wrapping(std::multiplies<>{}, a, b);
  if constexpr (op == Op::kMaximum) return a > b || a != a ? a : b;  // NaN wins
  if constexpr (op == Op::kMinimum) return a < b || a != a ? a : b;
  if constexpr (op == Op::kDiv) return a / b;
  if constexpr (op == Op::kPow) return std::pow(a, b);
  if constexpr (op == Op::kEq) return a == b;
  if constexpr (op == Op::kNe) return a != b;
  if constexpr (op == Op::kLt) return a < b;
  if constexpr (op == Op::kLe) return a <= b;
  if constexpr (op == Op::kGt) return a > b;
  if constexpr (op == Op::kGe) return a >= b;
}

template <typename Out, typename... In, typename F, size_t... I>
void map_runs(const Loop<1 + sizeof...(In)>& loop, F f, std::index_sequence<I...>) {
  const int64_t out_stride = loop.inner_stride(0);
  const int64_t strides[] = {loop.inner_stride(I + 1)..., 0};
  const bool contiguous = out_stride == 1 && ((strides[I] == 1) && ...);
  parallel_for_each_run(loop, [&](const int64_t* offset, int64_t n) {
    Out* y = loop.template ptr<Out>(0) + offset[0];
    const std::tuple<const In*...> x{loop.template ptr<const In>(I + 1) + offset[I + 1]...};
    if (contiguous) {  // the fast path GCC vectorises
      for (int64_t i = 0; i < n; ++i) store(y + i, f(load(std::get<I>(x) + i)...));
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      store(y + i * out_stride, f(load(std::get<I>(x) + i * strides[I])...));
    }
  });
}

// Runs y = f(x...) on the call's stream, every input broadcast to y's shape.
template <typename Out, typename... In, typename F>
void map(KernelContext& context, F f) {
  View views[1 + sizeof...(In)] = {context.outputs[0]};
  for (size_t i = 0; i < sizeof...(In); ++i) views[i + 1] = context.inputs[i];
  Loop<1 + sizeof...(In)> loop = make_loop(views);
  launch(context.call,
         [loop, f] { map_runs<Out, In...>(loop, f, std::index_sequence_for<In...>{}); });
}

template <Op op>
void unary_kernel(KernelContext& context) {
  with_dtype<kAnyDtype>(context.outputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    if constexpr (takes<op, T>()) map<T, T>(context, [](auto x) { return unary<op>(x); });
  });
}

// gelu of a run of n f32 elements (strides in elements) on the widest SIMD:
// vmath.h's polynomials, no libm call per element (std::erf and std::tanh
// stop the loop from vectorizing). f16 and bf16 take the same functions
// through unary().
OAR_CPU_WIDEST_SIMD void gelu_run_f32(const float* x, int64_t x_stride, float* y, int64_t y_stride,
                                      int64_t n, bool tanh) {
  if (x_stride == 1 && y_stride == 1) {
    if (tanh) {
      for (int64_t i = 0; i < n; ++i) y[i] = gelu_tanh_f32(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) y[i] = gelu_f32(x[i]);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    y[i * y_stride] = tanh ? gelu_tanh_f32(x[i * x_stride]) : gelu_f32(x[i * x_stride]);
  }
}

void gelu_kernel(KernelContext& context) {
  std::string approximate = context.attrs.get_string("approximate");
  oar::sdk::require(approximate == "none" || approximate == "tanh", OAR_STATUS_INVALID_ARGUMENT,
                    "gelu: approximate must be none or tanh, not " + approximate);
  const bool tanh = approximate == "tanh";
  if (context.outputs[0].dtype == dtype::f32) {
    const View views[2] = {context.outputs[0], context.inputs[0]};
    const Loop<2> loop = make_loop(views);
    launch(context.call, [loop, tanh] {
      parallel_for_each_run(loop, [&](const int64_t* offset, int64_t n) {
        gelu_run_f32(loop.ptr<const float>(1) + offset[1], loop.inner_stride(1),
                     loop.ptr<float>(0) + offset[0], loop.inner_stride(0), n, tanh);
      });
    });
    return;
  }
  (tanh ? unary_kernel<Op::kGeluTanh> : unary_kernel<Op::kGelu>)(context);
}

template <Op op>
void binary_kernel(KernelContext& context) {
  with_dtype<kAnyDtype>(context.inputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    using Out = std::conditional_t<op >= Op::kEq, bool, T>;
    if constexpr (takes<op, T>())
      map<Out, T, T>(context, [](auto a, auto b) { return binary<op>(a, b); });
  });
}

void where_kernel(KernelContext& context) {
  with_dtype<kAnyDtype>(context.outputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    map<T, bool, T, T>(context, [](int32_t c, auto a, auto b) { return c ? a : b; });
  });
}

// f64 (or an integer) to f32 rounding to odd, so that the store's rounding to
// f16 or bf16 is the one correct rounding rather than a second one.
float to_float_round_odd(double v) {
  float f = float(v);
  if (!std::isfinite(f) || double(f) == v) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if (std::fabs(double(f)) > std::fabs(v)) --bits;  // rounded away from zero: step back
  bits |= 1u;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// An integer as a double rounded to odd: exact up to 2^53, and above it the
// last bit set when bits were dropped, so that rounding it once more (to f32,
// then f16 or bf16) is still the one correct rounding of the integer.
double int_to_double_round_odd(int64_t v) {
  const uint64_t magnitude = v < 0 ? 0 - uint64_t(v) : uint64_t(v);
  int shift = 0;
  while ((magnitude >> shift) >= (uint64_t(1) << 53)) ++shift;
  uint64_t kept = magnitude >> shift;
  if (shift > 0 && (magnitude & ((uint64_t(1) << shift) - 1)) != 0) kept |= 1;
  const double d = std::ldexp(double(kept), shift);
  return v < 0 ? -d : d;
}

// Float to integer truncates toward zero. Out-of-range values saturate and
// NaN gives 0 (C++ leaves both undefined; the conformance tests avoid them).
template <typename I, typename F>
I float_to_int(F v) {
  // -2^k and 2^k (2^(k+1) unsigned), exact in every float type.
  constexpr F low = std::is_signed_v<I> ? F(std::numeric_limits<I>::min()) : F(-1);
  constexpr F high = std::is_signed_v<I> ? -F(std::numeric_limits<I>::min())
                                         : F(2) * F(std::numeric_limits<I>::max() / 2 + 1);
  if (v != v) return 0;
  if (v <= low) return std::is_signed_v<I> ? std::numeric_limits<I>::min() : I(0);
  if (v >= high) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

template <typename Out, typename In>
auto convert(compute_t<In> v) {
  constexpr bool narrow_float = std::is_same_v<Out, half> || std::is_same_v<Out, bfloat16>;
  if constexpr (narrow_float && std::is_integral_v<compute_t<In>>) {
    return to_float_round_odd(int_to_double_round_odd(int64_t(v)));
  } else if constexpr (narrow_float && !std::is_same_v<compute_t<In>, float>) {
    return to_float_round_odd(double(v));
  } else if constexpr (std::is_integral_v<Out> && !std::is_same_v<Out, bool> && kIsFloat<In>) {
    return float_to_int<Out>(v);
  } else {
    return v;
  }
}

void cast_kernel(KernelContext& context) {
  with_dtype<kAnyDtype>(context.inputs[0].dtype, [&](auto in) {
    using In = decltype(in);
    with_dtype<kAnyDtype>(context.outputs[0].dtype, [&](auto out) {
      using Out = decltype(out);
      map<Out, In>(context, [](compute_t<In> v) { return convert<Out, In>(v); });
    });
  });
}

// The value converts like a cast from f64.
void fill_kernel(KernelContext& context) {
  const double value = context.attrs.get_float("value");
  with_dtype<kAnyDtype>(context.outputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    const auto converted = convert<T, double>(value);
    map<T>(context, [converted] { return converted; });
  });
}

void copy_kernel(KernelContext& context) {
  Loop<2> loop = copy_loop(context.outputs[0], context.inputs[0]);
  const size_t element_size = context.outputs[0].element_size();
  launch(context.call, [loop, element_size] { run_copy(loop, element_size); });
}

struct Registration {
  const char* op;
  KernelBody body;
};

}  // namespace

void register_elementwise_kernels(const oar::sdk::KernelRegistrar& registrar,
                                  AllocationTable* table) {
  const Registration same[] = {
      {"fill", fill_kernel},
      {"neg", unary_kernel<Op::kNeg>},
      {"abs", unary_kernel<Op::kAbs>},
      {"relu", unary_kernel<Op::kRelu>},
      {"exp", unary_kernel<Op::kExp>},
      {"log", unary_kernel<Op::kLog>},
      {"sqrt", unary_kernel<Op::kSqrt>},
      {"rsqrt", unary_kernel<Op::kRsqrt>},
      {"sin", unary_kernel<Op::kSin>},
      {"cos", unary_kernel<Op::kCos>},
      {"tanh", unary_kernel<Op::kTanh>},
      {"sigmoid", unary_kernel<Op::kSigmoid>},
      {"gelu", gelu_kernel},
      {"silu", unary_kernel<Op::kSilu>},
      {"erf", unary_kernel<Op::kErf>},
      {"floor", unary_kernel<Op::kFloor>},
      {"ceil", unary_kernel<Op::kCeil>},
      {"reciprocal", unary_kernel<Op::kReciprocal>},
      {"add", binary_kernel<Op::kAdd>},
      {"sub", binary_kernel<Op::kSub>},
      {"mul", binary_kernel<Op::kMul>},
      {"div", binary_kernel<Op::kDiv>},
      {"maximum", binary_kernel<Op::kMaximum>},
      {"minimum", binary_kernel<Op::kMinimum>},
      {"pow", binary_kernel<Op::kPow>},
  };
  for (const Registration& r : same) {
    const ops::OpSchema& schema = *ops::find_schema(r.op);
    register_op(registrar, r.op, r.body, same_signatures(schema.dtypes, schema.inputs.size(), 1), 0,
                table);
  }
  const Registration compare[] = {
      {"eq", binary_kernel<Op::kEq>}, {"ne", binary_kernel<Op::kNe>},
      {"lt", binary_kernel<Op::kLt>}, {"le", binary_kernel<Op::kLe>},
      {"gt", binary_kernel<Op::kGt>}, {"ge", binary_kernel<Op::kGe>},
  };
  for (const Registration& r : compare) {
    std::vector<std::vector<DLDataType>> signatures;
    for (DLDataType t : ops::dtypes_in(ops::find_schema(r.op)->dtypes)) {
      signatures.push_back({t, t, dtype::boolean});
    }
    register_op(registrar, r.op, r.body, signatures, 0, table);
  }
  std::vector<std::vector<DLDataType>> casts, wheres;
  for (DLDataType in : ops::dtypes_in(ops::find_schema("cast")->dtypes)) {
    for (DLDataType out : ops::dtypes_in(ops::find_schema("cast")->dtypes))
      casts.push_back({in, out});
  }
  for (DLDataType in : ops::dtypes_in(ops::find_schema("where")->dtypes)) {
    wheres.push_back({dtype::boolean, in, in, in});
  }
  register_op(registrar, "cast", cast_kernel, casts, 0, table);
  register_op(registrar, "where", where_kernel, wheres, 0, table);
  register_op(registrar, "copy", copy_kernel,
              same_signatures(ops::find_schema("copy")->dtypes, 1, 1),
              OAR_KERNEL_FLAG_STRIDED_INPUTS, table);
}

}  // namespace oar::cpu
