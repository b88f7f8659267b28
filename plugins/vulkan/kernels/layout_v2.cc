// vulkan kernels of the operator set v2 creation and layout operators
// (core/ops/schema_layout_v2.cc); their shaders are listed in shaders/layout_v2.cmake.
// flip and expand are strided copies (map.comp: negative strides for flip,
// zero strides for expand); tril/triu run layout_v2_triangle.comp; pad is a
// fill and copies.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "oar/sdk/kernel.hpp"

namespace oar::vulkan {
namespace {

std::vector<int64_t> shape_of(const TensorRef& t) { return {t.shape, t.shape + t.ndim}; }

void flip_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  if (y.numel() == 0) return;
  std::vector<int64_t> axes = c.attrs.get_ints("axes");
  std::vector<bool> flipped(size_t(std::max(x.ndim, 1)), axes.empty());
  for (int64_t a : axes) flipped[size_t(normalize_axis(a, x.ndim))] = true;
  Operand a = as_is(x);
  for (int d = 0; d < x.ndim; ++d) {
    if (!flipped[size_t(d)] || x.shape[d] < 2) continue;
    a.offset += (x.shape[d] - 1) * x.strides[d];
    a.strides[size_t(d)] = -x.strides[d];
  }
  map(c.stream, kMapCopy, shape_of(y), a, {}, {}, as_is(y));
}

void expand_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  Operand a;
  a.tensor = &x;
  a.offset = x.offset;
  a.strides.assign(size_t(y.ndim), 0);
  const int lead = y.ndim - x.ndim;
  for (int d = lead; d < y.ndim; ++d) {
    if (x.shape[d - lead] != 1) a.strides[size_t(d)] = x.strides[d - lead];
  }
  map(c.stream, kMapCopy, shape_of(y), a, {}, {}, as_is(y));
}

void triangle_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  const int64_t n = y.numel();
  if (n == 0) return;
  const int64_t cols = y.shape[y.ndim - 1];
  const int64_t rows = y.shape[y.ndim - 2];
  Params p;
  p.add(n);
  p.add(cols);
  p.add(rows);
  p.add(std::clamp<int64_t>(c.attrs.get_int("diagonal"), -rows, cols));
  p.add(c.schema.name[3] == 'l' ? 1 : 0);  // "tril" / "triu"
  p.add(x.offset);
  p.add(y.offset);
  dispatch(c.stream, module_name("layout_v2_triangle", {y.dtype}), 0,
           {{0, x.buffer()}, {3, y.buffer()}}, p.data(), p.size(), uint64_t(n));
}

// pad as strided copies (map.comp), like the opencl plugin's: the value
// everywhere (constant), x into the interior, then for reflect and replicate
// each dimension's border slabs copied from y itself (a reversed view for
// reflect, a zero stride for replicate), dimension by dimension so that
// corners come out right. Dispatches on a stream are ordered by barriers.
void pad_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  const int64_t n = y.numel();
  if (n == 0) return;
  const std::vector<int64_t> pads = c.attrs.get_ints("pads");
  const std::string mode = c.attrs.get_string("mode");
  const int rank = y.ndim;
  if (mode == "constant" && x.numel() != n) {
    const uint64_t bits = oar::sdk::scalar_bits(c.attrs.get_float("value"), y.dtype);
    map(c.stream, kMapFill, shape_of(y), {}, {}, {}, as_is(y), int32_t(uint32_t(bits)),
        int32_t(uint32_t(bits >> 32)));
  }
  Operand interior = as_is(y);
  for (int d = 0; d < rank; ++d) interior.offset += pads[size_t(d)] * y.strides[d];
  map(c.stream, kMapCopy, shape_of(x), as_is(x), {}, {}, interior);
  if (mode == "constant") return;
  const bool reflect = mode == "reflect";
  for (int d = 0; d < rank; ++d) {
    const int64_t begin = pads[size_t(d)], end = pads[size_t(d + rank)], extent = x.shape[d];
    std::vector<int64_t> shape = shape_of(x);
    int64_t axis_base = interior.offset - begin * y.strides[d];
    for (int e = 0; e < d; ++e) {
      shape[size_t(e)] = y.shape[e];
      axis_base -= pads[size_t(e)] * y.strides[e];
    }
    struct Side {
      int64_t first, count, source;
    };
    const Side sides[2] = {
        {0, begin, reflect ? 2 * begin : begin},
        {begin + extent, end, reflect ? begin + extent - 2 : begin + extent - 1},
    };
    for (const Side& side : sides) {
      if (side.count == 0) continue;
      shape[size_t(d)] = side.count;
      Operand to = as_is(y);
      to.offset = axis_base + side.first * y.strides[d];
      Operand from = as_is(y);
      from.offset = axis_base + side.source * y.strides[d];
      from.strides[size_t(d)] = reflect ? -y.strides[d] : 0;
      map(c.stream, kMapCopy, shape, from, {}, {}, to);
    }
  }
}

void one_hot_kernel(KernelContext& c) {
  const TensorRef& index = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  const int64_t n = y.numel();
  if (n == 0) return;
  Params p;
  p.add(n);
  p.add(y.shape[y.ndim - 1]);
  p.add(index.offset);
  p.add(y.offset);
  dispatch(c.stream, module_name("layout_v2_one_hot", {y.dtype, index.dtype}), 0,
           {{0, index.buffer()}, {3, y.buffer()}}, p.data(), p.size(), uint64_t(n));
}

// y = x (map copy), then layout_v2_scatter.comp: one invocation per line of
// index along the axis.
void scatter_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& index = c.inputs[1];
  const TensorRef& src = c.inputs[2];
  const TensorRef& y = c.outputs[0];
  if (y.numel() == 0) return;
  const int axis = normalize_axis(c.attrs.get_int("axis"), y.ndim);
  map(c.stream, kMapCopy, shape_of(y), as_is(x), {}, {}, as_is(y));
  const int64_t count = index.numel();
  if (count == 0) return;
  const int64_t lines = count / index.shape[axis];
  require_loop_budget(c, uint64_t(lines), uint64_t(index.shape[axis]), c.schema.name);
  std::vector<int64_t> shape = shape_of(index);
  shape[size_t(axis)] = 1;
  Params p;
  p.add(lines);
  p.add(y.ndim);
  p.add8(shape.data(), y.ndim, 1);
  p.add8(y.strides, y.ndim, 0);
  p.add8(index.strides, y.ndim, 0);
  p.add(index.shape[axis]);
  p.add(index.strides[axis]);
  p.add(y.strides[axis]);
  p.add(y.shape[axis]);
  p.add(c.schema.name == std::string("scatter_add") ? 1 : 0);
  p.add(y.offset);
  p.add(index.offset);
  p.add(src.offset);
  dispatch(c.stream, module_name("layout_v2_scatter", {y.dtype, index.dtype}), 0,
           {{0, index.buffer()}, {1, src.buffer()}, {3, y.buffer()}}, p.data(), p.size(),
           uint64_t(lines));
}

// start + i * step (layout_v2_arange.comp); integers need integer start and step.
void arange_kernel(KernelContext& c) {
  const TensorRef& y = c.outputs[0];
  const double start = c.attrs.get_float("start"), step = c.attrs.get_float("step");
  const bool integer = y.dtype == dtype::i32 || y.dtype == dtype::i64;
  oar::sdk::require(!integer || (std::trunc(start) == start && std::trunc(step) == step &&
                                 std::fabs(start) < 0x1p63 && std::fabs(step) < 0x1p63),
                    OAR_STATUS_INVALID_ARGUMENT,
                    "arange: an integer dtype needs integer start and step within int64");
  const int64_t n = y.numel();
  if (n == 0) return;
  const uint64_t istart = integer ? uint64_t(int64_t(start)) : 0;
  const uint64_t istep = integer ? uint64_t(int64_t(step)) : 0;
  Params p;
  p.add(n);
  p.add(y.offset);
  p.add_float(float(start));
  p.add_float(float(step));
  p.add(int64_t(uint32_t(istart)));
  p.add(int64_t(uint32_t(istart >> 32)));
  p.add(int64_t(uint32_t(istep)));
  p.add(int64_t(uint32_t(istep >> 32)));
  dispatch(c.stream, module_name("layout_v2_arange", {y.dtype}), 0, {{3, y.buffer()}}, p.data(),
           p.size(), uint64_t(n));
}

// scatter's signatures by its schema's rule (kIndexed: the index input i32
// or i64), for the data dtypes |bits|.
std::vector<std::vector<DLDataType>> scatter_signatures(const char* op, uint32_t bits) {
  return oar::sdk::signatures_for(*ops::find_schema(op), bits & kSupported);
}

}  // namespace

void register_layout_v2_kernels(const oar::sdk::KernelRegistrar& registrar) {
  register_op(registrar, "flip", flip_kernel, same_signatures(ops::kAll, 1, 1));
  register_op(registrar, "tril", triangle_kernel, same_signatures(ops::kAll, 1, 1));
  register_op(registrar, "triu", triangle_kernel, same_signatures(ops::kAll, 1, 1));
  register_op(registrar, "expand", expand_kernel, same_signatures(ops::kAll, 1, 1));
  register_op(registrar, "pad", pad_kernel, same_signatures(ops::kAll, 1, 1));
  std::vector<std::vector<DLDataType>> one_hot;
  for (DLDataType i : {dtype::i32, dtype::i64}) {
    for (DLDataType t : ops::dtypes_in(ops::kAll & kSupported)) one_hot.push_back({i, t});
  }
  register_op(registrar, "one_hot", one_hot_kernel, one_hot);
  register_op(registrar, "arange", arange_kernel, same_signatures(ops::kNumbers, 0, 1));
  register_op(registrar, "scatter", scatter_kernel, scatter_signatures("scatter", ops::kAll));
  register_op(registrar, "scatter_add", scatter_kernel,
              scatter_signatures("scatter_add", ops::kNumbers));
}

}  // namespace oar::vulkan
