// cpu kernels of the operator set v2 math operators (core/ops/schema_math_v2.cc):
// clip, remainder, fmod, logical and bitwise operators, each one strided pass
// with every input broadcast to the output (16-bit floats computed in float and
// rounded once at the store).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/loops.h"

namespace oar::cpu {
namespace {

template <typename T, typename F, size_t... I>
void map_runs(const Loop<1 + sizeof...(I)>& loop, F f, std::index_sequence<I...>) {
  const int64_t out_stride = loop.inner_stride(0);
  const int64_t strides[] = {loop.inner_stride(I + 1)..., 0};
  parallel_for_each_run(loop, [&](const int64_t* offset, int64_t n) {
    T* y = loop.template ptr<T>(0) + offset[0];
    const T* x[] = {(loop.template ptr<const T>(I + 1) + offset[I + 1])...};
    for (int64_t i = 0; i < n; ++i) store(y + i * out_stride, f(load(x[I] + i * strides[I])...));
  });
}

// y = f(inputs...) with every input of y's dtype T broadcast to y's shape.
template <typename T, size_t N, typename F>
void map(KernelContext& context, F f) {
  View views[1 + N] = {context.outputs[0]};
  for (size_t i = 0; i < N; ++i) views[i + 1] = context.inputs[i];
  Loop<1 + N> loop = make_loop(views);
  launch(context.call, [loop, f] { map_runs<T>(loop, f, std::make_index_sequence<N>{}); });
}

// C's fmod for floats (exact); integers: |a| mod |b| in the unsigned type, the
// sign of a, and 0 for b = 0 (INT_MIN % -1 is 0 too, where C's % traps).
template <typename C>
C fmod_of(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::fmod(a, b);
  } else {
    using U = std::make_unsigned_t<C>;
    if (b == 0) return 0;
    const U ua = a < 0 ? U(0) - U(a) : U(a);
    const U ub = b < 0 ? U(0) - U(b) : U(b);
    const U r = ua % ub;
    return a < 0 ? C(U(0) - r) : C(r);
  }
}

// Python's %: the sign of b; a zero result is a zero of b's sign.
template <typename C>
C remainder_of(C a, C b) {
  C r = fmod_of(a, b);
  if constexpr (std::is_floating_point_v<C>) {
    if (r == 0) return std::copysign(C(0), b);
  }
  if (r != 0 && (r < 0) != (b < 0)) r += b;
  return r;
}

template <typename C>
C clip_of(C x, C lo, C hi) {
  if constexpr (std::is_floating_point_v<C>) {
    if (x != x || lo != lo || hi != hi) return std::numeric_limits<C>::quiet_NaN();
  }
  const C low = x < lo ? lo : x;
  return low > hi ? hi : low;
}

void clip_kernel(KernelContext& context) {
  with_dtype<ops::kNumbers>(context.outputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    map<T, 3>(context, [](auto x, auto lo, auto hi) { return clip_of(x, lo, hi); });
  });
}

template <bool python>
void division_kernel(KernelContext& context) {
  with_dtype<ops::kNumbers>(context.outputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    map<T, 2>(context, [](auto a, auto b) { return python ? remainder_of(a, b) : fmod_of(a, b); });
  });
}

enum class Bits { kAnd, kOr, kXor };

// Integers bit for bit; bool (read as 0/1 whatever the byte) as truth values.
template <Bits op>
void bitwise_kernel(KernelContext& context) {
  with_dtype<ops::kInts | ops::kBool>(context.outputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    map<T, 2>(context, [](auto a, auto b) {
      if constexpr (op == Bits::kAnd) return a & b;
      if constexpr (op == Bits::kOr) return a | b;
      if constexpr (op == Bits::kXor) return a ^ b;
    });
  });
}

void not_kernel(KernelContext& context) {
  with_dtype<ops::kInts | ops::kBool>(context.outputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, bool>) {
      map<T, 1>(context, [](auto x) { return x == 0; });
    } else {
      map<T, 1>(context, [](auto x) { return ~x; });
    }
  });
}

// The scans' accumulator: double for floats, the unsigned type for integers.
template <typename C, bool = std::is_floating_point_v<C>>
struct Accumulator {
  using type = double;
};
template <typename C>
struct Accumulator<C, false> {
  using type = std::make_unsigned_t<C>;
};

// cumsum/cumprod: one row at a time along the axis (x and y are contiguous),
// rows shared out across threads. Floats accumulate in double and round once
// per output; integers wrap in the unsigned type.
template <bool product>
void scan_kernel(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  const int axis = oar::sdk::normalize_axis(context.attrs.get_int("axis"), x.ndim, "axis");
  int64_t before = 1, len = 1, after = 1;
  for (int d = 0; d < x.ndim; ++d) {
    (d < axis ? before : d == axis ? len : after) *= x.shape[d];
  }
  const bool exclusive = context.attrs.get_bool("exclusive");
  const bool reverse = context.attrs.get_bool("reverse");
  // Nothing to write; and with an empty axis the other extents may multiply
  // to 2^38 rows of nothing (found by fuzz/ops_fuzzer.cc).
  if (y.numel() == 0) return;
  with_dtype<ops::kNumbers>(y.dtype, [&](auto t) {
    using T = decltype(t);
    using C = compute_t<T>;
    using A = typename Accumulator<C>::type;
    const T* px = x.ptr<const T>();
    T* py = y.ptr<T>();
    launch(context.call, [=] {
      const int64_t rows = before * after;
#pragma omp parallel for if (rows * len > 2 * kGrain) schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t base = r / after * len * after + r % after;
        A acc = product ? A(1) : A(0);
        for (int64_t k = 0; k < len; ++k) {
          const int64_t i = base + (reverse ? len - 1 - k : k) * after;
          const A v = A(load(px + i));
          const A next = product ? A(acc * v) : A(acc + v);
          store(py + i, C(exclusive ? acc : next));
          acc = next;
        }
      }
    });
  });
}

// The kept and reduced dimensions of a reduction of contiguous |x| over
// |axes| (none: all), each with its extents and strides.
struct Split {
  int kept = 0, reduced = 0;
  int64_t kept_shape[ops::kMaxDims] = {}, kept_strides[ops::kMaxDims] = {};
  int64_t reduced_shape[ops::kMaxDims] = {}, reduced_strides[ops::kMaxDims] = {};
  int64_t kept_count = 1, reduced_count = 1;
};

Split split_axes(const View& x, const std::vector<int64_t>& axes) {
  bool reduce[ops::kMaxDims] = {};
  for (int d = 0; d < x.ndim; ++d) reduce[d] = axes.empty();
  for (int64_t a : axes) {
    if (x.ndim > 0) reduce[oar::sdk::normalize_axis(a, x.ndim, "axes")] = true;
  }
  Split s;
  int64_t stride = 1;
  for (int d = x.ndim - 1; d >= 0; --d) {
    if (reduce[d]) {
      s.reduced_shape[s.reduced] = x.shape[d];
      s.reduced_strides[s.reduced++] = stride;
      s.reduced_count *= x.shape[d];
    } else {
      s.kept_shape[s.kept] = x.shape[d];
      s.kept_strides[s.kept++] = stride;
      s.kept_count *= x.shape[d];
    }
    stride *= x.shape[d];
  }
  return s;  // dimensions innermost first
}

int64_t unravel(int64_t linear, int n, const int64_t* shape, const int64_t* strides) {
  int64_t offset = 0;
  for (int d = 0; d < n; ++d) {  // innermost first
    offset += linear % shape[d] * strides[d];
    linear /= shape[d];
  }
  return offset;
}

// logsumexp in double: the maximum, then the shifted sum of exponentials.
void logsumexp_kernel(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  const Split s = split_axes(x, context.attrs.get_ints("axes"));
  if (y.numel() == 0) return;
  with_float(y.dtype, [&](auto t) {
    using T = decltype(t);
    const T* px = x.ptr<const T>();
    T* py = y.ptr<T>();
    launch(context.call, [=] {
#pragma omp parallel for if (s.kept_count * s.reduced_count > 2 * kGrain) schedule(static)
      for (int64_t o = 0; o < s.kept_count; ++o) {
        const int64_t base = unravel(o, s.kept, s.kept_shape, s.kept_strides);
        double m = -std::numeric_limits<double>::infinity();
        bool nan = false;
        for (int64_t r = 0; r < s.reduced_count; ++r) {
          const double v =
              load(px + base + unravel(r, s.reduced, s.reduced_shape, s.reduced_strides));
          nan |= v != v;
          m = v > m ? v : m;
        }
        double result = m;
        if (nan) {
          result = std::numeric_limits<double>::quiet_NaN();
        } else if (!std::isinf(m)) {
          double sum = 0;
          for (int64_t r = 0; r < s.reduced_count; ++r) {
            sum += std::exp(
                load(px + base + unravel(r, s.reduced, s.reduced_shape, s.reduced_strides)) - m);
          }
          result = m + std::log(sum);
        }
        store(py + o, compute_t<T>(result));
      }
    });
  });
}

// sort, argsort, topk: each row's indices stably sorted by value (NaN above
// everything), the first k written as values (bit copies) and i64 indices.
void order_kernel(KernelContext& context) {
  const std::string op = context.schema.name;
  const View& x = context.inputs[0];
  const bool values = op != "argsort";
  const View& v = context.outputs[0];
  const View& ind = context.outputs[values ? 1 : 0];
  const int axis = oar::sdk::normalize_axis(context.attrs.get_int("axis"), x.ndim, "axis");
  int64_t before = 1, len = 1, after = 1;
  for (int d = 0; d < x.ndim; ++d) {
    (d < axis ? before : d == axis ? len : after) *= x.shape[d];
  }
  const bool descending =
      op == "topk" ? context.attrs.get_bool("largest") : context.attrs.get_bool("descending");
  const int64_t k = op == "topk" ? context.attrs.get_int("k") : len;
  if (before * after * k == 0) return;
  with_dtype<ops::kNumbers>(x.dtype, [&](auto t) {
    using T = decltype(t);
    const T* px = x.ptr<const T>();
    T* pv = v.ptr<T>();
    int64_t* pi = ind.ptr<int64_t>();
    // Named captures: clang's OpenMP outlining cannot see a variable the
    // comparator below takes from this function through an implicit [=].
    launch(context.call, [=, descending = descending, values = values] {
      const int64_t rows = before * after;
#pragma omp parallel for if (rows * len > 2 * kGrain) schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = px + r / after * len * after + r % after;
        std::vector<int64_t> idx(static_cast<size_t>(len));
        for (int64_t i = 0; i < len; ++i) idx[size_t(i)] = i;
        auto below = [&](int64_t a, int64_t b) {
          const auto p = load(row + a * after), q = load(row + b * after);
          return !(p != p) && (q != q || p < q);  // NaN is the largest
        };
        std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
          return descending ? below(b, a) : below(a, b);
        });
        const int64_t out = r / after * k * after + r % after;
        for (int64_t j = 0; j < k; ++j) {
          if (values) pv[out + j * after] = row[idx[size_t(j)] * after];
          pi[out + j * after] = idx[size_t(j)];
        }
      }
    });
  });
}

}  // namespace

void register_math_v2_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table) {
  const std::pair<const char*, KernelBody> kOps[] = {
      {"clip", clip_kernel},
      {"remainder", division_kernel<true>},
      {"fmod", division_kernel<false>},
      {"logical_and", bitwise_kernel<Bits::kAnd>},
      {"logical_or", bitwise_kernel<Bits::kOr>},
      {"logical_xor", bitwise_kernel<Bits::kXor>},
      {"logical_not", not_kernel},
      {"bitwise_and", bitwise_kernel<Bits::kAnd>},
      {"bitwise_or", bitwise_kernel<Bits::kOr>},
      {"bitwise_xor", bitwise_kernel<Bits::kXor>},
      {"bitwise_not", not_kernel},
      {"cumsum", scan_kernel<false>},
      {"cumprod", scan_kernel<true>},
      {"logsumexp", logsumexp_kernel},
  };
  for (const auto& [op, body] : kOps) {
    const ops::OpSchema& schema = *ops::find_schema(op);
    register_op(registrar, op, body, same_signatures(schema.dtypes, schema.inputs.size(), 1), 0,
                table);
  }
  std::vector<std::vector<DLDataType>> with_indices, indices_only;
  for (DLDataType t : ops::dtypes_in(ops::kNumbers)) {
    with_indices.push_back({t, t, dtype::i64});
    indices_only.push_back({t, dtype::i64});
  }
  register_op(registrar, "sort", order_kernel, with_indices, 0, table);
  register_op(registrar, "topk", order_kernel, with_indices, 0, table);
  register_op(registrar, "argsort", order_kernel, indices_only, 0, table);
}

}  // namespace oar::cpu
