// opencl kernels of the pointwise, row and index gradients (core/ops/schema_grad.cc);
// the OpenCL C side is kernels/grad.cl.
#include <string>

#include "kernels/kernel.h"

namespace oar::opencl {
namespace {

void pointwise_body(KernelContext& context) {
  const View& dy = context.inputs[0];
  const View& b = context.inputs[1];
  const View& dx = context.outputs[0];
  const std::string name = context.schema.name;
  cl_int op = name == "relu_grad"      ? 0
              : name == "sigmoid_grad" ? 1
              : name == "tanh_grad"    ? 2
              : name == "silu_grad"    ? 3
                                       : 4;
  if (op == 4 && context.attrs.get_string("approximate") == "tanh") op = 5;
  const int64_t n = dx.numel();
  if (n == 0) return;
  cl_ulong dyo = dy.offset, bo = b.offset, dxo = dx.offset;
  context.launch(Source::kGrad, dx.dtype, "pointwise_grad", n,
                 {dy.memory, dyo, b.memory, bo, dx.memory, dxo, n, op});
}

void softmax_grad_body(KernelContext& context) {
  const View& dy = context.inputs[0];
  const View& y = context.inputs[1];
  const View& dx = context.outputs[0];
  int axis = normalize_axis(context.attrs.get_int("axis"), dy.ndim, context.schema.name);
  int64_t outer = 1, extent = 1, inner = 1;
  for (int d = 0; d < dy.ndim; ++d) {
    if (d < axis) outer *= dy.shape[d];
    if (d == axis) extent = dy.shape[d];
    if (d > axis) inner *= dy.shape[d];
  }
  if (dx.numel() == 0) return;
  cl_ulong dyo = dy.offset, yo = y.offset, dxo = dx.offset;
  cl_int take_log = std::string(context.schema.name) == "log_softmax_grad";
  context.launch(Source::kGrad, dx.dtype, "softmax_grad", outer * inner,
                 {dy.memory, dyo, y.memory, yo, dx.memory, dxo, outer, extent, inner, take_log});
}

}  // namespace

void register_grad_kernels(const oar::sdk::KernelRegistrar& registrar) {
  const auto two = same_signatures(ops::kFloats, 2, 1);
  for (const char* op : {"relu_grad", "sigmoid_grad", "tanh_grad", "silu_grad", "gelu_grad"}) {
    register_op(registrar, op, pointwise_body, two);
  }
  register_op(registrar, "softmax_grad", softmax_grad_body, two);
  register_op(registrar, "log_softmax_grad", softmax_grad_body, two);
}

}  // namespace oar::opencl
