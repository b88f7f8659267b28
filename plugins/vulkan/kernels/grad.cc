// vulkan kernels of the pointwise, row and index gradients (core/ops/schema_grad.cc);
// their shaders are listed in shaders/grad.cmake (grad_pointwise.comp, grad_rows.comp).
#include <string>

#include "kernels/kernel.h"

namespace oar::vulkan {
namespace {

void pointwise_kernel(KernelContext& c) {
  const TensorRef& dy = c.inputs[0];
  const TensorRef& b = c.inputs[1];
  const TensorRef& dx = c.outputs[0];
  const std::string name = c.schema.name;
  int op = name == "relu_grad"      ? 0
           : name == "sigmoid_grad" ? 1
           : name == "tanh_grad"    ? 2
           : name == "silu_grad"    ? 3
                                    : 4;
  if (op == 4 && c.attrs.get_string("approximate") == "tanh") op = 5;
  const int64_t n = dx.numel();
  if (n == 0) return;
  Params p;
  p.add(n);
  p.add(dy.offset);
  p.add(b.offset);
  p.add(dx.offset);
  dispatch(c.stream, module_name("grad_pointwise", {dx.dtype}), op,
           {{0, dy.buffer()}, {1, b.buffer()}, {3, dx.buffer()}}, p.data(), p.size(), uint64_t(n));
}

void softmax_grad_kernel(KernelContext& c) {
  const TensorRef& dy = c.inputs[0];
  const TensorRef& y = c.inputs[1];
  const TensorRef& dx = c.outputs[0];
  if (dx.numel() == 0) return;
  const int axis = normalize_axis(c.attrs.get_int("axis"), dy.ndim);
  const int64_t length = dy.ndim == 0 ? 1 : dy.shape[axis];
  int64_t inner = 1, outer = 1;
  for (int d = 0; d < dy.ndim; ++d) {
    if (d < axis) outer *= dy.shape[d];
    if (d > axis) inner *= dy.shape[d];
  }
  const int64_t rows = outer * inner;
  require_loop_budget(c, uint64_t(rows), 2 * uint64_t(length), "a row");
  Params p;
  p.add(rows);
  p.add(inner);
  p.add(length);
  p.add(dy.offset);
  p.add(y.offset);
  p.add(dx.offset);
  const int op = std::string(c.schema.name) == "log_softmax_grad" ? 1 : 0;
  dispatch(c.stream, module_name("grad_rows", {dx.dtype}), op,
           {{0, dy.buffer()}, {1, y.buffer()}, {3, dx.buffer()}}, p.data(), p.size(),
           uint64_t(rows));
}

}  // namespace

void register_grad_kernels(const oar::sdk::KernelRegistrar& registrar) {
  const auto two = same_signatures(ops::kFloats, 2, 1);
  for (const char* op : {"relu_grad", "sigmoid_grad", "tanh_grad", "silu_grad", "gelu_grad"}) {
    register_op(registrar, op, &pointwise_kernel, two);
  }
  register_op(registrar, "softmax_grad", &softmax_grad_kernel, two);
  register_op(registrar, "log_softmax_grad", &softmax_grad_kernel, two);
}

}  // namespace oar::vulkan
