// The kernels both samples register (common_kernels.h): creation, layout
// (every one a move_elements over suitably offset and strided views),
// argmax/argmin and matmul. Plain loops on the SDK's helpers, as in kernels.cc.
//
// Numerics: floats are computed in double and rounded once when stored;
// integers wrap.
#include "common_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sample {

void move_elements(const TensorView& to, const TensorView& from) {
  const TensorView views[2] = {to, from};
  const sdk::Loop<2> loop = sdk::make_loop(views);
  const size_t size = to.element_size();
  sdk::for_each_run(loop, [&](const int64_t* offset, int64_t n) {
    char* y = loop.data[0] + offset[0] * int64_t(size);
    const char* x = loop.data[1] + offset[1] * int64_t(size);
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(y + i * loop.inner_stride(0) * int64_t(size),
                  x + i * loop.inner_stride(1) * int64_t(size), size);
    }
  });
}

// --- creation and layout ----------------------------------------------------------

void fill(const KernelCall& call) {
  const TensorView y = output(call);
  const double value = call.attrs.get_float("value");
  sdk::with_dtype<kAll>(y.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [y, value] {
      for (int64_t i = 0; i < y.numel(); ++i) {
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          put<T>(y, i, T(truncate(value)));
        } else {
          put<T>(y, i, value);
        }
      }
    });
  });
}

void copy(const KernelCall& call) {
  const TensorView x = input(call, 0), y = output(call);
  launch(call, [x, y] { move_elements(y, x); });
}

namespace {

// An integer rounded once to |digits| significant bits (f16: 11, bf16: 8),
// nearest even, as a float that holds the result exactly: converting it to
// f16/bf16 is then exact (or overflows to inf), never a second rounding.
float round_integer(int64_t value, int digits) {
  const bool negative = value < 0;
  uint64_t magnitude = negative ? 0 - uint64_t(value) : uint64_t(value);
  int shift = 0;
  while ((magnitude >> shift) >= (uint64_t(1) << digits)) ++shift;
  if (shift > 0) {
    const uint64_t rest = magnitude & ((uint64_t(1) << shift) - 1), half = uint64_t(1)
                                                                           << (shift - 1);
    magnitude >>= shift;
    if (rest > half || (rest == half && (magnitude & 1) != 0)) ++magnitude;
  }
  const float result = std::ldexp(float(magnitude), shift);
  return negative ? -result : result;
}

// docs/ops.md's cast table; |value| is the source element as sdk::load reads it.
template <typename Y, typename V>
void convert(Y* y, V value) {
  if constexpr (std::is_same_v<Y, bool>) {
    sdk::store(y, value != V(0));  // NaN -> true
  } else if constexpr (std::is_integral_v<Y> && std::is_floating_point_v<V>) {
    *y = Y(truncate(value));
  } else if constexpr (std::is_integral_v<V> &&
                       (std::is_same_v<Y, sdk::half> || std::is_same_v<Y, sdk::bfloat16>)) {
    sdk::store(y, round_integer(int64_t(value), std::is_same_v<Y, sdk::half> ? 11 : 8));
  } else {
    sdk::store(y, value);  // integers reach floats directly: i64 -> f32 rounds once
  }
}

}  // namespace

void cast(const KernelCall& call) {
  const TensorView x = input(call, 0), y = output(call);
  if (x.dtype.code == y.dtype.code && x.dtype.bits == y.dtype.bits) {
    launch(call, [x, y] { move_elements(y, x); });  // bit-exact
    return;
  }
  sdk::with_dtype<kAll>(x.dtype, [&](auto from) {
    sdk::with_dtype<kAll>(y.dtype, [&](auto to) {
      using X = decltype(from);
      using Y = decltype(to);
      launch(call, [x, y] {
        for (int64_t i = 0; i < x.numel(); ++i) convert(y.ptr<Y>() + i, sdk::load(x.ptr<X>() + i));
      });
    });
  });
}

void transpose(const KernelCall& call) {
  const TensorView x = input(call, 0), y = output(call);
  const std::vector<int64_t> perm = call.attrs.get_ints("perm");
  TensorView permuted = y;  // x read in y's order
  permuted.data = x.data;
  for (int d = 0; d < y.ndim; ++d) {
    permuted.strides[d] = x.strides[sdk::normalize_axis(perm[size_t(d)], x.ndim, "transpose")];
  }
  launch(call, [permuted, y] { move_elements(y, permuted); });
}

void concat(const KernelCall& call) {
  const TensorView y = output(call);
  const int axis = sdk::normalize_axis(call.attrs.get_int("axis"), y.ndim, "concat");
  std::vector<TensorView> parts;
  for (size_t i = 0; i < call.num_inputs(); ++i) parts.push_back(input(call, i));
  launch(call, [parts, y, axis] {
    int64_t at = 0;
    for (const TensorView& x : parts) {
      TensorView slot = y;  // the part of y that x fills
      slot.data += at * y.strides[axis] * int64_t(y.element_size());
      slot.shape[axis] = x.shape[axis];
      move_elements(slot, x);
      at += x.shape[axis];
    }
  });
}

void slice(const KernelCall& call) {
  const TensorView x = input(call, 0), y = output(call);
  const int axis = sdk::normalize_axis(call.attrs.get_int("axis"), x.ndim, "slice");
  const int64_t n = x.shape[axis];
  int64_t start = call.attrs.get_int("start");
  start = start < 0 ? std::max<int64_t>(start + n, 0) : std::min(start, n);
  TensorView picked = x;  // the elements y takes, in y's shape
  picked.data += start * x.strides[axis] * int64_t(x.element_size());
  picked.strides[axis] *= call.attrs.get_int("step");
  picked.shape[axis] = y.shape[axis];
  launch(call, [picked, y] { move_elements(y, picked); });
}

// --- reductions ------------------------------------------------------------------------

// argmax / argmin: the first position of the extreme; a NaN is extreme.
namespace {

template <bool kMax>
void arg_extreme(const KernelCall& call) {
  const TensorView x = input(call, 0), y = output(call);
  const int axis = sdk::normalize_axis(call.attrs.get_int("axis"), x.ndim, "argmax");
  const Rows r = x.ndim == 0 ? Rows{} : rows_of(x, axis);
  sdk::require(r.extent > 0, OAR_STATUS_INVALID_ARGUMENT,
               "argmax/argmin of an empty axis has no value");
  sdk::with_dtype<kNumbers>(x.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [x, y, r] {
      for (int64_t o = 0; o < r.outer; ++o) {
        for (int64_t in = 0; in < r.inner; ++in) {
          const int64_t base = o * r.extent * r.inner + in;
          int64_t best = 0;
          auto best_value = get<T>(x, base);
          for (int64_t k = 1; k < r.extent && best_value == best_value; ++k) {
            const auto v = get<T>(x, base + k * r.inner);
            if (v != v || (kMax ? v > best_value : v < best_value)) best = k, best_value = v;
          }
          put<int64_t>(y, o * r.inner + in, best);
        }
      }
    });
  });
}

}  // namespace

void argmax(const KernelCall& call) { arg_extreme<true>(call); }
void argmin(const KernelCall& call) { arg_extreme<false>(call); }

// --- contraction ----------------------------------------------------------------------------

void matmul(const KernelCall& call) {
  const TensorView a = input(call, 0), b = input(call, 1), y = output(call);
  const bool ta = call.attrs.get_bool("transpose_a"), tb = call.attrs.get_bool("transpose_b");
  sdk::with_dtype<kFloats>(y.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [a, b, y, ta, tb] {
      const int64_t m = y.shape[y.ndim - 2], n = y.shape[y.ndim - 1];
      const int64_t k = ta ? a.shape[a.ndim - 2] : a.shape[a.ndim - 1];
      // The batch of y, with a's and b's batch dimensions broadcast to it.
      TensorView batch[3] = {y, a, b};  // strides in elements, as the matrices' offsets
      for (TensorView& v : batch) v.ndim -= 2;
      const sdk::Loop<3> loop = sdk::make_loop(batch);
      std::vector<double> row(static_cast<size_t>(n), 0.0);
      sdk::for_each_run(loop, [&](const int64_t* offset, int64_t count) {
        for (int64_t t = 0; t < count; ++t) {
          const int64_t oy = offset[0] + t * loop.inner_stride(0);
          const int64_t oa = offset[1] + t * loop.inner_stride(1);
          const int64_t ob = offset[2] + t * loop.inner_stride(2);
          for (int64_t i = 0; i < m; ++i) {
            std::fill(row.begin(), row.end(), 0.0);
            for (int64_t p = 0; p < k; ++p) {
              const double av = get<T>(a, oa + (ta ? p * m + i : i * k + p));
              for (int64_t j = 0; j < n; ++j)
                row[size_t(j)] += av * get<T>(b, ob + (tb ? j * k + p : p * n + j));
            }
            for (int64_t j = 0; j < n; ++j) put<T>(y, oy + i * n + j, row[size_t(j)]);
          }
        }
      });
    });
  });
}

}  // namespace sample
