// opencl kernels of the operator set v2 creation and layout operators
// (core/ops/schema_layout_v2.cc); the OpenCL C side is kernels/layout_v2.cl.
// flip and expand are copies between views of x and y (copy_view: negative
// strides for flip, zero strides for expand); tril/triu have a kernel; pad
// is a fill and copies.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace oar::opencl {
namespace {

void flip_body(KernelContext& context) {
  View from = context.inputs[0];
  if (from.numel() == 0) return;
  std::vector<int64_t> axes = context.attrs.get_ints("axes");
  std::vector<bool> flipped(size_t(std::max(from.ndim, 1)), axes.empty());
  for (int64_t a : axes) flipped[size_t(normalize_axis(a, from.ndim, "flip"))] = true;
  for (int d = 0; d < from.ndim; ++d) {
    if (!flipped[size_t(d)] || from.shape[d] < 2) continue;
    from.offset += uint64_t((from.shape[d] - 1) * from.strides[d]) * from.element_size();
    from.strides[d] = -from.strides[d];
  }
  copy_view(context, from, context.outputs[0]);
}

void expand_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  View from = y;
  from.memory = x.memory;
  from.offset = x.offset;
  const int lead = y.ndim - x.ndim;
  for (int d = 0; d < y.ndim; ++d) {
    from.strides[d] = d < lead || x.shape[d - lead] == 1 ? 0 : x.strides[d - lead];
  }
  copy_view(context, from, y);
}

void triangle_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  const int64_t n = y.numel();
  if (n == 0) return;
  const int64_t cols = y.shape[y.ndim - 1];
  const int64_t rows = y.shape[y.ndim - 2];
  const int64_t diagonal = std::clamp<int64_t>(context.attrs.get_int("diagonal"), -rows, cols);
  const cl_int lower = context.schema.name[3] == 'l' ? 1 : 0;  // "tril" / "triu"
  cl_ulong xo = x.offset, yo = y.offset;
  context.launch(Source::kLayoutV2, y.dtype, "triangle", n,
                 {x.memory, xo, y.memory, yo, n, cols, rows, diagonal, lower});
}

// pad as copies: the value everywhere (constant), x into the interior, then
// for reflect and replicate each dimension's two border slabs copied from y
// itself (a reversed view for reflect, a zero stride for replicate). Slabs
// of dimension d span the full extent of the dimensions before it, already
// padded, so corners come out right; a slab never overlaps what it reads.
void pad_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  const int64_t n = y.numel();
  if (n == 0) return;
  const std::vector<int64_t> pads = context.attrs.get_ints("pads");
  const std::string mode = context.attrs.get_string("mode");
  const int rank = y.ndim;
  const uint64_t size = y.element_size();
  if (mode == "constant" && x.numel() != n) {
    const uint64_t bits = oar::sdk::scalar_bits(context.attrs.get_float("value"), y.dtype);
    context.fill(y.memory, y.offset, &bits, size, uint64_t(n) * size);
  }
  View interior = y;
  for (int d = 0; d < rank; ++d) {
    interior.shape[d] = x.shape[d];
    interior.offset += uint64_t(pads[size_t(d)] * y.strides[d]) * size;
  }
  copy_view(context, x, interior);
  if (mode == "constant") return;
  const bool reflect = mode == "reflect";
  for (int d = 0; d < rank; ++d) {
    const int64_t begin = pads[size_t(d)], end = pads[size_t(d + rank)], extent = x.shape[d];
    // y's dimensions before d in full, d's slab, x's extents after it.
    View slab = interior;
    for (int e = 0; e < d; ++e) {
      slab.shape[e] = y.shape[e];
      slab.offset -= uint64_t(pads[size_t(e)] * y.strides[e]) * size;
    }
    const uint64_t axis_base = slab.offset - uint64_t(begin * y.strides[d]) * size;
    struct Side {
      int64_t first, count, source;
    };
    const Side sides[2] = {
        {0, begin, reflect ? 2 * begin : begin},
        {begin + extent, end, reflect ? begin + extent - 2 : begin + extent - 1},
    };
    for (const Side& side : sides) {
      if (side.count == 0) continue;
      View to = slab;
      to.shape[d] = side.count;
      to.offset = axis_base + uint64_t(side.first * y.strides[d]) * size;
      View from = to;
      from.offset = axis_base + uint64_t(side.source * y.strides[d]) * size;
      from.strides[d] = reflect ? -y.strides[d] : 0;
      copy_view(context, from, to);
    }
  }
}

void one_hot_body(KernelContext& context) {
  const View& index = context.inputs[0];
  const View& y = context.outputs[0];
  const int64_t n = y.numel();
  if (n == 0) return;
  const int64_t classes = y.shape[y.ndim - 1];
  cl_ulong io = index.offset, yo = y.offset;
  const char* kernel = index.dtype == dtype::i32 ? "one_hot_i32" : "one_hot_i64";
  context.launch(Source::kLayoutV2, y.dtype, kernel, n,
                 {index.memory, io, y.memory, yo, n, classes, context.error_flag()});
}

// y = x (copy_view), then one work-item per line of index along the axis.
void scatter_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& index = context.inputs[1];
  const View& src = context.inputs[2];
  const View& y = context.outputs[0];
  if (y.numel() == 0) return;
  const int axis = normalize_axis(context.attrs.get_int("axis"), y.ndim, context.schema.name);
  copy_view(context, x, y);
  const int64_t count = index.numel();
  if (count == 0) return;
  Geo g;
  g.rank = y.ndim;
  g.numel = count / index.shape[axis];
  for (int d = 0; d < y.ndim; ++d) {
    g.shape[d] = d == axis ? 1 : index.shape[d];
    g.strides[0][d] = y.strides[d];
    g.strides[1][d] = index.strides[d];
  }
  g.offsets[0] = int64_t(y.offset);
  g.offsets[1] = int64_t(index.offset);
  g.offsets[2] = int64_t(src.offset);
  const int64_t along = index.shape[axis], index_step = index.strides[axis];
  const int64_t y_step = y.strides[axis], bound = y.shape[axis];
  const cl_int add = context.schema.name == std::string("scatter_add") ? 1 : 0;
  const char* kernel = index.dtype == dtype::i32 ? "scatter_i32" : "scatter_i64";
  context.launch(Source::kLayoutV2, y.dtype, kernel, g.numel,
                 {index.memory, src.memory, y.memory, g, along, index_step, y_step, bound, add,
                  context.error_flag()});
}

// start + i * step (see layout_v2.cl); integers need integer start and step.
void arange_body(KernelContext& context) {
  const View& y = context.outputs[0];
  const double start = context.attrs.get_float("start"), step = context.attrs.get_float("step");
  const bool integer = y.dtype == dtype::i32 || y.dtype == dtype::i64;
  oar::sdk::require(!integer || (std::trunc(start) == start && std::trunc(step) == step &&
                                 std::fabs(start) < 0x1p63 && std::fabs(step) < 0x1p63),
                    OAR_STATUS_INVALID_ARGUMENT,
                    "arange: an integer dtype needs integer start and step within int64");
  const int64_t n = y.numel();
  if (n == 0) return;
  const int64_t istart = integer ? int64_t(start) : 0, istep = integer ? int64_t(step) : 0;
  const float fstart = float(start), fstep = float(step);
  cl_ulong yo = y.offset;
  context.launch(Source::kLayoutV2, y.dtype, "arange", n,
                 {y.memory, yo, n, fstart, fstep, real_arg(context.real(start)),
                  real_arg(context.real(step)), istart, istep});
}

// scatter's signatures by its schema's rule (kIndexed: the index input i32
// or i64), for the data dtypes |bits|.
std::vector<std::vector<DLDataType>> scatter_signatures(const char* op, uint32_t bits) {
  return oar::sdk::signatures_for(*ops::find_schema(op), bits);
}

}  // namespace

void register_layout_v2_kernels(const oar::sdk::KernelRegistrar& registrar) {
  register_op(registrar, "flip", flip_body, same_signatures(ops::kAll, 1, 1));
  register_op(registrar, "tril", triangle_body, same_signatures(ops::kAll, 1, 1));
  register_op(registrar, "triu", triangle_body, same_signatures(ops::kAll, 1, 1));
  register_op(registrar, "expand", expand_body, same_signatures(ops::kAll, 1, 1));
  register_op(registrar, "pad", pad_body, same_signatures(ops::kAll, 1, 1));
  std::vector<std::vector<DLDataType>> one_hot;
  for (DLDataType i : {dtype::i32, dtype::i64}) {
    for (DLDataType t : ops::dtypes_in(ops::kAll)) one_hot.push_back({i, t});
  }
  register_op(registrar, "one_hot", one_hot_body, one_hot);
  register_op(registrar, "arange", arange_body, same_signatures(ops::kNumbers, 0, 1));
  register_op(registrar, "scatter", scatter_body, scatter_signatures("scatter", ops::kAll));
  register_op(registrar, "scatter_add", scatter_body,
              scatter_signatures("scatter_add", ops::kNumbers));
}

}  // namespace oar::opencl
