// Layout kernels: transpose, slice and concat as strided copies (elements
// moved as raw bytes, so one instantiation per element size), and the indexed
// reads index_select, gather and embedding, which check every index on the
// stream's worker as they read it.
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/loops.h"

namespace oar::cpu {
namespace {

// concat is variadic but kernels are registered per arity: up to this many.
constexpr size_t kMaxConcatInputs = 32;

int64_t axis_attr(const KernelContext& context, int ndim) {
  int64_t axis = context.attrs.get_int("axis");  // the schema checked its range
  return axis < 0 ? axis + ndim : axis;
}

void launch_copies(const KernelContext& context, std::vector<Loop<2>> loops) {
  const size_t element_size = context.outputs[0].element_size();
  launch(context.call, [loops = std::move(loops), element_size] {
    for (const Loop<2>& loop : loops) run_copy(loop, element_size);
  });
}

void transpose_kernel(KernelContext& context) {
  const View& x = context.inputs[0];
  const std::vector<int64_t> perm = context.attrs.get_ints("perm");
  View source = x;
  for (int i = 0; i < x.ndim; ++i) {
    const int64_t p = perm[size_t(i)] < 0 ? perm[size_t(i)] + x.ndim : perm[size_t(i)];
    source.shape[i] = x.shape[p];
    source.strides[i] = x.strides[p];
  }
  launch_copies(context, {copy_loop(context.outputs[0], source)});
}

bool is_empty(const View& v) {
  for (int d = 0; d < v.ndim; ++d) {
    if (v.shape[d] == 0) return true;
  }
  return false;
}

void slice_kernel(KernelContext& context) {
  View source = context.inputs[0];
  const int64_t axis = axis_attr(context, source.ndim);
  const int64_t n = source.shape[axis];
  // Nothing to copy (start may then be n, one past what the strides reach,
  // and an empty tensor's strides may be anything).
  if (is_empty(context.outputs[0])) return;
  int64_t start = context.attrs.get_int("start");  // Python's clamping, as the schema
  start = start < 0 ? std::max<int64_t>(start + n, 0) : std::min(start, n);
  source.data += start * source.strides[axis] * int64_t(source.element_size());
  source.shape[axis] = context.outputs[0].shape[axis];
  // A step beyond the axis leaves one element, whose stride is never followed
  // and may not fit in 64 bits; two or more elements fit (the core checked
  // the input's extent).
  int64_t stepped = 0;
  if (__builtin_mul_overflow(source.strides[axis], context.attrs.get_int("step"), &stepped)) {
    stepped = 0;
  }
  source.strides[axis] = stepped;
  launch_copies(context, {copy_loop(context.outputs[0], source)});
}

void concat_kernel(KernelContext& context) {
  const View& y = context.outputs[0];
  if (is_empty(y)) return;  // an empty tensor's strides may be anything
  const int64_t axis = axis_attr(context, y.ndim);
  std::vector<Loop<2>> loops;
  int64_t at = 0;
  for (const View& x : context.inputs) {
    if (x.shape[axis] == 0) continue;  // at may be one past the last element
    View part = y;
    part.data += at * y.strides[axis] * int64_t(y.element_size());
    part.shape[axis] = x.shape[axis];
    at += x.shape[axis];
    loops.push_back(copy_loop(part, x));
  }
  launch_copies(context, std::move(loops));
}

template <typename F>
void with_index(DLDataType dtype, F&& f) {
  if (dtype == dtype::i32)
    f(int32_t{});
  else
    f(int64_t{});
}

// Throws OUT_OF_RANGE naming the first of |count| indices outside [0, bound).
template <typename I>
void check_indices(const I* index, int64_t count, int64_t bound, const char* op) {
  I low = 0, high = 0;
  for (int64_t i = 0; i < count; ++i) {
    low = std::min(low, index[i]);
    high = std::max(high, index[i]);
  }
  if (count == 0 || (low >= 0 && high < bound)) return;
  for (int64_t i = 0; i < count; ++i) {
    if (index[i] < 0 || index[i] >= bound) {
      throw oar::sdk::Error(OAR_STATUS_OUT_OF_RANGE,
                            std::string(op) + ": index " + std::to_string(index[i]) +
                                " out of range [0, " + std::to_string(bound) + ")");
    }
  }
}

// y[o, j, :] = x[o, index[j], :] with x as [outer, dim, inner] and y as
// [outer, count, inner]: index_select, and embedding with outer 1.
void launch_row_gather(const KernelContext& context, int64_t outer, int64_t dim, int64_t inner) {
  const View x = context.inputs[0], index = context.inputs[1], y = context.outputs[0];
  const char* op = context.schema.name;
  launch(context.call, [=] {
    with_index(index.dtype, [&](auto type) {
      using I = decltype(type);
      const I* idx = index.ptr<I>();
      const int64_t count = index.numel();
      check_indices(idx, count, dim, op);
      const int64_t row = inner * int64_t(y.element_size());
      const int64_t rows = outer * count;
#pragma omp parallel for if (rows * inner > 2 * kGrain) schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t source = (r / count) * dim + int64_t(idx[r % count]);
        std::memcpy(y.data + r * row, x.data + source * row, size_t(row));
      }
    });
  });
}

void index_select_kernel(KernelContext& context) {
  const View& x = context.inputs[0];
  const int64_t axis = axis_attr(context, x.ndim);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int d = int(axis) + 1; d < x.ndim; ++d) inner *= x.shape[d];
  launch_row_gather(context, outer, x.shape[axis], inner);
}

void embedding_kernel(KernelContext& context) {
  const View& weight = context.inputs[0];
  launch_row_gather(context, 1, weight.shape[0], weight.shape[1]);
}

// torch.gather: y[i..] = x[i.. with i[axis] replaced by index[i..]]. Loops
// over index's shape with x's strides, axis stride 0: the index supplies it.
void gather_kernel(KernelContext& context) {
  const View &x = context.inputs[0], &index = context.inputs[1], &y = context.outputs[0];
  const int64_t axis = axis_attr(context, x.ndim);
  View source = index;
  source.data = x.data;
  source.dtype = x.dtype;
  for (int d = 0; d < x.ndim; ++d) {
    oar::sdk::require(d == axis || index.shape[d] <= x.shape[d], OAR_STATUS_INVALID_ARGUMENT,
                      "gather: index extent " + std::to_string(index.shape[d]) +
                          " exceeds x's extent " + std::to_string(x.shape[d]) + " in dimension " +
                          std::to_string(d));
    source.strides[d] = d == axis ? 0 : x.strides[d];
  }
  const int64_t dim = x.shape[axis], axis_stride = x.strides[axis];
  const View views[3] = {y, index, source};
  const Loop<3> loop = make_loop(views);
  launch(context.call, [=] {
    with_index(index.dtype, [&](auto type) {
      using I = decltype(type);
      check_indices(index.ptr<I>(), index.numel(), dim, "gather");
      with_element_size(y.element_size(), [&](auto word) {
        using W = decltype(word);
        const int64_t sy = loop.inner_stride(0), si = loop.inner_stride(1),
                      sx = loop.inner_stride(2);
        parallel_for_each_run(loop, [&](const int64_t* offset, int64_t n) {
          W* out = loop.template ptr<W>(0) + offset[0];
          const I* idx = loop.template ptr<I>(1) + offset[1];
          const W* in = loop.template ptr<W>(2) + offset[2];
          for (int64_t i = 0; i < n; ++i)
            out[i * sy] = in[i * sx + int64_t(idx[i * si]) * axis_stride];
        });
      });
    });
  });
}

// (data, index) -> data signatures for data dtypes |bits|.
std::vector<std::vector<DLDataType>> indexed_signatures(uint32_t bits) {
  std::vector<std::vector<DLDataType>> result;
  for (DLDataType t : ops::dtypes_in(bits)) {
    for (DLDataType i : {dtype::i32, dtype::i64}) result.push_back({t, i, t});
  }
  return result;
}

}  // namespace

void register_layout_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table) {
  // Element moves: every dtype of each schema (the narrow integers included).
  auto dtypes = [](const char* op) { return ops::find_schema(op)->dtypes; };
  register_op(registrar, "transpose", transpose_kernel, same_signatures(dtypes("transpose"), 1, 1),
              0, table);
  register_op(registrar, "slice", slice_kernel, same_signatures(dtypes("slice"), 1, 1), 0, table);
  std::vector<std::vector<DLDataType>> concat;
  for (size_t n = 1; n <= kMaxConcatInputs; ++n) {
    for (auto& signature : same_signatures(dtypes("concat"), n, 1)) concat.push_back(signature);
  }
  register_op(registrar, "concat", concat_kernel, concat, 0, table);
  register_op(registrar, "index_select", index_select_kernel,
              indexed_signatures(dtypes("index_select")), 0, table);
  register_op(registrar, "gather", gather_kernel, indexed_signatures(dtypes("gather")), 0, table);
  register_op(registrar, "embedding", embedding_kernel, indexed_signatures(ops::kNumbers), 0,
              table);
}

}  // namespace oar::cpu
