// vulkan kernels of the gradients of the normalizations, conv2d, pooling and attention
// (core/ops/schema_nn_grad.cc); their shaders are listed in shaders/nn_grad.cmake.
#include <cmath>
#include <string>

#include "kernels/kernel.h"

namespace oar::vulkan {
namespace {

// |bindings| plus |t| at |slot| unless |t| is an empty tensor without memory
// (unbound slots get a dummy buffer; an empty tensor is never read).
void bind_tensor(std::vector<Binding>& bindings, uint32_t slot, const TensorRef& t) {
  if (t.memory != nullptr) bindings.push_back({slot, t.buffer()});
}

// nn_grad_norm.comp: a row pass (dx, and each row's mean and rstd into f32
// scratch), then a column pass (dweight, dbias) that reads them.
void norm_grad_kernel(KernelContext& c) {
  const bool rms = std::string(c.schema.name) == "rms_norm_grad";
  const TensorRef& dy = c.inputs[0];
  const TensorRef& x = c.inputs[1];
  const TensorRef& w = c.inputs[2];
  const TensorRef& dx = c.outputs[0];
  const TensorRef& dw = c.outputs[1];
  const TensorRef& db = rms ? dw : c.outputs[2];
  const int64_t D = x.shape[x.ndim - 1];
  if (D == 0) return;
  const int64_t rows = x.numel() / D;
  require_loop_budget(c, uint64_t(rows), 4 * uint64_t(D), "a row");
  require_loop_budget(c, uint64_t(D), uint64_t(rows), "a column (the rows)");
  oar::sdk::require(c.call->scratch_allocate != nullptr, OAR_STATUS_INTERNAL,
                    "the kernel call has no scratch allocator");
  oar_memory_t memory = nullptr;
  uint64_t offset = 0;
  oar_status_t status =
      c.call->scratch_allocate(c.call->scratch_context, uint64_t(rows) * 8 + 8, &memory, &offset);
  oar::sdk::require(status == OAR_STATUS_OK, status,
                    std::string(c.schema.name) + ": scratch_allocate failed");
  Params p;
  p.add(rows);
  p.add(D);
  p.add(dy.offset);
  p.add(x.offset);
  p.add(w.offset);
  p.add(dx.offset);
  p.add(dw.offset);
  p.add(db.offset);
  p.add(int64_t((offset + 3) / 4));
  p.add_float(float(c.attrs.get_float("eps")));
  p.add(rms ? 1 : 0);
  std::vector<Binding> bindings = {{6, memory->buffer.buffer}};
  bind_tensor(bindings, 0, dy);
  bind_tensor(bindings, 1, x);
  bind_tensor(bindings, 2, w);
  bind_tensor(bindings, 3, dx);
  bind_tensor(bindings, 4, dw);
  if (!rms) bind_tensor(bindings, 5, db);
  const std::string module = module_name("nn_grad_norm", {x.dtype});
  if (rows > 0) dispatch(c.stream, module, 0, bindings, p.data(), p.size(), uint64_t(rows));
  dispatch(c.stream, module, 1, bindings, p.data(), p.size(), uint64_t(D));
}

// nn_grad_pool.comp: one invocation per element of dx.
void pool_grad_kernel(KernelContext& c) {
  const TensorRef& dy = c.inputs[0];
  const TensorRef& x = c.inputs[1];
  const TensorRef& dx = c.outputs[0];
  const int64_t n = dx.numel();
  if (n == 0) return;
  const bool is_max = std::string(c.schema.name) == "max_pool2d_grad";
  auto kernel = c.attrs.get_pair("kernel_size", {});
  auto stride = c.attrs.get_pair("stride", {kernel[0], kernel[1]});
  auto padding = c.attrs.get_pair("padding", {0, 0});
  const uint64_t windows = uint64_t((kernel[0] + stride[0] - 1) / stride[0]) *
                           uint64_t((kernel[1] + stride[1] - 1) / stride[1]);
  require_loop_budget(c, uint64_t(n), windows * uint64_t(is_max ? kernel[0] * kernel[1] + 1 : 1),
                      "the windows over one element");
  Params p;
  p.add(n);
  p.add(x.shape[2]);
  p.add(x.shape[3]);
  p.add(dy.shape[2]);
  p.add(dy.shape[3]);
  p.add(kernel[0]);
  p.add(kernel[1]);
  p.add(stride[0]);
  p.add(stride[1]);
  p.add(padding[0]);
  p.add(padding[1]);
  p.add(is_max ? 1 : 0);
  p.add(!is_max && c.attrs.get_bool("count_include_pad") ? 1 : 0);
  p.add(dy.offset);
  p.add(x.offset);
  p.add(dx.offset);
  dispatch(c.stream, module_name("nn_grad_pool", {x.dtype}), 0,
           {{0, dy.buffer()}, {1, x.buffer()}, {3, dx.buffer()}}, p.data(), p.size(), uint64_t(n));
}

// nn_grad_conv.comp: one invocation per element of dx (conv2d_grad_input) or
// dweight (conv2d_grad_weight).
void conv_grad_kernel(KernelContext& c) {
  const bool input = std::string(c.schema.name) == "conv2d_grad_input";
  const TensorRef& dy = c.inputs[0];
  const TensorRef& other = c.inputs[1];
  const TensorRef& out = c.outputs[0];
  const TensorRef& x_like = input ? out : other;
  const TensorRef& w_like = input ? other : out;
  const int64_t n = out.numel();
  if (n == 0) return;
  auto stride = c.attrs.get_pair("stride", {1, 1});
  auto padding = c.attrs.get_pair("padding", {0, 0});
  auto dilation = c.attrs.get_pair("dilation", {1, 1});
  const int64_t groups = c.attrs.get_int("groups");
  const uint64_t terms =
      input ? uint64_t(w_like.shape[0] / groups) * uint64_t(w_like.shape[2]) *
                  uint64_t(w_like.shape[3])
            : uint64_t(dy.shape[0]) * uint64_t(dy.shape[2]) * uint64_t(dy.shape[3] + 1);
  require_loop_budget(c, uint64_t(n), terms, "the terms of one result");
  Params p;
  p.add(n);
  for (int d = 0; d < 4; ++d) p.add(x_like.shape[d]);
  p.add(w_like.shape[0]);
  p.add(w_like.shape[2]);
  p.add(w_like.shape[3]);
  p.add(dy.shape[2]);
  p.add(dy.shape[3]);
  p.add(groups);
  p.add(stride[0]);
  p.add(stride[1]);
  p.add(padding[0]);
  p.add(padding[1]);
  p.add(dilation[0]);
  p.add(dilation[1]);
  p.add(dy.offset);
  p.add(other.offset);
  p.add(out.offset);
  dispatch(c.stream, module_name("nn_grad_conv", {out.dtype}), input ? 0 : 1,
           {{0, dy.buffer()}, {1, other.buffer()}, {3, out.buffer()}}, p.data(), p.size(),
           uint64_t(n));
}

// nn_grad_attention.comp: per query row its softmax statistics (f32 scratch),
// then dq per element, then dk and dv per element.
void attention_grad_kernel(KernelContext& c) {
  const TensorRef& dy = c.inputs[0];
  const TensorRef& q = c.inputs[1];
  const TensorRef& k = c.inputs[2];
  const TensorRef& v = c.inputs[3];
  const TensorRef& dq = c.outputs[0];
  const TensorRef& dk = c.outputs[1];
  const TensorRef& dv = c.outputs[2];
  const int r = q.ndim;
  int64_t batch = 1;
  for (int i = 0; i < r - 2; ++i) batch *= q.shape[i];
  const int64_t Lq = q.shape[r - 2], Lk = k.shape[r - 2], D = q.shape[r - 1], Dv = v.shape[r - 1];
  if (dq.numel() == 0 && dk.numel() == 0 && dv.numel() == 0) return;
  double scale = c.attrs.get_float("scale");
  if (scale == 0) scale = D > 0 ? 1.0 / std::sqrt(double(D)) : 1.0;
  const int64_t shift = c.attrs.get_string("causal_alignment") == "top_left" ? 0 : Lk - Lq;
  const uint64_t pair = uint64_t(D + Dv + 1);
  require_loop_budget(c, uint64_t(batch * Lq), 2 * uint64_t(Lk) * pair, "the keys of one query");
  require_loop_budget(c, uint64_t(batch * Lq * D), uint64_t(Lk) * pair, "the keys of one query");
  require_loop_budget(c, uint64_t(batch * Lk * (D + Dv)), uint64_t(Lq) * pair,
                      "the queries of one key");
  oar::sdk::require(c.call->scratch_allocate != nullptr, OAR_STATUS_INTERNAL,
                    "the kernel call has no scratch allocator");
  oar_memory_t memory = nullptr;
  uint64_t offset = 0;
  oar_status_t status = c.call->scratch_allocate(c.call->scratch_context,
                                                 uint64_t(batch * Lq) * 12 + 8, &memory, &offset);
  oar::sdk::require(status == OAR_STATUS_OK, status,
                    "scaled_dot_product_attention_grad: scratch_allocate failed");
  const std::string module = module_name("nn_grad_attention", {q.dtype});
  std::vector<Binding> bindings = {{7, memory->buffer.buffer}};
  const TensorRef* tensors[] = {&dy, &q, &k, &v, &dq, &dk, &dv};
  for (uint32_t slot = 0; slot < 7; ++slot) bind_tensor(bindings, slot, *tensors[slot]);
  const int64_t items[3] = {batch * Lq, dq.numel(), batch * Lk * (D + Dv)};
  for (int op = 0; op < 3; ++op) {
    if (items[op] == 0) continue;
    Params p;
    p.add(items[op]);
    p.add(batch);
    p.add(Lq);
    p.add(Lk);
    p.add(D);
    p.add(Dv);
    p.add(c.attrs.get_bool("causal") ? 1 : 0);
    p.add(shift);
    p.add_float(float(scale));
    p.add(dy.offset);
    p.add(q.offset);
    p.add(k.offset);
    p.add(v.offset);
    p.add(int64_t((offset + 3) / 4));
    p.add(dq.offset);
    p.add(dk.offset);
    p.add(dv.offset);
    dispatch(c.stream, module, op, bindings, p.data(), p.size(), uint64_t(items[op]));
  }
}

}  // namespace

void register_nn_grad_kernels(const oar::sdk::KernelRegistrar& registrar) {
  const uint32_t floats = ops::kF16 | ops::kBF16 | ops::kF32;
  register_op(registrar, "layer_norm_grad", &norm_grad_kernel, same_signatures(floats, 3, 3));
  register_op(registrar, "rms_norm_grad", &norm_grad_kernel, same_signatures(floats, 3, 2));
  register_op(registrar, "max_pool2d_grad", &pool_grad_kernel, same_signatures(floats, 2, 1));
  register_op(registrar, "avg_pool2d_grad", &pool_grad_kernel, same_signatures(floats, 2, 1));
  register_op(registrar, "conv2d_grad_input", &conv_grad_kernel, same_signatures(floats, 2, 1));
  register_op(registrar, "conv2d_grad_weight", &conv_grad_kernel, same_signatures(floats, 2, 1));
  register_op(registrar, "scaled_dot_product_attention_grad", &attention_grad_kernel,
              same_signatures(floats, 4, 3));
}

}  // namespace oar::vulkan
