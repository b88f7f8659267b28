// vulkan kernels of the pointwise, row and index gradients (core/ops/schema_grad.cc);
// their shaders are listed in shaders/grad.cmake (grad_pointwise.comp, grad_rows.comp).
#include <string>
#include <vector>

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

void embedding_grad_kernel(KernelContext& c) {
  const TensorRef& dy = c.inputs[0];
  const TensorRef& index = c.inputs[1];
  const TensorRef& dw = c.outputs[0];
  const int64_t items = dw.numel(), count = index.numel();
  if (items == 0) return;
  require_loop_budget(c, uint64_t(items), uint64_t(count), "the index");
  Params p;
  p.add(dw.shape[0]);
  p.add(dw.shape[1]);
  p.add(count);
  p.add(dy.offset);
  p.add(index.offset);
  p.add(dw.offset);
  dispatch(c.stream, module_name("grad_index", {dw.dtype, index.dtype}), 0,
           {{0, dy.buffer()}, {1, index.buffer()}, {3, dw.buffer()}}, p.data(), p.size(),
           uint64_t(items));
}

void cross_entropy_grad_kernel(KernelContext& c) {
  const TensorRef& dloss = c.inputs[0];
  const TensorRef& logits = c.inputs[1];
  const TensorRef& target = c.inputs[2];
  const TensorRef& dx = c.outputs[0];
  if (dx.numel() == 0) return;
  const std::string reduction = c.attrs.get_string("reduction");
  const int mode = reduction == "none" ? 0 : reduction == "sum" ? 1 : 2;
  const int64_t N = logits.shape[0], C = logits.shape[1];
  require_loop_budget(c, uint64_t(N), 3 * uint64_t(C), "a row of logits");
  Params p;
  p.add(N);
  p.add(C);
  p.add(mode);
  p.add(dloss.offset);
  p.add(target.offset);
  p.add(dx.offset);
  p.add(logits.offset);
  dispatch(c.stream, module_name("grad_index", {dx.dtype, target.dtype}), 1,
           {{0, dloss.buffer()}, {1, target.buffer()}, {2, logits.buffer()}, {3, dx.buffer()}},
           p.data(), p.size(), uint64_t(N));
}

void rotary_grad_kernel(KernelContext& c) {
  const TensorRef& dy = c.inputs[0];
  const TensorRef& cos = c.inputs[1];
  const TensorRef& sin = c.inputs[2];
  const TensorRef& dx = c.outputs[0];
  const int64_t pairs = dx.numel() / 2;
  if (pairs == 0) return;
  Params p;
  p.add(pairs);
  p.add(dy.shape[dy.ndim - 2]);
  p.add(dy.shape[dy.ndim - 1] / 2);
  p.add(c.attrs.get_bool("interleaved") ? 1 : 0);
  p.add(dy.offset);
  p.add(cos.offset);
  p.add(sin.offset);
  p.add(dx.offset);
  dispatch(c.stream, module_name("grad_rows", {dx.dtype}), 2,
           {{0, dy.buffer()}, {3, dx.buffer()}, {4, cos.buffer()}, {5, sin.buffer()}}, p.data(),
           p.size(), uint64_t(pairs));
}

}  // namespace

void register_grad_kernels(const oar::sdk::KernelRegistrar& registrar) {
  const auto two = same_signatures(ops::kFloats, 2, 1);
  for (const char* op : {"relu_grad", "sigmoid_grad", "tanh_grad", "silu_grad", "gelu_grad"}) {
    register_op(registrar, op, &pointwise_kernel, two);
  }
  register_op(registrar, "softmax_grad", &softmax_grad_kernel, two);
  register_op(registrar, "log_softmax_grad", &softmax_grad_kernel, two);
  std::vector<std::vector<DLDataType>> embedding, cross_entropy;
  for (DLDataType t : ops::dtypes_in(ops::kFloats & kSupported)) {
    for (DLDataType i : {dtype::i32, dtype::i64}) {
      embedding.push_back({t, i, t});
      cross_entropy.push_back({t, t, i, t});
    }
  }
  register_op(registrar, "embedding_grad", &embedding_grad_kernel, embedding);
  register_op(registrar, "cross_entropy_grad", &cross_entropy_grad_kernel, cross_entropy);
  register_op(registrar, "rotary_embedding_grad", &rotary_grad_kernel,
              same_signatures(ops::kFloats, 3, 1));
}

}  // namespace oar::vulkan
