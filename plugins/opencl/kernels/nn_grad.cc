// opencl kernels of the gradients of the normalizations, conv2d, pooling and attention
// (core/ops/schema_nn_grad.cc); the OpenCL C side is kernels/nn_grad.cl.
#include <cmath>
#include <string>

#include "kernels/kernel.h"

namespace oar::opencl {
namespace {

// Mirrors pool_grad_t of nn_grad.cl.
struct PoolGrad {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw;
  int64_t is_max, count_include_pad;
  int64_t dy_offset, x_offset, dx_offset;
};

// A row pass (dx, and each row's mean and rstd into scratch), then a column
// pass (dweight, dbias) that reads them.
void norm_grad_body(KernelContext& context) {
  const bool rms = std::string(context.schema.name) == "rms_norm_grad";
  const View& dy = context.inputs[0];
  const View& x = context.inputs[1];
  const View& w = context.inputs[2];
  const View& dx = context.outputs[0];
  const View& dw = context.outputs[1];
  const View& db = rms ? dw : context.outputs[2];
  const int64_t dim = x.shape[x.ndim - 1];
  if (dim == 0) return;
  const int64_t rows = x.numel() / dim;
  // Two WIDE values (at most 8 bytes each) per row, 16-byte aligned.
  oar_memory_t memory = nullptr;
  uint64_t offset = 0;
  oar::sdk::require(context.call->scratch_allocate != nullptr, OAR_STATUS_INTERNAL,
                    "the kernel call has no scratch allocator");
  oar_status_t status = context.call->scratch_allocate(context.call->scratch_context,
                                                       uint64_t(rows) * 16 + 16, &memory, &offset);
  oar::sdk::require(status == OAR_STATUS_OK, status,
                    std::string(context.schema.name) + ": scratch_allocate failed");
  Buffer stats = static_cast<Buffer>(memory);
  cl_ulong so = (offset + 15) / 16 * 16;
  cl_int rms_arg = rms ? 1 : 0;
  cl_ulong dyo = dy.offset, xo = x.offset, wo = w.offset, dxo = dx.offset, dwo = dw.offset,
           dbo = db.offset;
  if (rows > 0) {
    Real eps = context.real(context.attrs.get_float("eps"));
    context.launch(Source::kNnGrad, x.dtype, "norm_grad_rows", rows,
                   {dy.memory, dyo, x.memory, xo, w.memory, wo, dx.memory, dxo, stats, so, rows,
                    dim, real_arg(eps), rms_arg});
  }
  context.launch(Source::kNnGrad, x.dtype, "norm_grad_columns", dim,
                 {dy.memory, dyo, x.memory, xo, stats, so, dw.memory, dwo, db.memory, dbo, rows,
                  dim, rms_arg});
}

void pool_grad_body(KernelContext& context) {
  const View& dy = context.inputs[0];
  const View& x = context.inputs[1];
  const View& dx = context.outputs[0];
  auto kernel = context.attrs.get_pair("kernel_size", {});
  auto stride = context.attrs.get_pair("stride", {kernel[0], kernel[1]});
  auto padding = context.attrs.get_pair("padding", {0, 0});
  PoolGrad p{};
  p.is_max = std::string(context.schema.name) == "max_pool2d_grad";
  p.count_include_pad = p.is_max ? 0 : context.attrs.get_bool("count_include_pad");
  p.planes = x.shape[0] * x.shape[1];
  p.h = x.shape[2];
  p.w = x.shape[3];
  p.oh = dy.shape[2];
  p.ow = dy.shape[3];
  p.kh = kernel[0];
  p.kw = kernel[1];
  p.sh = stride[0];
  p.sw = stride[1];
  p.ph = padding[0];
  p.pw = padding[1];
  p.dy_offset = int64_t(dy.offset);
  p.x_offset = int64_t(x.offset);
  p.dx_offset = int64_t(dx.offset);
  const int64_t n = dx.numel();
  if (n == 0) return;
  context.launch(Source::kNnGrad, x.dtype, "pool2d_grad", n, {dy.memory, x.memory, dx.memory, p});
}

// Mirrors conv_grad_t of nn_grad.cl.
struct ConvGrad {
  int64_t n, c, h, w, o, kh, kw, oh, ow, groups;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t dy_offset, in_offset, out_offset;
};

// conv2d_grad_input(dy, weight) -> dx and conv2d_grad_weight(dy, x) -> dweight.
void conv_grad_body(KernelContext& context) {
  const bool input = std::string(context.schema.name) == "conv2d_grad_input";
  const View& dy = context.inputs[0];
  const View& other = context.inputs[1];
  const View& out = context.outputs[0];
  const View& x_like = input ? out : other;
  const View& w_like = input ? other : out;
  auto stride = context.attrs.get_pair("stride", {1, 1});
  auto padding = context.attrs.get_pair("padding", {0, 0});
  auto dilation = context.attrs.get_pair("dilation", {1, 1});
  ConvGrad p{};
  p.n = x_like.shape[0];
  p.c = x_like.shape[1];
  p.h = x_like.shape[2];
  p.w = x_like.shape[3];
  p.o = w_like.shape[0];
  p.kh = w_like.shape[2];
  p.kw = w_like.shape[3];
  p.oh = dy.shape[2];
  p.ow = dy.shape[3];
  p.groups = context.attrs.get_int("groups");
  p.sh = stride[0];
  p.sw = stride[1];
  p.ph = padding[0];
  p.pw = padding[1];
  p.dh = dilation[0];
  p.dw = dilation[1];
  p.dy_offset = int64_t(dy.offset);
  p.in_offset = int64_t(other.offset);
  p.out_offset = int64_t(out.offset);
  const int64_t n = out.numel();
  if (n == 0) return;
  context.launch(Source::kNnGrad, out.dtype, input ? "conv2d_grad_input" : "conv2d_grad_weight", n,
                 {dy.memory, other.memory, out.memory, p});
}

// Mirrors attention_grad_t of nn_grad.cl.
struct AttentionGrad {
  int64_t batch, lq, lk, d, dv, shift, causal;
  int64_t dy_offset, q_offset, k_offset, v_offset;
};

// Three passes: per query row its softmax statistics (into scratch), dq, and
// dk with dv.
void attention_grad_body(KernelContext& context) {
  const View& dy = context.inputs[0];
  const View& q = context.inputs[1];
  const View& k = context.inputs[2];
  const View& v = context.inputs[3];
  const View& dq = context.outputs[0];
  const View& dk = context.outputs[1];
  const View& dv = context.outputs[2];
  const int r = q.ndim;
  AttentionGrad p{1,
                  q.shape[r - 2],
                  k.shape[r - 2],
                  q.shape[r - 1],
                  v.shape[r - 1],
                  0,
                  context.attrs.get_bool("causal") ? 1 : 0,
                  int64_t(dy.offset),
                  int64_t(q.offset),
                  int64_t(k.offset),
                  int64_t(v.offset)};
  for (int i = 0; i < r - 2; ++i) p.batch *= q.shape[i];
  if (context.attrs.get_string("causal_alignment") != "top_left") p.shift = p.lk - p.lq;
  double scale = context.attrs.get_float("scale");
  if (scale == 0) scale = p.d > 0 ? 1.0 / std::sqrt(double(p.d)) : 1.0;
  Real s = context.real(scale);
  const int64_t rows = p.batch * p.lq;
  if (dq.numel() == 0 && dk.numel() == 0 && dv.numel() == 0) return;
  // Three WIDE values (at most 8 bytes each) per query row, 16-byte aligned.
  oar_memory_t memory = nullptr;
  uint64_t offset = 0;
  oar::sdk::require(context.call->scratch_allocate != nullptr, OAR_STATUS_INTERNAL,
                    "the kernel call has no scratch allocator");
  oar_status_t status = context.call->scratch_allocate(context.call->scratch_context,
                                                       uint64_t(rows) * 24 + 16, &memory, &offset);
  oar::sdk::require(status == OAR_STATUS_OK, status,
                    "scaled_dot_product_attention_grad: scratch_allocate failed");
  Buffer stats = static_cast<Buffer>(memory);
  cl_ulong so = (offset + 15) / 16 * 16;
  cl_ulong dqo = dq.offset, dko = dk.offset, dvo = dv.offset;
  if (rows > 0) {
    context.launch(Source::kNnGrad, q.dtype, "attention_grad_rows", rows,
                   {dy.memory, q.memory, k.memory, v.memory, stats, so, p, real_arg(s)});
  }
  if (dq.numel() > 0) {
    context.launch(
        Source::kNnGrad, q.dtype, "attention_grad_q", dq.numel(),
        {dy.memory, q.memory, k.memory, v.memory, stats, so, dq.memory, dqo, p, real_arg(s)});
  }
  const int64_t kv = p.batch * p.lk * (p.d + p.dv);
  if (kv > 0) {
    context.launch(Source::kNnGrad, q.dtype, "attention_grad_kv", kv,
                   {dy.memory, q.memory, k.memory, v.memory, stats, so, dk.memory, dko, dv.memory,
                    dvo, p, real_arg(s)});
  }
}

}  // namespace

void register_nn_grad_kernels(const oar::sdk::KernelRegistrar& registrar) {
  register_op(registrar, "layer_norm_grad", norm_grad_body, same_signatures(ops::kFloats, 3, 3));
  register_op(registrar, "rms_norm_grad", norm_grad_body, same_signatures(ops::kFloats, 3, 2));
  register_op(registrar, "max_pool2d_grad", pool_grad_body, same_signatures(ops::kFloats, 2, 1));
  register_op(registrar, "avg_pool2d_grad", pool_grad_body, same_signatures(ops::kFloats, 2, 1));
  register_op(registrar, "conv2d_grad_input", conv_grad_body, same_signatures(ops::kFloats, 2, 1));
  register_op(registrar, "conv2d_grad_weight", conv_grad_body, same_signatures(ops::kFloats, 2, 1));
  register_op(registrar, "scaled_dot_product_attention_grad", attention_grad_body,
              same_signatures(ops::kFloats, 4, 3));
}

}  // namespace oar::opencl
