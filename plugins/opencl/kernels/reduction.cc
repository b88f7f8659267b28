// Host side of the reductions (kernels/reduction.cl): the input is split into
// kept and reduced dimensions, one work-item per output element.
#include <string>

#include "kernels/kernel.h"

namespace oar::opencl {
namespace {

// Mirrors red_t of kernels/reduction.cl.
struct Reduction {
  int64_t outer_rank = 0;
  int64_t outer_shape[ops::kMaxDims] = {};
  int64_t outer_strides[ops::kMaxDims] = {};
  int64_t inner_rank = 0;
  int64_t inner_shape[ops::kMaxDims] = {};
  int64_t inner_strides[ops::kMaxDims] = {};
  int64_t outer_n = 1;
  int64_t inner_n = 1;
  int64_t x_offset = 0;
  int64_t y_offset = 0;
};

Reduction split(const View& x, const View& y, const std::vector<bool>& reduced) {
  Reduction r;
  for (int d = 0; d < x.ndim; ++d) {
    if (reduced[d]) {
      r.inner_shape[r.inner_rank] = x.shape[d];
      r.inner_strides[r.inner_rank++] = x.strides[d];
      r.inner_n *= x.shape[d];
    } else {
      r.outer_shape[r.outer_rank] = x.shape[d];
      r.outer_strides[r.outer_rank++] = x.strides[d];
      r.outer_n *= x.shape[d];
    }
  }
  r.x_offset = int64_t(x.offset);
  r.y_offset = int64_t(y.offset);
  return r;
}

void reduce_body(KernelContext& context) {
  std::string op = context.schema.name;
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  std::vector<bool> reduced(size_t(x.ndim), false);
  std::vector<int64_t> axes = context.attrs.get_ints("axes");
  if (axes.empty()) reduced.assign(size_t(x.ndim), true);
  for (int64_t axis : axes) {
    int d = normalize_axis(axis, x.ndim, op.c_str());
    if (x.ndim > 0) reduced[size_t(d)] = true;
  }
  Reduction r = split(x, y, reduced);
  if (op == "max" || op == "min") {
    for (int d = 0; d < r.inner_rank; ++d) {
      oar::sdk::require(r.inner_shape[d] != 0, OAR_STATUS_INVALID_ARGUMENT,
                        "over an empty axis there is no value to return (no identity)");
    }
  }
  if (r.outer_n == 0) return;
  std::string name = "r_" + op;
  context.launch(Source::kReduction, x.dtype, name.c_str(), r.outer_n, {x.memory, y.memory, r});
}

void arg_body(KernelContext& context) {
  std::string op = context.schema.name;
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  int axis = normalize_axis(context.attrs.get_int("axis"), x.ndim, op.c_str());
  std::vector<bool> reduced(size_t(x.ndim), false);
  if (x.ndim > 0) reduced[size_t(axis)] = true;
  Reduction r = split(x, y, reduced);
  oar::sdk::require(r.inner_n != 0, OAR_STATUS_INVALID_ARGUMENT,
                    "over an empty axis there is no value to return (no identity)");
  if (r.outer_n == 0) return;
  std::string name = "r_" + op;
  context.launch(Source::kReduction, x.dtype, name.c_str(), r.outer_n, {x.memory, y.memory, r});
}

}  // namespace

void register_reduction_kernels(const oar::sdk::KernelRegistrar& registrar) {
  for (const char* op : {"sum", "mean", "max", "min", "prod"}) {
    register_op(registrar, op, reduce_body, same_signatures(ops::find_schema(op)->dtypes, 1, 1));
  }
  std::vector<std::vector<DLDataType>> arg;
  for (DLDataType t : ops::dtypes_in(ops::kNumbers)) arg.push_back({t, dtype::i64});
  register_op(registrar, "argmax", arg_body, arg);
  register_op(registrar, "argmin", arg_body, arg);
}

}  // namespace oar::opencl
