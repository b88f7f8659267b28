// cpu kernels of the operator set v2 creation and layout operators (core/ops/schema_layout_v2.cc).
// flip and expand are strided copies (negative strides, zero strides) through
// loops.h; tril/triu keep one side of a diagonal, row by row; pad maps each
// coordinate of y back into x (or to the value).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/loops.h"

namespace oar::cpu {
namespace {

bool is_empty(const View& v) {
  for (int d = 0; d < v.ndim; ++d) {
    if (v.shape[d] == 0) return true;
  }
  return false;
}

void launch_copy(const KernelContext& context, const View& source) {
  const View& y = context.outputs[0];
  if (is_empty(y)) return;  // an empty tensor's strides may be anything
  const Loop<2> loop = copy_loop(y, source);
  const size_t element_size = y.element_size();
  launch(context.call, [loop, element_size] { run_copy(loop, element_size); });
}

// x read backwards along each flipped axis: start at its last element there,
// step by minus its stride.
void flip_kernel(KernelContext& context) {
  View source = context.inputs[0];
  if (is_empty(source)) return;
  std::vector<int64_t> axes = context.attrs.get_ints("axes");
  std::vector<bool> flipped(size_t(std::max(source.ndim, 1)), axes.empty());
  for (int64_t a : axes) flipped[size_t(a < 0 ? a + source.ndim : a)] = true;
  for (int d = 0; d < source.ndim; ++d) {
    if (!flipped[size_t(d)] || source.shape[d] < 2) continue;
    source.data += (source.shape[d] - 1) * source.strides[d] * int64_t(source.element_size());
    source.strides[d] = -source.strides[d];
  }
  launch_copy(context, source);
}

// x seen through y's shape: new leading dimensions and stretched size-1
// dimensions get stride 0.
void expand_kernel(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  View source = y;
  source.data = x.data;
  const int lead = y.ndim - x.ndim;
  for (int d = 0; d < y.ndim; ++d) {
    source.strides[d] = d < lead || x.shape[d - lead] == 1 ? 0 : x.strides[d - lead];
  }
  launch_copy(context, source);
}

// y[..., i, j] = keep(j - i) ? x[..., i, j] : 0 over contiguous x and y.
void triangle_kernel(KernelContext& context) {
  const View x = context.inputs[0], y = context.outputs[0];
  if (is_empty(y)) return;
  const bool lower = context.schema.name[3] == 'l';  // "tril" / "triu"
  const int64_t cols = y.shape[y.ndim - 1];
  const int64_t rows_per_matrix = y.shape[y.ndim - 2];
  const int64_t rows = y.numel() / cols;
  // Clamped to [-rows_per_matrix, cols], where j - i always lies, so that
  // the comparisons below cannot overflow.
  const int64_t diagonal =
      std::clamp<int64_t>(context.attrs.get_int("diagonal"), -rows_per_matrix, cols);
  launch(context.call, [=] {
    with_element_size(y.element_size(), [&](auto word) {
      using W = decltype(word);
      const W* in = x.ptr<W>();
      W* out = y.ptr<W>();
#pragma omp parallel for if (rows * cols > 2 * kGrain) schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = r % rows_per_matrix;
        // Kept columns: [0, i + diagonal] for tril, [i + diagonal, cols) for triu.
        const int64_t edge = std::clamp<int64_t>(i + diagonal + (lower ? 1 : 0), 0, cols);
        const int64_t begin = lower ? 0 : edge, end = lower ? edge : cols;
        const W* src = in + r * cols;
        W* dst = out + r * cols;
        for (int64_t j = 0; j < cols; ++j) dst[j] = j >= begin && j < end ? src[j] : W(0);
      }
    });
  });
}

// pad's value as |T| would hold it after fill: floats rounded once to
// nearest even (f16/bf16 through round-to-odd f32, so that the double is not
// rounded twice), integers truncated (0 when out of range or NaN), bool
// value != 0.
template <typename T>
T pad_value(double value) {
  T out{};
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    float f = float(value);
    if (!std::isnan(value) && double(f) != value) {
      if (std::fabs(double(f)) > std::fabs(value)) f = std::nextafter(f, 0.0f);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      bits |= 1u;
      std::memcpy(&f, &bits, 4);
    }
    store(&out, f);
  } else if constexpr (std::is_same_v<T, bool>) {
    out = value != 0 || std::isnan(value);
  } else if constexpr (std::is_integral_v<T>) {
    const bool fits = std::isfinite(value) && std::fabs(value) < 0x1p63;
    out = fits ? T(int64_t(value)) : T(0);
  } else {
    out = T(value);
  }
  return out;
}

// Where coordinate |p| of y reads along a dimension of size |n| padded by
// |begin| in |mode| (0 constant, 1 reflect, 2 replicate); -1: the value.
inline int64_t pad_source(int64_t p, int64_t begin, int64_t n, int mode) {
  const int64_t q = p - begin;
  if (q >= 0 && q < n) return q;
  if (mode == 0) return -1;
  if (mode == 1) return q < 0 ? -q : 2 * (n - 1) - q;
  return q < 0 ? 0 : n - 1;
}

// Row by row over contiguous x and y: the leading coordinates pick x's row
// (or the value), the last dimension is mapped element by element.
void pad_kernel(KernelContext& context) {
  const View x = context.inputs[0], y = context.outputs[0];
  if (is_empty(y)) return;
  const std::vector<int64_t> pads = context.attrs.get_ints("pads");
  const std::string mode_name = context.attrs.get_string("mode");
  const int mode = mode_name == "constant" ? 0 : mode_name == "reflect" ? 1 : 2;
  const double value = context.attrs.get_float("value");
  const int rank = y.ndim;
  launch(context.call, [=] {
    with_dtype(y.dtype, [&](auto type) {
      using T = decltype(type);
      using W = std::conditional_t<
          sizeof(T) == 1, uint8_t,
          std::conditional_t<sizeof(T) == 2, uint16_t,
                             std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
      const T typed = pad_value<T>(value);
      W fill;
      std::memcpy(&fill, &typed, sizeof(W));
      const W* in = x.ptr<W>();
      W* out = y.ptr<W>();
      if (rank == 0) {
        out[0] = in[0];
        return;
      }
      const int64_t cols = y.shape[rank - 1];
      const int64_t rows = y.numel() / cols;
      const int64_t begin = pads[size_t(rank - 1)], n = x.shape[rank - 1];
#pragma omp parallel for if (rows * cols > 2 * kGrain) schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        W* dst = out + r * cols;
        int64_t source = 0;
        bool outside = false;
        int64_t rest = r;
        for (int d = rank - 2; d >= 0; --d) {
          const int64_t p = rest % y.shape[d];
          rest /= y.shape[d];
          const int64_t q = pad_source(p, pads[size_t(d)], x.shape[d], mode);
          if (q < 0) {
            outside = true;
            break;
          }
          source += q * x.strides[d];
        }
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t q = outside ? -1 : pad_source(j, begin, n, mode);
          dst[j] = q < 0 ? fill : in[source + q * x.strides[rank - 1]];
        }
      }
    });
  });
}

// Checks every index on the stream's worker, then writes 1 at index[p] and 0
// elsewhere in each row of y.
void one_hot_kernel(KernelContext& context) {
  const View index = context.inputs[0], y = context.outputs[0];
  if (is_empty(y)) return;
  const int64_t classes = y.shape[y.ndim - 1];
  launch(context.call, [=] {
    const int64_t count = index.numel();
    auto at = [&](int64_t i) {
      return index.dtype == dtype::i32 ? int64_t(index.ptr<int32_t>()[i]) : index.ptr<int64_t>()[i];
    };
    for (int64_t i = 0; i < count; ++i) {
      const int64_t k = at(i);
      if (k < 0 || k >= classes) {
        throw oar::sdk::Error(OAR_STATUS_OUT_OF_RANGE, "one_hot: index " + std::to_string(k) +
                                                           " out of range [0, " +
                                                           std::to_string(classes) + ")");
      }
    }
    with_dtype(y.dtype, [&](auto type) {
      using T = decltype(type);
      const T one = pad_value<T>(1.0);
      const T zero = pad_value<T>(0.0);
      T* out = y.ptr<T>();
#pragma omp parallel for if (count * classes > 2 * kGrain) schedule(static)
      for (int64_t i = 0; i < count; ++i) {
        const int64_t k = at(i);
        for (int64_t c = 0; c < classes; ++c) out[i * classes + c] = c == k ? one : zero;
      }
    });
  });
}

// y = x, then each line of index along the axis (one per position off the
// axis) in index order: y[.., index[j], ..] = src[j] or += src[j]. Lines
// write disjoint elements of y, so they run in parallel; within a line the
// order is the index's, which makes the last writer and the sums
// deterministic. Every index is checked before y is touched.
void scatter_kernel(KernelContext& context) {
  const View x = context.inputs[0], index = context.inputs[1], src = context.inputs[2],
             y = context.outputs[0];
  if (is_empty(y)) return;
  const bool add = context.schema.name == std::string("scatter_add");
  const int axis = int(context.attrs.get_int("axis") < 0 ? context.attrs.get_int("axis") + y.ndim
                                                         : context.attrs.get_int("axis"));
  const Loop<2> copy = copy_loop(y, x);
  const char* op = context.schema.name;
  launch(context.call, [=] {
    const int64_t count = index.numel();
    auto at = [&](int64_t i) {
      return index.dtype == dtype::i32 ? int64_t(index.ptr<int32_t>()[i]) : index.ptr<int64_t>()[i];
    };
    const int64_t bound = y.shape[axis];
    for (int64_t i = 0; i < count; ++i) {
      if (at(i) < 0 || at(i) >= bound) {
        throw oar::sdk::Error(OAR_STATUS_OUT_OF_RANGE,
                              std::string(op) + ": index " + std::to_string(at(i)) +
                                  " out of range [0, " + std::to_string(bound) + ")");
      }
    }
    run_copy(copy, y.element_size());
    const int64_t along = index.shape[axis];
    if (count == 0) return;
    const int64_t lines = count / along;
    with_dtype(y.dtype, [&](auto type) {
      using T = decltype(type);
      T* out = y.ptr<T>();
      const T* from = src.ptr<T>();
#pragma omp parallel for if (count > 2 * kGrain) schedule(static)
      for (int64_t l = 0; l < lines; ++l) {
        int64_t rest = l, yo = 0, io = 0;
        for (int d = y.ndim - 1; d >= 0; --d) {
          if (d == axis) continue;
          const int64_t c = rest % index.shape[d];
          rest /= index.shape[d];
          yo += c * y.strides[d];
          io += c * index.strides[d];
        }
        for (int64_t j = 0; j < along; ++j) {
          const int64_t ii = io + j * index.strides[axis];
          T* q = out + yo + at(ii) * y.strides[axis];
          if constexpr (std::is_same_v<T, bool>) {
            *q = from[ii];
          } else if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<T>;
            *q = add ? T(U(*q) + U(from[ii])) : from[ii];  // wraps
          } else {
            if (add) {
              store(q, load(q) + load(from + ii));
            } else {
              *q = from[ii];
            }
          }
        }
      }
    });
  });
}

// start + i * step: one fma in f32 (f16, bf16, f32) or f64, rounded once when
// stored; integers in wrapping int64 arithmetic from integer start and step.
void arange_kernel(KernelContext& context) {
  const View y = context.outputs[0];
  const double start = context.attrs.get_float("start"), step = context.attrs.get_float("step");
  const bool integer = y.dtype == dtype::i32 || y.dtype == dtype::i64;
  oar::sdk::require(!integer || (std::trunc(start) == start && std::trunc(step) == step &&
                                 std::fabs(start) < 0x1p63 && std::fabs(step) < 0x1p63),
                    OAR_STATUS_INVALID_ARGUMENT,
                    "arange: an integer dtype needs integer start and step within int64");
  const int64_t n = y.numel();
  if (n == 0) return;
  launch(context.call, [=] {
    with_dtype<ops::kNumbers>(y.dtype, [&](auto type) {
      using T = decltype(type);
      T* out = y.ptr<T>();
#pragma omp parallel for if (n > 2 * kGrain) schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<T>) {
          const uint64_t v = uint64_t(int64_t(start)) + uint64_t(i) * uint64_t(int64_t(step));
          out[i] = T(int64_t(v));
        } else if constexpr (std::is_same_v<T, double>) {
          out[i] = std::fma(double(i), step, start);
        } else {
          store(out + i, std::fma(float(i), float(step), float(start)));
        }
      }
    });
  });
}

// (data, index, src) -> data signatures for data dtypes |bits|.
// scatter's signatures by its schema's rule (kIndexed: the index input i32
// or i64), for the data dtypes |bits|.
std::vector<std::vector<DLDataType>> scatter_signatures(const char* op, uint32_t bits) {
  return oar::sdk::signatures_for(*ops::find_schema(op), bits);
}

}  // namespace

void register_layout_v2_kernels(const oar::sdk::KernelRegistrar& registrar,
                                AllocationTable* table) {
  register_op(registrar, "flip", flip_kernel, same_signatures(ops::kAll, 1, 1), 0, table);
  register_op(registrar, "tril", triangle_kernel, same_signatures(ops::kAll, 1, 1), 0, table);
  register_op(registrar, "triu", triangle_kernel, same_signatures(ops::kAll, 1, 1), 0, table);
  register_op(registrar, "expand", expand_kernel, same_signatures(ops::kAll, 1, 1), 0, table);
  register_op(registrar, "pad", pad_kernel, same_signatures(ops::kAll, 1, 1), 0, table);
  std::vector<std::vector<DLDataType>> one_hot;
  for (DLDataType i : {dtype::i32, dtype::i64}) {
    for (DLDataType t : ops::dtypes_in(ops::kAll)) one_hot.push_back({i, t});
  }
  register_op(registrar, "one_hot", one_hot_kernel, one_hot, 0, table);
  register_op(registrar, "arange", arange_kernel, same_signatures(ops::kNumbers, 0, 1), 0, table);
  register_op(registrar, "scatter", scatter_kernel, scatter_signatures("scatter", ops::kAll), 0,
              table);
  register_op(registrar, "scatter_add", scatter_kernel,
              scatter_signatures("scatter_add", ops::kNumbers), 0, table);
}

}  // namespace oar::cpu
