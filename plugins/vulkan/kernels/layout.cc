// transpose, slice and concat are strided copies (map.comp); index_select,
// gather and embedding are one strided lookup (index.comp) whose bad indices
// fail the stream with OUT_OF_RANGE.
#include <algorithm>

#include "kernels/kernel.h"

namespace oar::vulkan {
namespace {

constexpr size_t kMaxConcatInputs = 32;

std::vector<int64_t> shape_of(const TensorRef& t) { return {t.shape, t.shape + t.ndim}; }

void transpose_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  std::vector<int64_t> perm = c.attrs.get_ints("perm");
  Operand a = as_is(x);
  for (int i = 0; i < y.ndim; ++i)
    a.strides[size_t(i)] = x.strides[normalize_axis(perm[size_t(i)], x.ndim)];
  map(c.stream, kMapCopy, shape_of(y), a, {}, {}, as_is(y));
}

void slice_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  int axis = normalize_axis(c.attrs.get_int("axis"), x.ndim);
  int64_t n = x.shape[axis];
  int64_t start = c.attrs.get_int("start");
  if (start < 0) start += n;
  start = std::clamp<int64_t>(start, 0, n);
  int64_t step = c.attrs.get_int("step");
  Operand a = as_is(x);
  a.offset += start * x.strides[axis];
  a.strides[size_t(axis)] *= step;
  map(c.stream, kMapCopy, shape_of(y), a, {}, {}, as_is(y));
}

void concat_kernel(KernelContext& c) {
  const TensorRef& y = c.outputs[0];
  int axis = normalize_axis(c.attrs.get_int("axis"), y.ndim);
  int64_t position = 0;
  for (const TensorRef& x : c.inputs) {
    Operand to = as_is(y);
    to.offset += position * y.strides[axis];
    map(c.stream, kMapCopy, shape_of(x), as_is(x), {}, {}, to);
    position += x.shape[axis];
  }
}

// index.comp over y's positions: x offset + sum p_d * xs_d + index[...] * axis_stride.
void lookup(KernelContext& c, const TensorRef& x, const TensorRef& index, const TensorRef& y,
            const std::vector<int64_t>& xs, const std::vector<int64_t>& is, int64_t axis_stride,
            int64_t bound, int op) {
  int64_t n = y.numel();
  if (n == 0) return;
  Params p;
  p.add(n);
  p.add(y.ndim);
  p.add8(y.shape, y.ndim, 1);
  p.add(x.offset);
  p.add8(xs.data(), int(xs.size()), 0);
  p.add(index.offset);
  p.add8(is.data(), int(is.size()), 0);
  p.add(y.offset);
  p.add(axis_stride);
  p.add(bound);
  p.add(op);  // the operator's code in the error word (common.glsl)
  dispatch(c.stream, module_name("index", {x.dtype, index.dtype}), 0,
           {{0, x.buffer()}, {1, index.buffer()}, {3, y.buffer()}}, p.data(), p.size(),
           uint64_t(n));
}

void index_select_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& index = c.inputs[1];
  const TensorRef& y = c.outputs[0];
  int axis = normalize_axis(c.attrs.get_int("axis"), x.ndim);
  std::vector<int64_t> xs(x.strides, x.strides + x.ndim), is(size_t(y.ndim), 0);
  if (x.ndim == 0) {
    lookup(c, x, index, y, xs, is, 0, 1, 1);
    return;
  }
  xs[size_t(axis)] = 0;
  is[size_t(axis)] = index.ndim > 0 ? index.strides[0] : 0;
  lookup(c, x, index, y, xs, is, x.strides[axis], x.shape[axis], 1);
}

void gather_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& index = c.inputs[1];
  const TensorRef& y = c.outputs[0];
  int axis = normalize_axis(c.attrs.get_int("axis"), x.ndim);
  std::vector<int64_t> xs(x.strides, x.strides + x.ndim);
  std::vector<int64_t> is(index.strides, index.strides + index.ndim);
  if (x.ndim == 0) {
    lookup(c, x, index, y, xs, is, 0, 1, 2);
    return;
  }
  xs[size_t(axis)] = 0;
  lookup(c, x, index, y, xs, is, x.strides[axis], x.shape[axis], 2);
}

void embedding_kernel(KernelContext& c) {
  const TensorRef& weight = c.inputs[0];
  const TensorRef& index = c.inputs[1];
  const TensorRef& y = c.outputs[0];
  std::vector<int64_t> xs(size_t(y.ndim), 0), is(size_t(y.ndim), 0);
  xs.back() = weight.strides[1];
  for (int d = 0; d < index.ndim; ++d) is[size_t(d)] = index.strides[d];
  lookup(c, weight, index, y, xs, is, weight.strides[0], weight.shape[0], 3);
}

std::vector<std::vector<DLDataType>> indexed_signatures(uint32_t bits) {
  std::vector<std::vector<DLDataType>> result;
  for (DLDataType t : ops::dtypes_in(bits & kSupported)) {
    for (DLDataType i : {dtype::i32, dtype::i64}) result.push_back({t, i, t});
  }
  return result;
}

}  // namespace

void register_layout_kernels(const oar::sdk::KernelRegistrar& registrar) {
  // Element moves: every dtype of each schema (the narrow integers included).
  auto dtypes = [](const char* op) { return ops::find_schema(op)->dtypes; };
  register_op(registrar, "transpose", transpose_kernel, same_signatures(dtypes("transpose"), 1, 1));
  register_op(registrar, "slice", slice_kernel, same_signatures(dtypes("slice"), 1, 1));
  std::vector<std::vector<DLDataType>> concat;
  for (size_t n = 1; n <= kMaxConcatInputs; ++n) {
    for (auto& signature : same_signatures(dtypes("concat"), n, 1)) concat.push_back(signature);
  }
  register_op(registrar, "concat", concat_kernel, concat);
  register_op(registrar, "index_select", index_select_kernel,
              indexed_signatures(dtypes("index_select")));
  register_op(registrar, "gather", gather_kernel, indexed_signatures(dtypes("gather")));
  register_op(registrar, "embedding", embedding_kernel, indexed_signatures(ops::kNumbers));
}

}  // namespace oar::vulkan
