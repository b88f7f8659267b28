// opencl kernels of the pointwise, row and index gradients (core/ops/schema_grad.cc);
// the OpenCL C side is kernels/grad.cl.
#include <string>
#include <vector>

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

void embedding_grad_body(KernelContext& context) {
  const View& dy = context.inputs[0];
  const View& index = context.inputs[1];
  const View& dw = context.outputs[0];
  const int64_t rows = dw.shape[0], width = dw.shape[1], count = index.numel();
  if (dw.numel() == 0) return;
  cl_ulong dyo = dy.offset, io = index.offset, dwo = dw.offset;
  const std::string name = std::string("embedding_grad_") + dtype_tag(index.dtype);
  context.launch(
      Source::kGrad, dw.dtype, name.c_str(), rows * width,
      {dy.memory, dyo, index.memory, io, dw.memory, dwo, rows, width, count, context.error_flag()});
}

void cross_entropy_grad_body(KernelContext& context) {
  const View& dloss = context.inputs[0];
  const View& logits = context.inputs[1];
  const View& target = context.inputs[2];
  const View& dx = context.outputs[0];
  const std::string reduction = context.attrs.get_string("reduction");
  cl_int mode = reduction == "none" ? 0 : reduction == "sum" ? 1 : 2;
  const int64_t rows = logits.shape[0], classes = logits.shape[1];
  if (dx.numel() == 0) return;
  cl_ulong dlo = dloss.offset, lo = logits.offset, to = target.offset, dxo = dx.offset;
  const std::string name = std::string("cross_entropy_grad_") + dtype_tag(target.dtype);
  context.launch(Source::kGrad, dx.dtype, name.c_str(), rows,
                 {dloss.memory, dlo, logits.memory, lo, target.memory, to, dx.memory, dxo, rows,
                  classes, mode, context.error_flag()});
}

void rotary_grad_body(KernelContext& context) {
  const View& dy = context.inputs[0];
  const View& dx = context.outputs[0];
  const int64_t n = dx.numel();
  if (n == 0) return;
  const int64_t seq = dy.shape[dy.ndim - 2], dim = dy.shape[dy.ndim - 1];
  cl_int interleaved = context.attrs.get_bool("interleaved");
  const auto& in = context.inputs;
  cl_ulong dyo = dy.offset, co = in[1].offset, so = in[2].offset, dxo = dx.offset;
  // The forward kernel (nn.cl) rotating by -angle: the transposed rotation.
  context.launch(Source::kNn, dx.dtype, "rotary", n,
                 {dy.memory, dyo, in[1].memory, co, in[2].memory, so, dx.memory, dxo, n, seq, dim,
                  interleaved, cl_int(1)});
}

}  // namespace

void register_grad_kernels(const oar::sdk::KernelRegistrar& registrar) {
  const auto two = same_signatures(ops::kFloats, 2, 1);
  for (const char* op : {"relu_grad", "sigmoid_grad", "tanh_grad", "silu_grad", "gelu_grad"}) {
    register_op(registrar, op, pointwise_body, two);
  }
  register_op(registrar, "softmax_grad", softmax_grad_body, two);
  register_op(registrar, "log_softmax_grad", softmax_grad_body, two);
  std::vector<std::vector<DLDataType>> embedding, cross_entropy;
  for (DLDataType t : ops::dtypes_in(ops::kFloats)) {
    for (DLDataType i : {dtype::i32, dtype::i64}) {
      embedding.push_back({t, i, t});
      cross_entropy.push_back({t, t, i, t});
    }
  }
  register_op(registrar, "embedding_grad", embedding_grad_body, embedding);
  register_op(registrar, "cross_entropy_grad", cross_entropy_grad_body, cross_entropy);
  register_op(registrar, "rotary_embedding_grad", rotary_grad_body,
              same_signatures(ops::kFloats, 3, 1));
}

}  // namespace oar::opencl
