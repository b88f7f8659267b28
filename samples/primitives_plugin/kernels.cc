// A first bring-up: kernels for the 45 primitive operators only
// (docs/ops.md, "Primitives and decompositions"); OAR's core runs every other
// operator through its decomposition into these. Plain loops on the SDK's
// helpers, as in samples/vendor_plugin: each body checks what it needs on the
// calling thread, copies the tensor views into the work it queues on the
// call's stream, and the work runs on that stream's worker. The helpers and
// the creation, layout, argmax and matmul kernels are the vendor sample's
// (samples/vendor_plugin/common_kernels.cc).
//
// Numerics: floats are computed in double (f16/bf16 elementwise in float) and
// rounded once when stored; integers wrap.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "common_kernels.h"

namespace sample {
namespace {

constexpr uint32_t kInts = ops::kI32 | ops::kI64;
constexpr uint32_t kSmall = ops::kSmallInts;

// --- what these kernels share ------------------------------------------------------

// Y = f(a, b) with a and b of type T and y of type Y (comparisons).
template <typename Y, typename T, typename F>
void map_mixed(const TensorView (&views)[3], F f) {
  const sdk::Loop<3> loop = sdk::make_loop(views);
  sdk::for_each_run(loop, [&](const int64_t* offset, int64_t n) {
    Y* y = loop.template ptr<Y>(0) + offset[0];
    const T* a = loop.template ptr<T>(1) + offset[1];
    const T* b = loop.template ptr<T>(2) + offset[2];
    for (int64_t i = 0; i < n; ++i) {
      sdk::store(y + i * loop.inner_stride(0), f(sdk::load(a + i * loop.inner_stride(1)),
                                                 sdk::load(b + i * loop.inner_stride(2))));
    }
  });
}

// --- creation and moves -----------------------------------------------------------

void arange(const KernelCall& call) {
  const TensorView y = output(call);
  const double start = call.attrs.get_float("start"), step = call.attrs.get_float("step");
  sdk::with_dtype<kNumbers>(y.dtype, [&](auto type) {
    using T = decltype(type);
    if constexpr (std::is_integral_v<T>) {
      auto whole = [](double v) { return std::floor(v) == v && std::fabs(v) < 0x1p63; };
      sdk::require(whole(start) && whole(step), OAR_STATUS_INVALID_ARGUMENT,
                   "arange: integer start and step needed for " + oar::dtype_name(y.dtype));
      const uint64_t first = uint64_t(int64_t(start)), by = uint64_t(int64_t(step));
      launch(call, [y, first, by] {
        for (int64_t i = 0; i < y.numel(); ++i) put<T>(y, i, T(first + uint64_t(i) * by));
      });
    } else {
      launch(call, [y, start, step] {
        for (int64_t i = 0; i < y.numel(); ++i) put<T>(y, i, start + double(i) * step);
      });
    }
  });
}

void where(const KernelCall& call) {
  const TensorView views[4] = {output(call), input(call, 0), input(call, 1), input(call, 2)};
  launch(call, [views] {
    const sdk::Loop<4> loop = sdk::make_loop(views);
    const int64_t size = int64_t(views[0].element_size());
    sdk::for_each_run(loop, [&](const int64_t* at, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const bool c = loop.data[1][at[1] + i * loop.inner_stride(1)] != 0;
        const int k = c ? 2 : 3;
        std::memcpy(loop.data[0] + (at[0] + i * loop.inner_stride(0)) * size,
                    loop.data[k] + (at[k] + i * loop.inner_stride(k)) * size, size_t(size));
      }
    });
  });
}

// --- indexing -------------------------------------------------------------------------

// Every position p of |index| (contiguous, x's rank) and the offset in |x| of
// p with p[axis] replaced by the index value, checked against x.shape[axis].
template <typename I, typename F>
void for_each_index(const TensorView& x, const TensorView& index, int axis, const char* op, F f) {
  const int64_t bound = x.shape[axis];
  for (int64_t p = 0; p < index.numel(); ++p) {
    const int64_t k = int64_t(sdk::load(index.ptr<I>() + p));
    if (k < 0 || k >= bound) {
      throw sdk::Error(OAR_STATUS_OUT_OF_RANGE, std::string(op) + ": index " + std::to_string(k) +
                                                    " out of range [0, " + std::to_string(bound) +
                                                    ")");
    }
    int64_t rest = p, at = 0;
    for (int d = index.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % index.shape[d];
      rest /= index.shape[d];
      at += (d == axis ? k : c) * x.strides[d];
    }
    f(p, at);
  }
}

void gather(const KernelCall& call) {
  const TensorView x = input(call, 0), index = input(call, 1), y = output(call);
  const int axis = sdk::normalize_axis(call.attrs.get_int("axis"), x.ndim, "gather");
  sdk::with_dtype<kInts>(index.dtype, [&](auto index_type) {
    using I = decltype(index_type);
    launch(call, [x, index, y, axis] {
      const size_t size = x.element_size();
      for_each_index<I>(x, index, axis, "gather", [&](int64_t p, int64_t at) {
        std::memcpy(y.data + size_t(p) * size, x.data + size_t(at) * size, size);
      });
    });
  });
}

template <bool kAdd>
void scatter(const KernelCall& call) {
  const TensorView x = input(call, 0), index = input(call, 1), src = input(call, 2);
  const TensorView y = output(call);
  const char* name = kAdd ? "scatter_add" : "scatter";
  const int axis = sdk::normalize_axis(call.attrs.get_int("axis"), x.ndim, name);
  sdk::with_dtype<ops::kAll>(x.dtype, [&](auto type) {
    sdk::with_dtype<kInts>(index.dtype, [&](auto index_type) {
      using T = decltype(type);
      using I = decltype(index_type);
      launch(call, [x, index, src, y, axis, name] {
        move_elements(y, x);
        // Row-major order visits each line's positions in increasing p[axis].
        for_each_index<I>(y, index, axis, name, [&](int64_t p, int64_t at) {
          if constexpr (kAdd && !std::is_same_v<T, bool>) {
            const auto a = sdk::load(y.ptr<T>() + at), b = sdk::load(src.ptr<T>() + p);
            using C = decltype(a);
            if constexpr (std::is_integral_v<C>) {
              put<T>(y, at, wrap(a, b, [](auto u, auto v) { return u + v; }));
            } else {
              put<T>(y, at, a + b);
            }
          } else {
            put<T>(y, at, sdk::load(src.ptr<T>() + p));
          }
        });
      });
    });
  });
}

// --- elementwise ----------------------------------------------------------------------

enum class Op { kNeg, kAbs, kExp, kLog, kSqrt, kSin, kCos, kTanh, kErf, kFloor, kCeil };

template <Op U>
void unary(const KernelCall& call) {
  const TensorView views[2] = {output(call), input(call, 0)};
  sdk::with_dtype<kNumbers | kSmall>(views[0].dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [views] {
      sdk::map_elements<T>(views, [](auto x) -> decltype(x) {
        using C = decltype(x);
        if constexpr (std::is_integral_v<C>) {
          if constexpr (U == Op::kNeg) return wrap(C(0), x, [](auto a, auto b) { return a - b; });
          if constexpr (U == Op::kAbs) return x < 0 ? wrap(C(0), x, std::minus<>()) : x;
          return x;
        } else {
          const double v = x;
          switch (U) {
            case Op::kNeg:
              return -x;
            case Op::kAbs:
              return std::fabs(x);
            case Op::kExp:
              return C(std::exp(v));
            case Op::kLog:
              return C(std::log(v));
            case Op::kSqrt:
              return C(std::sqrt(v));
            case Op::kSin:
              return C(std::sin(v));
            case Op::kCos:
              return C(std::cos(v));
            case Op::kTanh:
              return C(std::tanh(v));
            case Op::kErf:
              return C(std::erf(v));
            case Op::kFloor:
              return std::floor(x);
            case Op::kCeil:
              return std::ceil(x);
          }
          return x;
        }
      });
    });
  });
}

enum class Bin { kAdd, kSub, kMul, kDiv, kMax, kMin, kPow, kAnd, kOr, kXor };

template <Bin B>
void binary(const KernelCall& call) {
  const TensorView views[3] = {output(call), input(call, 0), input(call, 1)};
  sdk::with_dtype<ops::kAll | kSmall>(views[0].dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [views] {
      sdk::map_elements<T>(views, [](auto a, auto b) -> decltype(a) {
        using C = decltype(a);
        if constexpr (B == Bin::kMax || B == Bin::kMin) {
          if (a != a) return a;  // NaN wins
          if (b != b) return b;
          return (B == Bin::kMax ? a < b : b < a) ? b : a;
        } else if constexpr (std::is_integral_v<C>) {
          if constexpr (B == Bin::kAdd) return wrap(a, b, std::plus<>());
          if constexpr (B == Bin::kSub) return wrap(a, b, std::minus<>());
          if constexpr (B == Bin::kMul) return wrap(a, b, std::multiplies<>());
          if constexpr (B == Bin::kAnd) return a & b;
          if constexpr (B == Bin::kOr) return a | b;
          if constexpr (B == Bin::kXor) return a ^ b;
          return a;
        } else {  // IEEE's own operations (f16/bf16 in float: rounded once at the store)
          if constexpr (B == Bin::kAdd) return a + b;
          if constexpr (B == Bin::kSub) return a - b;
          if constexpr (B == Bin::kMul) return a * b;
          if constexpr (B == Bin::kDiv) return a / b;
          if constexpr (B == Bin::kPow) return C(std::pow(double(a), double(b)));
          return a;
        }
      });
    });
  });
}

enum class Cmp { kEq, kLt, kLe };

template <Cmp K>
void compare(const KernelCall& call) {
  const TensorView views[3] = {output(call), input(call, 0), input(call, 1)};
  sdk::with_dtype<ops::kAll | kSmall>(views[1].dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [views] {
      map_mixed<bool, T>(views, [](auto a, auto b) {
        if constexpr (K == Cmp::kEq) return a == b;
        if constexpr (K == Cmp::kLt) return a < b;
        return a <= b;
      });
    });
  });
}

// --- reductions, scans, order -------------------------------------------------------------

enum class Red { kSum, kProd, kMax, kMin };

template <Red R>
void reduce(const KernelCall& call) {
  const TensorView x = input(call, 0), y = output(call);
  std::vector<bool> reduced(size_t(std::max(x.ndim, 1)), false);
  const std::vector<int64_t> axes = call.attrs.get_ints("axes");
  for (int64_t a : axes) reduced[size_t(sdk::normalize_axis(a, x.ndim, "reduce"))] = true;
  if (axes.empty()) std::fill(reduced.begin(), reduced.end(), true);
  std::vector<int64_t> out_stride(size_t(std::max(x.ndim, 1)), 0);
  int64_t stride = 1;
  for (int d = x.ndim - 1; d >= 0; --d) {
    if (reduced[size_t(d)]) {
      sdk::require(R == Red::kSum || R == Red::kProd || x.shape[d] > 0, OAR_STATUS_INVALID_ARGUMENT,
                   "max/min over an empty axis has no value");
    } else {
      out_stride[size_t(d)] = stride;
      stride *= x.shape[d];
    }
  }
  sdk::with_dtype<kNumbers>(x.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [x, y, out_stride] {
      using W = wide_t<T>;
      using A = std::conditional_t<std::is_integral_v<W>, uint64_t, double>;  // ints wrap
      const A start = R == Red::kProd ? A(1) : A(0);
      std::vector<A> acc(size_t(y.numel()), start);
      std::vector<bool> seen(size_t(y.numel()), false);
      for (int64_t i = 0; i < x.numel(); ++i) {
        int64_t rest = i, at = 0;
        for (int d = x.ndim - 1; d >= 0; --d) {
          at += rest % x.shape[d] * out_stride[size_t(d)];
          rest /= x.shape[d];
        }
        A& a = acc[size_t(at)];
        const W v = get<T>(x, i);
        if constexpr (R == Red::kSum) a += A(v);
        if constexpr (R == Red::kProd) a *= A(v);
        if constexpr (R == Red::kMax || R == Red::kMin) {
          const A value = A(v);
          if (!seen[size_t(at)] || value != value) {
            a = value;
          } else if (a == a) {
            if constexpr (std::is_integral_v<W>) {
              const W now = W(a);
              a = A((R == Red::kMax ? v > now : v < now) ? v : now);
            } else {
              a = (R == Red::kMax ? value > a : value < a) ? value : a;
            }
          }
          seen[size_t(at)] = true;
        }
      }
      for (int64_t j = 0; j < y.numel(); ++j) {
        if constexpr (std::is_integral_v<W>) {
          put<T>(y, j, W(acc[size_t(j)]));
        } else {
          put<T>(y, j, acc[size_t(j)]);
        }
      }
    });
  });
}

template <bool kProd>
void scan(const KernelCall& call) {
  const TensorView x = input(call, 0), y = output(call);
  const int axis =
      x.ndim == 0 ? 0 : sdk::normalize_axis(call.attrs.get_int("axis"), x.ndim, "scan");
  const bool exclusive = call.attrs.get_bool("exclusive"), reverse = call.attrs.get_bool("reverse");
  const Rows r = x.ndim == 0 ? Rows{} : rows_of(x, axis);
  sdk::with_dtype<kNumbers>(x.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [x, y, r, exclusive, reverse] {
      using W = wide_t<T>;
      using A = std::conditional_t<std::is_integral_v<W>, uint64_t, double>;
      for (int64_t o = 0; o < r.outer; ++o) {
        for (int64_t in = 0; in < r.inner; ++in) {
          A acc = kProd ? A(1) : A(0);
          for (int64_t step = 0; step < r.extent; ++step) {
            const int64_t k = reverse ? r.extent - 1 - step : step;
            const int64_t at = (o * r.extent + k) * r.inner + in;
            const A v = A(get<T>(x, at));
            if (!exclusive) acc = kProd ? acc * v : acc + v;
            if constexpr (std::is_integral_v<W>) {
              put<T>(y, at, W(acc));
            } else {
              put<T>(y, at, acc);
            }
            if (exclusive) acc = kProd ? acc * v : acc + v;
          }
        }
      }
    });
  });
}

// Stable; NaN above every number, in both directions.
void argsort(const KernelCall& call) {
  const TensorView x = input(call, 0), y = output(call);
  const int axis =
      x.ndim == 0 ? 0 : sdk::normalize_axis(call.attrs.get_int("axis"), x.ndim, "argsort");
  const bool descending = call.attrs.get_bool("descending");
  const Rows r = x.ndim == 0 ? Rows{} : rows_of(x, axis);
  sdk::with_dtype<kNumbers>(x.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [x, y, r, descending] {
      std::vector<int64_t> order(size_t(r.extent));
      for (int64_t o = 0; o < r.outer; ++o) {
        for (int64_t in = 0; in < r.inner; ++in) {
          const int64_t base = o * r.extent * r.inner + in;
          auto less = [&](int64_t i, int64_t j) {
            const auto a = get<T>(x, base + i * r.inner), b = get<T>(x, base + j * r.inner);
            if (a != a) return false;
            return b != b || a < b;
          };
          std::iota(order.begin(), order.end(), 0);
          if (descending) {
            std::stable_sort(order.begin(), order.end(),
                             [&](int64_t i, int64_t j) { return less(j, i); });
          } else {
            std::stable_sort(order.begin(), order.end(), less);
          }
          for (int64_t k = 0; k < r.extent; ++k)
            put<int64_t>(y, base + k * r.inner, order[size_t(k)]);
        }
      }
    });
  });
}

}  // namespace

void register_kernels(const oar_kernel_registrar_t* registrar, sdk::KernelTable& table,
                      const sdk::AllocationTable& allocations) {
  const sdk::KernelRegistrar r(registrar);
  auto add = [&](const char* op, sdk::KernelBody body, uint32_t dtypes, uint32_t flags = 0) {
    table.add(r, op, body, dtypes, flags, const_cast<sdk::AllocationTable*>(&allocations));
  };
  // Creation and moves.
  add("fill", &fill, kAll);
  add("arange", &arange, kNumbers);
  add("copy", &copy, kAll, OAR_KERNEL_FLAG_STRIDED_INPUTS);
  add("cast", &cast, kAll);
  add("transpose", &transpose, kAll);
  add("concat", &concat, kAll);
  add("slice", &slice, kAll);
  add("where", &where, kAll);
  // Indexing.
  add("gather", &gather, kAll);
  add("scatter", &scatter<false>, ops::kAll);
  add("scatter_add", &scatter<true>, kNumbers);
  // Unary.
  add("neg", &unary<Op::kNeg>, kNumbers | kSmall);
  add("abs", &unary<Op::kAbs>, kNumbers | kSmall);
  add("exp", &unary<Op::kExp>, kFloats);
  add("log", &unary<Op::kLog>, kFloats);
  add("sqrt", &unary<Op::kSqrt>, kFloats);
  add("sin", &unary<Op::kSin>, kFloats);
  add("cos", &unary<Op::kCos>, kFloats);
  add("tanh", &unary<Op::kTanh>, kFloats);
  add("erf", &unary<Op::kErf>, kFloats);
  add("floor", &unary<Op::kFloor>, kFloats);
  add("ceil", &unary<Op::kCeil>, kFloats);
  // Binary.
  add("add", &binary<Bin::kAdd>, kNumbers | kSmall);
  add("sub", &binary<Bin::kSub>, kNumbers | kSmall);
  add("mul", &binary<Bin::kMul>, kNumbers | kSmall);
  add("div", &binary<Bin::kDiv>, kFloats);
  add("maximum", &binary<Bin::kMax>, kNumbers | kSmall);
  add("minimum", &binary<Bin::kMin>, kNumbers | kSmall);
  add("pow", &binary<Bin::kPow>, kFloats);
  // Compare, bits.
  add("eq", &compare<Cmp::kEq>, kAll);
  add("lt", &compare<Cmp::kLt>, kNumbers | kSmall);
  add("le", &compare<Cmp::kLe>, kNumbers | kSmall);
  add("bitwise_and", &binary<Bin::kAnd>, kInts | ops::kBool);
  add("bitwise_or", &binary<Bin::kOr>, kInts | ops::kBool);
  add("bitwise_xor", &binary<Bin::kXor>, kInts | ops::kBool);
  // Reductions, scans, order.
  add("sum", &reduce<Red::kSum>, kNumbers);
  add("prod", &reduce<Red::kProd>, kNumbers);
  add("max", &reduce<Red::kMax>, kNumbers);
  add("min", &reduce<Red::kMin>, kNumbers);
  add("argmax", &argmax, kNumbers);
  add("argmin", &argmin, kNumbers);
  add("cumsum", &scan<false>, kNumbers);
  add("cumprod", &scan<true>, kNumbers);
  add("argsort", &argsort, kNumbers);
  // Contraction.
  add("matmul", &matmul, kFloats);
}

}  // namespace sample
