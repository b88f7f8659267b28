// Host side of the neural-network kernels (kernels/nn.cl). Inputs are
// contiguous (the core stages strided ones through copy).
#include <cmath>
#include <string>

#include "kernels/kernel.h"

namespace oar::opencl {
namespace {

// Mirrors conv_t of kernels/nn.cl.
struct Conv {
  int64_t n, c, h, w;
  int64_t o, kh, kw, oh, ow;
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t has_bias, count_include_pad;
  int64_t x_offset, w_offset, b_offset, y_offset;
};

void softmax_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  int axis = normalize_axis(context.attrs.get_int("axis"), x.ndim, context.schema.name);
  int64_t outer = 1, extent = 1, inner = 1;
  for (int d = 0; d < x.ndim; ++d) {
    if (d < axis) outer *= x.shape[d];
    if (d == axis) extent = x.shape[d];
    if (d > axis) inner *= x.shape[d];
  }
  if (y.numel() == 0) return;
  cl_ulong xo = x.offset, yo = y.offset;
  cl_int take_log = std::string(context.schema.name) == "log_softmax";
  context.launch(Source::kNn, x.dtype, "softmax", outer * inner,
                 {x.memory, xo, y.memory, yo, outer, extent, inner, take_log});
}

void norm_body(KernelContext& context) {
  bool layer = std::string(context.schema.name) == "layer_norm";
  const View& x = context.inputs[0];
  const View& w = context.inputs[1];
  const View& y = context.outputs[0];
  oar::sdk::require(x.ndim >= 1, OAR_STATUS_INVALID_ARGUMENT,
                    std::string(context.schema.name) + ": x needs rank >= 1");
  int64_t dim = x.shape[x.ndim - 1];
  if (y.numel() == 0) return;
  int64_t rows = x.numel() / dim;
  Real eps = context.real(context.attrs.get_float("eps"));
  cl_ulong xo = x.offset, wo = w.offset, yo = y.offset;
  if (layer) {
    const View& b = context.inputs[2];
    cl_ulong bo = b.offset;
    context.launch(
        Source::kNn, x.dtype, "layer_norm", rows,
        {x.memory, xo, w.memory, wo, b.memory, bo, y.memory, yo, rows, dim, real_arg(eps)});
    return;
  }
  context.launch(Source::kNn, x.dtype, "rms_norm", rows,
                 {x.memory, xo, w.memory, wo, y.memory, yo, rows, dim, real_arg(eps)});
}

void batch_norm_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  oar::sdk::require(x.ndim >= 2, OAR_STATUS_INVALID_ARGUMENT, "batch_norm: x needs rank >= 2");
  int64_t n = x.numel();
  if (n == 0) return;
  int64_t channels = x.shape[1];
  int64_t inner = 1;
  for (int d = 2; d < x.ndim; ++d) inner *= x.shape[d];
  Real eps = context.real(context.attrs.get_float("eps"));
  const auto& in = context.inputs;
  cl_ulong xo = x.offset, mo = in[1].offset, vo = in[2].offset, wo = in[3].offset,
           bo = in[4].offset, yo = y.offset;
  context.launch(Source::kNn, x.dtype, "batch_norm", n,
                 {x.memory, xo, in[1].memory, mo, in[2].memory, vo, in[3].memory, wo, in[4].memory,
                  bo, y.memory, yo, n, channels, inner, real_arg(eps)});
}

void conv2d_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& w = context.inputs[1];
  const View& y = context.outputs[0];
  oar::sdk::require(x.ndim == 4 && w.ndim == 4 && y.ndim == 4, OAR_STATUS_INVALID_ARGUMENT,
                    "conv2d: x, weight and y must be 4-D (NCHW)");
  auto stride = context.attrs.get_pair("stride", {1, 1});
  auto padding = context.attrs.get_pair("padding", {0, 0});
  auto dilation = context.attrs.get_pair("dilation", {1, 1});
  Conv p{};
  p.n = x.shape[0];
  p.c = x.shape[1];
  p.h = x.shape[2];
  p.w = x.shape[3];
  p.o = y.shape[1];
  p.kh = w.shape[2];
  p.kw = w.shape[3];
  p.oh = y.shape[2];
  p.ow = y.shape[3];
  p.sh = stride[0];
  p.sw = stride[1];
  p.ph = padding[0];
  p.pw = padding[1];
  p.dh = dilation[0];
  p.dw = dilation[1];
  p.groups = context.attrs.get_int("groups");
  bool has_bias = context.inputs.size() > 2;
  p.has_bias = has_bias;
  p.x_offset = int64_t(x.offset);
  p.w_offset = int64_t(w.offset);
  p.b_offset = has_bias ? int64_t(context.inputs[2].offset) : 0;
  p.y_offset = int64_t(y.offset);
  int64_t n = y.numel();
  if (n == 0) return;
  // Without a bias the kernel never reads it; any valid buffer stands in.
  Buffer bias = has_bias ? context.inputs[2].memory : w.memory;
  context.launch(Source::kNn, x.dtype, "conv2d", n, {x.memory, w.memory, bias, y.memory, p});
}

void pool_body(KernelContext& context) {
  bool is_max = std::string(context.schema.name) == "max_pool2d";
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  oar::sdk::require(x.ndim == 4 && y.ndim == 4, OAR_STATUS_INVALID_ARGUMENT,
                    std::string(context.schema.name) + ": x must be 4-D (NCHW)");
  auto kernel = context.attrs.get_pair("kernel_size", {});
  auto stride = context.attrs.get_pair("stride", {kernel[0], kernel[1]});
  auto padding = context.attrs.get_pair("padding", {0, 0});
  Conv p{};
  p.n = x.shape[0];
  p.c = x.shape[1];
  p.h = x.shape[2];
  p.w = x.shape[3];
  p.kh = kernel[0];
  p.kw = kernel[1];
  p.oh = y.shape[2];
  p.ow = y.shape[3];
  p.sh = stride[0];
  p.sw = stride[1];
  p.ph = padding[0];
  p.pw = padding[1];
  p.count_include_pad = is_max ? 0 : context.attrs.get_bool("count_include_pad");
  p.x_offset = int64_t(x.offset);
  p.y_offset = int64_t(y.offset);
  int64_t n = y.numel();
  if (n == 0) return;
  context.launch(Source::kNn, x.dtype, is_max ? "max_pool2d" : "avg_pool2d", n,
                 {x.memory, y.memory, p});
}

void attention_body(KernelContext& context) {
  const View& q = context.inputs[0];
  const View& k = context.inputs[1];
  const View& v = context.inputs[2];
  const View& y = context.outputs[0];
  int r = q.ndim;
  oar::sdk::require(r >= 2 && k.ndim == r && v.ndim == r, OAR_STATUS_INVALID_ARGUMENT,
                    "scaled_dot_product_attention: q, k, v need one rank >= 2");
  int64_t lq = q.shape[r - 2], d = q.shape[r - 1], lk = k.shape[r - 2], dv = v.shape[r - 1];
  int64_t batch = 1;
  for (int i = 0; i < r - 2; ++i) batch *= q.shape[i];
  int64_t n = y.numel();
  if (n == 0) return;
  double scale = context.attrs.get_float("scale");
  if (scale == 0) scale = d > 0 ? 1.0 / std::sqrt(double(d)) : 1.0;
  Real s = context.real(scale);
  // 0: no mask; 1: bottom-right aligned; 2: top-left aligned.
  cl_int causal = !context.attrs.get_bool("causal")                            ? 0
                  : context.attrs.get_string("causal_alignment") == "top_left" ? 2
                                                                               : 1;
  cl_ulong qo = q.offset, ko = k.offset, vo = v.offset, yo = y.offset;
  context.launch(Source::kNn, q.dtype, "attention", n,
                 {q.memory, qo, k.memory, ko, v.memory, vo, y.memory, yo, batch, lq, lk, d, dv,
                  real_arg(s), causal});
}

void rotary_body(KernelContext& context) {
  const View& x = context.inputs[0];
  const View& y = context.outputs[0];
  oar::sdk::require(x.ndim >= 2, OAR_STATUS_INVALID_ARGUMENT,
                    "rotary_embedding: x needs rank >= 2");
  int64_t n = x.numel();
  if (n == 0) return;
  int64_t seq = x.shape[x.ndim - 2];
  int64_t dim = x.shape[x.ndim - 1];
  oar::sdk::require(dim % 2 == 0, OAR_STATUS_INVALID_ARGUMENT,
                    "rotary_embedding: the last dimension must be even");
  cl_int interleaved = context.attrs.get_bool("interleaved");
  const auto& in = context.inputs;
  cl_ulong xo = x.offset, co = in[1].offset, so = in[2].offset, yo = y.offset;
  context.launch(Source::kNn, x.dtype, "rotary", n,
                 {x.memory, xo, in[1].memory, co, in[2].memory, so, y.memory, yo, n, seq, dim,
                  interleaved, cl_int(0)});
}

void cross_entropy_body(KernelContext& context) {
  const View& logits = context.inputs[0];
  const View& target = context.inputs[1];
  const View& loss = context.outputs[0];
  oar::sdk::require(logits.ndim == 2, OAR_STATUS_INVALID_ARGUMENT,
                    "cross_entropy: logits must be [N, C]");
  std::string reduction = context.attrs.get_string("reduction");
  cl_int mode = reduction == "none" ? 0 : reduction == "sum" ? 1 : reduction == "mean" ? 2 : -1;
  oar::sdk::require(
      mode >= 0, OAR_STATUS_INVALID_ARGUMENT,
      "cross_entropy: reduction must be \"mean\", \"sum\" or \"none\", not \"" + reduction + "\"");
  int64_t rows = logits.shape[0];
  int64_t classes = logits.shape[1];
  int64_t work = mode == 0 ? rows : 1;
  if (loss.numel() == 0) return;
  cl_ulong lo = logits.offset, to = target.offset, yo = loss.offset;
  std::string name = std::string("cross_entropy_") + dtype_tag(target.dtype);
  context.launch(Source::kNn, logits.dtype, name.c_str(), work,
                 {logits.memory, lo, target.memory, to, loss.memory, yo, rows, classes, mode,
                  context.error_flag()});
}

}  // namespace

void register_nn_kernels(const oar::sdk::KernelRegistrar& registrar) {
  auto same = [](size_t inputs) { return same_signatures(ops::kFloats, inputs, 1); };
  auto conv = same(2);
  for (auto& signature : same(3)) conv.push_back(signature);
  std::vector<std::vector<DLDataType>> cross_entropy;
  for (DLDataType t : ops::dtypes_in(ops::kFloats)) {
    cross_entropy.push_back({t, dtype::i32, t});
    cross_entropy.push_back({t, dtype::i64, t});
  }
  register_op(registrar, "softmax", softmax_body, same(1));
  register_op(registrar, "log_softmax", softmax_body, same(1));
  register_op(registrar, "layer_norm", norm_body, same(3));
  register_op(registrar, "rms_norm", norm_body, same(2));
  register_op(registrar, "batch_norm", batch_norm_body, same(5));
  register_op(registrar, "conv2d", conv2d_body, conv);
  register_op(registrar, "max_pool2d", pool_body, same(1));
  register_op(registrar, "avg_pool2d", pool_body, same(1));
  register_op(registrar, "scaled_dot_product_attention", attention_body, same(3));
  register_op(registrar, "rotary_embedding", rotary_body, same(3));
  register_op(registrar, "cross_entropy", cross_entropy_body, cross_entropy);
}

}  // namespace oar::opencl
