// Host side of the layout kernels: copy (any strides), transpose, slice and
// concat (copies between views of the same buffers), and the indexing
// operators. All move elements bit for bit.
#include <string>

#include "kernels/kernel.h"

namespace oar::opencl {
namespace {

constexpr size_t kMaxConcatInputs = 32;

void copy_body(KernelContext& context) {
  copy_view(context, context.inputs[0], context.outputs[0]);
}

void transpose_body(KernelContext& context) {
  const View& x = context.inputs[0];
  std::vector<int64_t> perm = context.attrs.get_ints("perm");
  oar::sdk::require(int(perm.size()) == x.ndim, OAR_STATUS_INVALID_ARGUMENT,
                    "transpose: perm must name every dimension once");
  // y[i...] = x[j...] with j[perm[d]] = i[d]: a view of x with permuted strides.
  View view = x;
  for (int d = 0; d < x.ndim; ++d) {
    int source = normalize_axis(perm[d], x.ndim, "transpose");
    view.shape[d] = x.shape[source];
    view.strides[d] = x.strides[source];
  }
  copy_view(context, view, context.outputs[0]);
}

void slice_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  int axis = normalize_axis(context.attrs.get_int("axis"), x.ndim, "slice");
  oar::sdk::require(x.ndim >= 1, OAR_STATUS_INVALID_ARGUMENT, "slice: x needs rank >= 1");
  int64_t n = x.shape[axis];
  int64_t start = context.attrs.get_int("start");
  int64_t step = context.attrs.get_int("step");
  oar::sdk::require(step > 0, OAR_STATUS_INVALID_ARGUMENT, "slice: step must be positive");
  if (start < 0) start += n;
  if (start < 0) start = 0;
  if (start > n) start = n;
  if (y.numel() == 0) return;
  View view = x;
  view.shape[axis] = y.shape[axis];
  view.strides[axis] = x.strides[axis] * step;
  view.offset = x.offset + uint64_t(start * x.strides[axis]) * x.element_size();
  copy_view(context, view, y);
}

void concat_body(KernelContext& context) {
  const View& y = context.outputs[0];
  int axis = normalize_axis(context.attrs.get_int("axis"), y.ndim, "concat");
  int64_t at = 0;
  for (const View& x : context.inputs) {
    View to = y;
    for (int d = 0; d < y.ndim; ++d) to.shape[d] = x.shape[d];
    to.offset = y.offset + uint64_t(at * y.strides[axis]) * y.element_size();
    at += x.shape[axis];
    copy_view(context, x, to);
  }
}

void index_select_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& index = context.inputs[1];
  const View& y = context.outputs[0];
  int axis = normalize_axis(context.attrs.get_int("axis"), x.ndim, "index_select");
  int64_t outer = 1;
  int64_t inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int d = axis + 1; d < x.ndim; ++d) inner *= x.shape[d];
  int64_t extent = x.ndim == 0 ? 1 : x.shape[axis];
  int64_t m = index.numel();
  int64_t n = y.numel();
  if (n == 0) return;
  cl_ulong xo = x.offset, io = index.offset, yo = y.offset;
  std::string name = std::string("index_select_") + dtype_tag(index.dtype);
  context.launch(Source::kElementwise, x.dtype, name.c_str(), n,
                 {x.memory, xo, index.memory, io, y.memory, yo, outer, m, inner, extent,
                  context.error_flag()});
}

void gather_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& index = context.inputs[1];
  const View& y = context.outputs[0];
  int axis = normalize_axis(context.attrs.get_int("axis"), x.ndim, "gather");
  int64_t n = y.numel();
  if (n == 0) return;
  Geo g;
  g.rank = y.ndim;
  g.numel = n;
  for (int d = 0; d < y.ndim; ++d) {
    g.shape[d] = y.shape[d];
    g.strides[0][d] = y.strides[d];
    g.strides[1][d] = d == axis ? 0 : x.strides[d];
  }
  g.offsets[0] = int64_t(y.offset);
  g.offsets[1] = int64_t(x.offset);
  int64_t axis_stride = x.ndim == 0 ? 0 : x.strides[axis];
  int64_t extent = x.ndim == 0 ? 1 : x.shape[axis];
  cl_ulong io = index.offset;
  std::string name = std::string("gather_") + dtype_tag(index.dtype);
  context.launch(
      Source::kElementwise, x.dtype, name.c_str(), n,
      {x.memory, index.memory, io, y.memory, g, axis_stride, extent, context.error_flag()});
}

void embedding_body(KernelContext& context) {
  const View& w = context.inputs[0];
  const View& index = context.inputs[1];
  const View& y = context.outputs[0];
  oar::sdk::require(w.ndim == 2, OAR_STATUS_INVALID_ARGUMENT, "embedding: weight must be [V, D]");
  int64_t n = y.numel();
  if (n == 0) return;
  int64_t count = index.numel();
  int64_t dim = w.shape[1];
  int64_t rows = w.shape[0];
  cl_ulong wo = w.offset, io = index.offset, yo = y.offset;
  std::string name = std::string("embedding_") + dtype_tag(index.dtype);
  context.launch(
      Source::kElementwise, w.dtype, name.c_str(), n,
      {w.memory, wo, index.memory, io, y.memory, yo, count, dim, rows, context.error_flag()});
}

std::vector<std::vector<DLDataType>> indexed_signatures(uint32_t bits) {
  std::vector<std::vector<DLDataType>> result;
  for (DLDataType t : ops::dtypes_in(bits)) {
    for (DLDataType i : {dtype::i32, dtype::i64}) result.push_back({t, i, t});
  }
  return result;
}

}  // namespace

void copy_view(const KernelContext& context, const View& from, const View& to) {
  int64_t n = to.numel();
  if (n == 0) return;
  Geo g;
  g.rank = to.ndim;
  g.numel = n;
  for (int d = 0; d < to.ndim; ++d) {
    g.shape[d] = to.shape[d];
    g.strides[0][d] = to.strides[d];
    g.strides[1][d] = from.strides[d];
  }
  g.offsets[0] = int64_t(to.offset);
  g.offsets[1] = int64_t(from.offset);
  if (from.contiguous() && to.contiguous() && from.memory != to.memory) {
    // A plain byte copy is the fastest path the runtime has.
    uint64_t bytes = uint64_t(n) * to.element_size();
    context.copy(from.memory, from.offset, to.memory, to.offset, bytes);
    return;
  }
  context.launch(Source::kElementwise, to.dtype, "copy_s", n, {from.memory, to.memory, g});
}

void register_layout_kernels(const oar::sdk::KernelRegistrar& registrar) {
  // Element moves: every dtype of each schema (the narrow integers included).
  auto dtypes = [](const char* op) { return ops::find_schema(op)->dtypes; };
  register_op(registrar, "copy", copy_body, same_signatures(dtypes("copy"), 1, 1),
              OAR_KERNEL_FLAG_STRIDED_INPUTS);
  register_op(registrar, "transpose", transpose_body, same_signatures(dtypes("transpose"), 1, 1));
  register_op(registrar, "slice", slice_body, same_signatures(dtypes("slice"), 1, 1));
  std::vector<std::vector<DLDataType>> concat;
  for (size_t n = 1; n <= kMaxConcatInputs; ++n) {
    for (auto& signature : same_signatures(dtypes("concat"), n, 1)) concat.push_back(signature);
  }
  register_op(registrar, "concat", concat_body, concat);
  register_op(registrar, "index_select", index_select_body,
              indexed_signatures(dtypes("index_select")));
  register_op(registrar, "gather", gather_body, indexed_signatures(dtypes("gather")));
  register_op(registrar, "embedding", embedding_body, indexed_signatures(ops::kNumbers));
}

}  // namespace oar::opencl
