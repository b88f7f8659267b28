// vulkan kernels of the operator set v2 math operators (core/ops/schema_math_v2.cc);
// their shaders are listed in shaders/math_v2.cmake.
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel.h"

namespace oar::vulkan {
namespace {

// shaders/math_v2_map.comp's operation codes.
int op_code(const std::string& name) {
  static const std::pair<const char*, int> kCodes[] = {
      {"clip", 1},       {"fmod", 2},        {"remainder", 3},   {"logical_and", 4},
      {"logical_or", 5}, {"logical_xor", 6}, {"logical_not", 7}, {"bitwise_and", 4},
      {"bitwise_or", 5}, {"bitwise_xor", 6}, {"bitwise_not", 7},
  };
  for (const auto& [op, code] : kCodes) {
    if (name == op) return code;
  }
  throw oar::sdk::Error(OAR_STATUS_INTERNAL, "no math_v2_map.comp operation for " + name);
}

// Every input broadcast to the output's shape, in one pass of math_v2_map.comp
// (map.comp's parameter layout: a, b, c, then y).
void elementwise_kernel(KernelContext& c) {
  const TensorRef& y = c.outputs[0];
  const std::vector<int64_t> shape(y.shape, y.shape + y.ndim);
  const int64_t n = y.numel();
  if (n == 0) return;
  Operand operands[4];
  for (size_t i = 0; i < c.inputs.size(); ++i) operands[i] = broadcast(c.inputs[i], shape);
  operands[3] = as_is(y);
  Params p;
  p.add(n);
  p.add(int64_t(shape.size()));
  p.add8(shape.data(), int(shape.size()), 1);
  for (const Operand& o : operands) {
    p.add(o.offset);
    p.add8(o.strides.data(), int(o.strides.size()), 0);
  }
  std::vector<Binding> bindings;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    bindings.push_back({uint32_t(i), c.inputs[i].buffer()});
  }
  bindings.push_back({3, y.buffer()});
  dispatch(c.stream, module_name("math_v2_map", {y.dtype}), op_code(c.schema.name), bindings,
           p.data(), p.size(), uint64_t(n));
}

// cumsum/cumprod: one invocation per row (shaders/math_v2_scan.comp).
void scan_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  if (y.numel() == 0) return;
  const int axis = normalize_axis(c.attrs.get_int("axis"), x.ndim);
  int64_t before = 1, len = 1, after = 1;
  for (int d = 0; d < x.ndim; ++d) {
    (d < axis ? before : d == axis ? len : after) *= x.shape[d];
  }
  const int64_t rows = before * after;
  require_loop_budget(c, uint64_t(rows), 2 * uint64_t(len), "a row");
  Params p;
  p.add(rows);
  p.add(len);
  p.add(after);
  p.add(x.offset);
  p.add(y.offset);
  p.add(c.attrs.get_bool("exclusive") ? 1 : 0);
  p.add(c.attrs.get_bool("reverse") ? 1 : 0);
  const int op = std::string(c.schema.name) == "cumprod" ? 1 : 0;
  dispatch(c.stream, module_name("math_v2_scan", {y.dtype}), op, {{0, x.buffer()}, {3, y.buffer()}},
           p.data(), p.size(), uint64_t(rows));
}

// logsumexp: one invocation per output (shaders/math_v2_logsumexp.comp); the
// kept and the reduced dimensions of contiguous x as strided_offset reads
// them (row-major: the outermost first).
void logsumexp_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  const std::vector<int64_t> axes = c.attrs.get_ints("axes");
  bool reduce[ops::kMaxDims] = {};
  for (int d = 0; d < x.ndim; ++d) reduce[d] = axes.empty();
  for (int64_t a : axes) {
    if (x.ndim > 0) reduce[normalize_axis(a, x.ndim)] = true;
  }
  const int64_t n = y.numel();
  if (n == 0) return;
  const std::vector<int64_t> strides = x.contiguous_strides();
  std::vector<int64_t> kept_shape, kept_strides, reduced_shape, reduced_strides;
  int64_t count = 1;
  for (int d = 0; d < x.ndim; ++d) {
    (reduce[d] ? reduced_shape : kept_shape).push_back(x.shape[d]);
    (reduce[d] ? reduced_strides : kept_strides).push_back(strides[size_t(d)]);
    if (reduce[d]) count *= x.shape[d];
  }
  require_loop_budget(c, uint64_t(n), 2 * uint64_t(count) * uint64_t(reduced_shape.size() + 1),
                      "the reduced elements of an output");
  Params p;
  p.add(n);
  p.add(int64_t(kept_shape.size()));
  p.add8(kept_shape.data(), int(kept_shape.size()), 1);
  p.add8(kept_strides.data(), int(kept_strides.size()), 0);
  p.add(int64_t(reduced_shape.size()));
  p.add8(reduced_shape.data(), int(reduced_shape.size()), 1);
  p.add8(reduced_strides.data(), int(reduced_strides.size()), 0);
  p.add(count);
  p.add(x.offset);
  p.add(y.offset);
  dispatch(c.stream, module_name("math_v2_logsumexp", {y.dtype}), 0,
           {{0, x.buffer()}, {3, y.buffer()}}, p.data(), p.size(), uint64_t(n));
}

// sort, argsort, topk: one invocation per element (shaders/math_v2_rank.comp).
void order_kernel(KernelContext& c) {
  const std::string op = c.schema.name;
  const TensorRef& x = c.inputs[0];
  const bool values = op != "argsort";
  const TensorRef& v = c.outputs[0];
  const TensorRef& ind = c.outputs[values ? 1 : 0];
  const int axis = normalize_axis(c.attrs.get_int("axis"), x.ndim);
  int64_t before = 1, n = 1, after = 1;
  for (int d = 0; d < x.ndim; ++d) {
    (d < axis ? before : d == axis ? n : after) *= x.shape[d];
  }
  const bool descending =
      op == "topk" ? c.attrs.get_bool("largest") : c.attrs.get_bool("descending");
  const int64_t k = op == "topk" ? c.attrs.get_int("k") : n;
  const int64_t total = before * n * after;
  if (total == 0 || k == 0) return;
  require_loop_budget(c, uint64_t(total), uint64_t(n), "a row");
  Params p;
  p.add(total);
  p.add(n);
  p.add(after);
  p.add(k);
  p.add(x.offset);
  p.add(v.offset);
  p.add(ind.offset);
  p.add(descending ? 1 : 0);
  p.add(values ? 1 : 0);
  std::vector<Binding> bindings = {{0, x.buffer()}, {2, ind.buffer()}};
  if (values) bindings.push_back({1, v.buffer()});
  dispatch(c.stream, module_name("math_v2_rank", {x.dtype}), 0, bindings, p.data(), p.size(),
           uint64_t(total));
}

}  // namespace

void register_math_v2_kernels(const oar::sdk::KernelRegistrar& registrar) {
  for (const char* op :
       {"clip", "remainder", "fmod", "logical_and", "logical_or", "logical_xor", "logical_not",
        "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"}) {
    const ops::OpSchema& schema = *ops::find_schema(op);
    register_op(registrar, op, elementwise_kernel,
                same_signatures(schema.dtypes, schema.inputs.size(), 1));
  }
  std::vector<std::vector<DLDataType>> with_indices, indices_only;
  for (DLDataType t : ops::dtypes_in(ops::kNumbers & kSupported)) {
    with_indices.push_back({t, t, dtype::i64});
    indices_only.push_back({t, dtype::i64});
  }
  register_op(registrar, "sort", order_kernel, with_indices);
  register_op(registrar, "topk", order_kernel, with_indices);
  register_op(registrar, "argsort", order_kernel, indices_only);
  register_op(registrar, "logsumexp", logsumexp_kernel,
              same_signatures(ops::find_schema("logsumexp")->dtypes, 1, 1));
  for (const char* op : {"cumsum", "cumprod"}) {
    register_op(registrar, op, scan_kernel, same_signatures(ops::find_schema(op)->dtypes, 1, 1));
  }
}

}  // namespace oar::vulkan
