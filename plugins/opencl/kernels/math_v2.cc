// opencl kernels of the operator set v2 math operators (core/ops/schema_math_v2.cc);
// the OpenCL C side is kernels/math_v2.cl.
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel.h"

namespace oar::opencl {
namespace {

// The output and every input of |context| as a geo_t, each input broadcast to
// the output's shape (size-1 and missing dimensions get stride 0).
Geo broadcast_geo(const KernelContext& context) {
  const View& y = context.outputs[0];
  Geo g;
  g.rank = y.ndim;
  g.numel = y.numel();
  for (int d = 0; d < y.ndim; ++d) {
    g.shape[d] = y.shape[d];
    g.strides[0][d] = y.strides[d];
  }
  g.offsets[0] = int64_t(y.offset);
  for (size_t i = 0; i < context.inputs.size(); ++i) {
    const View& x = context.inputs[i];
    const int shift = y.ndim - x.ndim;
    for (int d = 0; d < y.ndim; ++d) {
      const int k = d - shift;
      g.strides[i + 1][d] = (k < 0 || x.shape[k] == 1) ? 0 : x.strides[k];
    }
    g.offsets[i + 1] = int64_t(x.offset);
  }
  return g;
}

// The kernel of math_v2.cl for each operator.
const char* kernel_of(const std::string& op) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"clip", "m_clip"},       {"remainder", "m_remainder"}, {"fmod", "m_fmod"},
      {"logical_and", "m_and"}, {"logical_or", "m_or"},       {"logical_xor", "m_xor"},
      {"logical_not", "m_not"}, {"bitwise_and", "m_and"},     {"bitwise_or", "m_or"},
      {"bitwise_xor", "m_xor"}, {"bitwise_not", "m_not"},
  };
  for (const auto& [name, kernel] : kNames) {
    if (op == name) return kernel;
  }
  throw oar::sdk::Error(OAR_STATUS_INTERNAL, "opencl: no math_v2 kernel for " + op);
}

void elementwise_body(KernelContext& context) {
  const View& y = context.outputs[0];
  const int64_t n = y.numel();
  if (n == 0) return;
  const Geo g = broadcast_geo(context);
  const char* kernel = kernel_of(context.schema.name);
  const auto& in = context.inputs;
  switch (in.size()) {
    case 1:
      context.launch(Source::kMathV2, y.dtype, kernel, n, {in[0].memory, y.memory, g});
      return;
    case 2:
      context.launch(Source::kMathV2, y.dtype, kernel, n,
                     {in[0].memory, in[1].memory, y.memory, g});
      return;
    default:
      context.launch(Source::kMathV2, y.dtype, kernel, n,
                     {in[0].memory, in[1].memory, in[2].memory, y.memory, g});
  }
}

// cumsum/cumprod: one work-item per row (math_v2.cl's m_scan).
void scan_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  if (y.numel() == 0) return;
  const int axis = normalize_axis(context.attrs.get_int("axis"), x.ndim, "axis");
  cl_long before = 1, len = 1, after = 1;
  for (int d = 0; d < x.ndim; ++d) {
    (d < axis ? before : d == axis ? len : after) *= x.shape[d];
  }
  const cl_long rows = before * after;
  const cl_ulong xo = x.offset, yo = y.offset;
  const cl_int product = std::string(context.schema.name) == "cumprod";
  const cl_int exclusive = context.attrs.get_bool("exclusive");
  const cl_int reverse = context.attrs.get_bool("reverse");
  context.launch(Source::kMathV2, y.dtype, "m_scan", rows,
                 {x.memory, xo, y.memory, yo, rows, len, after, product, exclusive, reverse});
}

// Mirrors red_t of kernels/math_v2.cl (all fields 64-bit).
struct Red {
  int64_t kept = 0, reduced = 0, kept_count = 1, reduced_count = 1;
  int64_t kept_shape[ops::kMaxDims] = {}, kept_strides[ops::kMaxDims] = {};
  int64_t reduced_shape[ops::kMaxDims] = {}, reduced_strides[ops::kMaxDims] = {};
};

// logsumexp: one work-item per output, over the reduced elements of x.
void logsumexp_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  const std::vector<int64_t> axes = context.attrs.get_ints("axes");
  bool reduce[ops::kMaxDims] = {};
  for (int d = 0; d < x.ndim; ++d) reduce[d] = axes.empty();
  for (int64_t a : axes) {
    if (x.ndim > 0) reduce[normalize_axis(a, x.ndim, "axes")] = true;
  }
  if (y.numel() == 0) return;
  Red g;
  int64_t stride = 1;
  for (int d = x.ndim - 1; d >= 0; --d) {  // innermost first
    if (reduce[d]) {
      g.reduced_shape[g.reduced] = x.shape[d];
      g.reduced_strides[g.reduced++] = stride;
      g.reduced_count *= x.shape[d];
    } else {
      g.kept_shape[g.kept] = x.shape[d];
      g.kept_strides[g.kept++] = stride;
      g.kept_count *= x.shape[d];
    }
    stride *= x.shape[d];
  }
  const cl_ulong xo = x.offset, yo = y.offset;
  context.launch(Source::kMathV2, y.dtype, "m_logsumexp", g.kept_count,
                 {x.memory, xo, y.memory, yo, g});
}

// sort, argsort, topk: one work-item per element (math_v2.cl's m_rank).
void order_body(KernelContext& context) {
  const std::string op = context.schema.name;
  const View& x = context.inputs[0];
  const bool values = op != "argsort";
  const View& v = context.outputs[0];
  const View& ind = context.outputs[values ? 1 : 0];
  const int axis = normalize_axis(context.attrs.get_int("axis"), x.ndim, "axis");
  cl_long before = 1, n = 1, after = 1;
  for (int d = 0; d < x.ndim; ++d) {
    (d < axis ? before : d == axis ? n : after) *= x.shape[d];
  }
  const cl_int descending =
      op == "topk" ? context.attrs.get_bool("largest") : context.attrs.get_bool("descending");
  const cl_long k = op == "topk" ? context.attrs.get_int("k") : n;
  const cl_long total = before * n * after;
  if (total == 0 || k == 0) return;
  const cl_ulong xo = x.offset, vo = v.offset, io = ind.offset;
  const cl_int write_values = values;
  context.launch(
      Source::kMathV2, x.dtype, "m_rank", total,
      {x.memory, xo, v.memory, vo, ind.memory, io, total, n, after, k, descending, write_values});
}

}  // namespace

void register_math_v2_kernels(const oar::sdk::KernelRegistrar& registrar) {
  for (const char* op :
       {"clip", "remainder", "fmod", "logical_and", "logical_or", "logical_xor", "logical_not",
        "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"}) {
    const ops::OpSchema& schema = *ops::find_schema(op);
    register_op(registrar, op, elementwise_body,
                same_signatures(schema.dtypes, schema.inputs.size(), 1));
  }
  std::vector<std::vector<DLDataType>> with_indices, indices_only;
  for (DLDataType t : ops::dtypes_in(ops::kNumbers)) {
    with_indices.push_back({t, t, dtype::i64});
    indices_only.push_back({t, dtype::i64});
  }
  register_op(registrar, "sort", order_body, with_indices);
  register_op(registrar, "topk", order_body, with_indices);
  register_op(registrar, "argsort", order_body, indices_only);
  register_op(registrar, "logsumexp", logsumexp_body,
              same_signatures(ops::find_schema("logsumexp")->dtypes, 1, 1));
  for (const char* op : {"cumsum", "cumprod"}) {
    register_op(registrar, op, scan_body, same_signatures(ops::find_schema(op)->dtypes, 1, 1));
  }
}

}  // namespace oar::opencl
