// Layer kernels of the transformer and the classifiers: layer_norm,
// embedding, cross_entropy_with_softmax, mean_all, batch_norm and their
// gradients.
#include <string>
#include <tuple>

#include "kernels/common.h"

namespace oar_paddle {

namespace {

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

// |t| in |dtype|: itself, or a device cast of it.
phi::DenseTensor as_dtype(const phi::CustomContext& ctx, const phi::DenseTensor& t,
                          phi::DataType dtype) {
  if (t.dtype() == dtype) return t;
  phi::DenseTensor c = empty(ctx, dims_of(t), dtype);
  if (t.numel() != 0) {
    View a(t), o(c);
    run(ctx, OAR_PADDLE_OP("cast"), {&a}, {&o});
  }
  return c;
}

// Writes |value| (shape |shape|) into |out|, casting when dtypes differ.
void store(const phi::CustomContext& ctx, const phi::DenseTensor& value,
           const std::vector<int64_t>& shape, phi::DenseTensor* out) {
  if (out->numel() == 0) return;
  View v(value, shape), o(*out, shape);
  if (value.dtype() == out->dtype()) {
    run(ctx, OAR_PADDLE_OP("copy"), {&v}, {&o});
  } else {
    run(ctx, OAR_PADDLE_OP("cast"), {&v}, {&o});
  }
}

// Paddle keeps layer_norm's statistics in float32 for 16-bit inputs.
phi::DataType stats_dtype(const phi::DenseTensor& x, const phi::DenseTensor* stat) {
  if (stat != nullptr && stat->dtype() != phi::DataType::UNDEFINED) return stat->dtype();
  if (x.dtype() == phi::DataType::FLOAT16 || x.dtype() == phi::DataType::BFLOAT16) {
    return phi::DataType::FLOAT32;
  }
  return x.dtype();
}

}  // namespace

// layer_norm over the dimensions from begin_norm_axis on: x viewed as [rows,
// D]; a missing scale is ones, a missing bias zeros. Paddle's mean and
// variance outputs (per row, biased variance of the centred values) are
// computed too, with OAR's mean over the row.
template <typename T, typename Context>
void LayerNormKernel(const Context& ctx, const phi::DenseTensor& x,
                     const paddle::optional<phi::DenseTensor>& scale,
                     const paddle::optional<phi::DenseTensor>& bias, float epsilon,
                     int begin_norm_axis, phi::DenseTensor* out, phi::DenseTensor* mean,
                     phi::DenseTensor* variance) {
  std::vector<int64_t> dims = dims_of(x);
  size_t begin = size_t(begin_norm_axis < 0 ? begin_norm_axis + int(dims.size()) : begin_norm_axis);
  int64_t rows = product(dims, 0, begin), d = product(dims, begin, dims.size());
  ctx.template Alloc<T>(out);
  if (mean != nullptr) ctx.Alloc(mean, stats_dtype(x, mean));
  if (variance != nullptr) ctx.Alloc(variance, stats_dtype(x, variance));
  if (x.numel() == 0) return;
  phi::DenseTensor w = scale ? as_dtype(ctx, *scale, x.dtype()) : empty(ctx, {d}, x.dtype());
  if (!scale) fill(ctx, &w, 1.0);
  phi::DenseTensor b = bias ? as_dtype(ctx, *bias, x.dtype()) : empty(ctx, {d}, x.dtype());
  if (!bias) fill(ctx, &b, 0.0);
  View vx(x, {rows, d}), vw(w, {d}), vb(b, {d}), o(*out, {rows, d});
  run(ctx, OAR_PADDLE_OP("layer_norm"), {&vx, &vw, &vb}, {&o}, {oar::Attr("eps", double(epsilon))});
  if (mean == nullptr && variance == nullptr) return;
  const std::vector<int64_t> axes = {1};
  phi::DenseTensor m = empty(ctx, {rows, 1}, x.dtype());
  phi::DenseTensor c = empty(ctx, {rows, d}, x.dtype());
  phi::DenseTensor v = empty(ctx, {rows, 1}, x.dtype());
  View vm(m), vc(c), vv(v);
  run(ctx, OAR_PADDLE_OP("mean"), {&vx}, {&vm},
      {oar::Attr("axes", axes), oar::Attr("keepdim", true)});
  run(ctx, OAR_PADDLE_OP("sub"), {&vx, &vm}, {&vc});
  run(ctx, OAR_PADDLE_OP("mul"), {&vc, &vc}, {&vc});
  run(ctx, OAR_PADDLE_OP("mean"), {&vc}, {&vv},
      {oar::Attr("axes", axes), oar::Attr("keepdim", true)});
  if (mean != nullptr) store(ctx, m, {rows}, mean);
  if (variance != nullptr) store(ctx, v, {rows}, variance);
}

// OAR's layer_norm_grad recomputes the row statistics from x (Paddle's saved
// mean and variance are not read); the gradients Paddle does not want go to
// scratch tensors.
template <typename T, typename Context>
void LayerNormGradKernel(const Context& ctx, const phi::DenseTensor& x,
                         const paddle::optional<phi::DenseTensor>& scale,
                         const paddle::optional<phi::DenseTensor>&, const phi::DenseTensor&,
                         const phi::DenseTensor&, const phi::DenseTensor& out_grad, float epsilon,
                         int begin_norm_axis, phi::DenseTensor* x_grad,
                         phi::DenseTensor* scale_grad, phi::DenseTensor* bias_grad) {
  std::vector<int64_t> dims = dims_of(x);
  size_t begin = size_t(begin_norm_axis < 0 ? begin_norm_axis + int(dims.size()) : begin_norm_axis);
  int64_t rows = product(dims, 0, begin), d = product(dims, begin, dims.size());
  if (x_grad != nullptr) ctx.template Alloc<T>(x_grad);
  phi::DataType param_dtype = scale ? scale->dtype() : x.dtype();
  if (scale_grad != nullptr) ctx.Alloc(scale_grad, param_dtype);
  if (bias_grad != nullptr) ctx.Alloc(bias_grad, param_dtype);
  if (d == 0) return;
  phi::DenseTensor w = scale ? as_dtype(ctx, *scale, x.dtype()) : empty(ctx, {d}, x.dtype());
  if (!scale) fill(ctx, &w, 1.0);
  // Each output straight into Paddle's tensor when it wants it in x's dtype.
  auto target = [&](phi::DenseTensor* want, const std::vector<int64_t>& shape) {
    if (want != nullptr && want->dtype() == x.dtype()) return *want;
    return empty(ctx, shape, x.dtype());
  };
  phi::DenseTensor dx = target(x_grad, dims), dw = target(scale_grad, {d}),
                   db = target(bias_grad, {d});
  View vdy(out_grad, {rows, d}), vx(x, {rows, d}), vw(w, {d});
  View odx(dx, {rows, d}), odw(dw, {d}), odb(db, {d});
  run(ctx, OAR_PADDLE_OP("layer_norm_grad"), {&vdy, &vx, &vw}, {&odx, &odw, &odb},
      {oar::Attr("eps", double(epsilon))});
  if (scale_grad != nullptr && scale_grad->dtype() != x.dtype()) store(ctx, dw, {d}, scale_grad);
  if (bias_grad != nullptr && bias_grad->dtype() != x.dtype()) store(ctx, db, {d}, bias_grad);
}

// out = weight[ids]; rows of padding_idx (>= 0) are zeros, as Paddle's are.
template <typename T, typename Context>
void EmbeddingKernel(const Context& ctx, const phi::DenseTensor& ids,
                     const phi::DenseTensor& weight, int64_t padding_idx, phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  View vw(weight), vi(ids), o(*out);
  run(ctx, OAR_PADDLE_OP("embedding"), {&vw, &vi}, {&o});
  if (padding_idx < 0) return;
  std::vector<int64_t> mask_shape = dims_of(ids);
  phi::DenseTensor pad = scalar(ctx, ids.dtype(), double(padding_idx));
  phi::DenseTensor mask = empty(ctx, mask_shape, phi::DataType::BOOL);
  phi::DenseTensor zero = scalar(ctx, out->dtype(), 0.0);
  View vp(pad), vm(mask);
  run(ctx, OAR_PADDLE_OP("eq"), {&vi, &vp}, {&vm});
  mask_shape.push_back(1);
  View vmask(mask, mask_shape), vz(zero);
  run(ctx, OAR_PADDLE_OP("where"), {&vmask, &vz, &o}, {&o});
}

// dweight[v] = sum of out_grad's rows whose id is v (repeats accumulate); the
// row of padding_idx (>= 0) gets no gradient.
template <typename T, typename Context>
void EmbeddingGradKernel(const Context& ctx, const phi::DenseTensor& ids,
                         const phi::DenseTensor& weight, const phi::DenseTensor& out_grad,
                         int64_t padding_idx, phi::DenseTensor* weight_grad) {
  ctx.template Alloc<T>(weight_grad);
  if (weight_grad->numel() == 0) return;
  const int64_t vocab = weight.dims()[0], d = weight.dims()[1];
  View dy(out_grad), vi(ids), o(*weight_grad);
  run(ctx, OAR_PADDLE_OP("embedding_grad"), {&dy, &vi}, {&o}, {oar::Attr("num_embeddings", vocab)});
  if (padding_idx < 0 || padding_idx >= vocab) return;
  View row(*weight_grad, {1, d});
  row.advance(uint64_t(padding_idx * d) * uint64_t(phi::SizeOf(weight_grad->dtype())));
  run(ctx, OAR_PADDLE_OP("fill"), {}, {&row}, {oar::Attr("value", 0.0)});
}

namespace {

struct CrossEntropyShape {
  int64_t rows = 0, classes = 0;
};

CrossEntropyShape cross_entropy_shape(const phi::CustomContext& ctx, const char* kernel,
                                      const phi::DenseTensor& logits, bool soft_label,
                                      bool use_softmax, int axis) {
  const int rank = logits.dims().size();
  if (soft_label) unsupported(ctx, kernel, "soft_label=True");
  if (!use_softmax) unsupported(ctx, kernel, "use_softmax=False");
  if (rank < 1 || (axis != -1 && axis != rank - 1)) {
    unsupported(ctx, kernel, "a class axis other than the last");
  }
  CrossEntropyShape s;
  s.classes = logits.dims()[rank - 1];
  s.rows = s.classes == 0 ? 0 : logits.numel() / s.classes;
  return s;
}

}  // namespace

// Hard labels over the last axis: softmax = OAR softmax, loss = OAR
// cross_entropy (reduction "none") of the logits viewed as [rows, classes]
// and the labels as [rows]. A label equal to ignore_index is an index out of
// range to OAR (the stream fails with OUT_OF_RANGE): OAR has no ignore index.
template <typename T, typename Context>
void CrossEntropyWithSoftmaxKernel(const Context& ctx, const phi::DenseTensor& logits,
                                   const phi::DenseTensor& label, bool soft_label, bool use_softmax,
                                   bool, int, int axis, phi::DenseTensor* softmax,
                                   phi::DenseTensor* loss) {
  CrossEntropyShape s =
      cross_entropy_shape(ctx, "cross_entropy_with_softmax", logits, soft_label, use_softmax, axis);
  ctx.template Alloc<T>(softmax);
  ctx.template Alloc<T>(loss);
  if (s.rows == 0) return;
  View x(logits, {s.rows, s.classes}), sm(*softmax, {s.rows, s.classes});
  View t(label, {s.rows}), l(*loss, {s.rows});
  run(ctx, OAR_PADDLE_OP("softmax"), {&x}, {&sm}, {oar::Attr("axis", int64_t(-1))});
  run(ctx, OAR_PADDLE_OP("cross_entropy"), {&x, &t}, {&l}, {oar::Attr("reduction", "none")});
}

// dlogits = (softmax - one_hot(label)) * dloss, from the forward's softmax
// (Paddle's gradient takes it, not the logits). dlogits may be softmax's own
// memory (Paddle's in-place gradient): every step is elementwise.
template <typename T, typename Context>
void CrossEntropyWithSoftmaxGradKernel(const Context& ctx, const phi::DenseTensor& label,
                                       const phi::DenseTensor& softmax,
                                       const phi::DenseTensor& loss_grad, bool soft_label,
                                       bool use_softmax, bool, int, int axis,
                                       phi::DenseTensor* logits_grad) {
  CrossEntropyShape s = cross_entropy_shape(ctx, "cross_entropy_with_softmax_grad", softmax,
                                            soft_label, use_softmax, axis);
  ctx.template Alloc<T>(logits_grad);
  if (s.rows == 0) return;
  phi::DenseTensor hot = empty(ctx, {s.rows, s.classes}, softmax.dtype());
  View t(label, {s.rows}), h(hot), sm(softmax, {s.rows, s.classes});
  View dl(loss_grad, {s.rows, 1}), o(*logits_grad, {s.rows, s.classes});
  run(ctx, OAR_PADDLE_OP("one_hot"), {&t}, {&h}, {oar::Attr("num_classes", s.classes)});
  run(ctx, OAR_PADDLE_OP("sub"), {&sm, &h}, {&o});
  run(ctx, OAR_PADDLE_OP("mul"), {&o, &dl}, {&o});
}

// The mean of every element, as a rank-0 tensor.
template <typename T, typename Context>
void MeanAllKernel(const Context& ctx, const phi::DenseTensor& x, phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  View vx(x), o(*out, {});
  const std::vector<int64_t> all;
  run(ctx, OAR_PADDLE_OP("mean"), {&vx}, {&o},
      {oar::Attr("axes", all), oar::Attr("keepdim", false)});
}

// dx = out_grad / count everywhere.
template <typename T, typename Context>
void MeanAllGradKernel(const Context& ctx, const phi::DenseTensor& x,
                       const phi::DenseTensor& out_grad, phi::DenseTensor* x_grad) {
  ctx.template Alloc<T>(x_grad);
  if (x_grad->numel() == 0) return;
  fill(ctx, x_grad, 1.0 / double(x.numel()));
  View d(out_grad, {}), o(*x_grad);
  run(ctx, OAR_PADDLE_OP("mul"), {&o, &d}, {&o});
}

namespace {

// batch_norm's channel axis: 1 for the channels-first layouts (NCHW, NCL,
// NCDHW) and for any 2-D input (NC), the last for the channels-last ones
// (NHWC, NLC, NDHWC). Statistics over every other axis; per-channel tensors
// broadcast as [1, C, 1, ..] or [1, .., 1, C]. The layout changes nothing
// else: OAR's reductions and broadcasts take any axes.
struct BnShape {
  std::vector<int64_t> axes, chan;
  int64_t c = 0, count = 0;
};

BnShape bn_shape(const phi::CustomContext& ctx, const char* kernel, const phi::DenseTensor& x,
                 const std::string& layout) {
  const std::vector<int64_t> xs = dims_of(x);
  if (xs.size() < 2) unsupported(ctx, kernel, "an input of rank < 2");
  const bool first = layout.rfind("NC", 0) == 0;
  const bool last = !first && layout.size() >= 3 && layout[0] == 'N' && layout.back() == 'C';
  if (xs.size() > 2 && !first && !last) unsupported(ctx, kernel, "data_layout " + layout);
  const size_t axis = xs.size() > 2 && last ? xs.size() - 1 : 1;
  BnShape s;
  s.c = xs[axis];
  s.chan.assign(xs.size(), 1);
  s.chan[axis] = s.c;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i != axis) s.axes.push_back(int64_t(i));
  }
  s.count = s.c > 0 ? x.numel() / s.c : 0;
  return s;
}

// rsqrt(var + eps) per channel, into a new tensor.
phi::DenseTensor inv_std(const phi::CustomContext& ctx, const phi::DenseTensor& var, double eps) {
  phi::DenseTensor inv = empty(ctx, dims_of(var), var.dtype());
  phi::DenseTensor e = scalar(ctx, var.dtype(), eps);
  View v(var), ev(e), o(inv);
  run(ctx, OAR_PADDLE_OP("add"), {&v, &ev}, {&o});
  run(ctx, OAR_PADDLE_OP("rsqrt"), {&o}, {&o});
  return inv;
}

}  // namespace

// batch_norm: training mode (not is_test, not use_global_stats) normalizes
// with the batch's mean and biased variance per channel (OAR's mean over
// every axis but 1), writes saved_mean and saved_variance = 1 / sqrt(var +
// eps) for the backward, and updates the running statistics as Paddle does:
// running * momentum + batch * (1 - momentum). With global statistics it
// normalizes with the running ones (left as they are). Computed in the
// statistics' dtype (float32 for 16-bit x), then y cast to x's dtype.
template <typename T, typename Context>
void BatchNormKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& mean,
                     const phi::DenseTensor& variance,
                     const paddle::optional<phi::DenseTensor>& scale,
                     const paddle::optional<phi::DenseTensor>& bias, bool is_test, float momentum,
                     float epsilon, const std::string& data_layout, bool use_global_stats,
                     bool trainable_statistics, phi::DenseTensor* y, phi::DenseTensor* mean_out,
                     phi::DenseTensor* variance_out, phi::DenseTensor* saved_mean,
                     phi::DenseTensor* saved_variance, phi::DenseTensor*) {
  const BnShape s = bn_shape(ctx, "batch_norm", x, data_layout);
  const phi::DataType sd = mean.dtype();
  ctx.template Alloc<T>(y);
  ctx.Alloc(mean_out, sd);
  ctx.Alloc(variance_out, sd);
  ctx.Alloc(saved_mean, sd);
  ctx.Alloc(saved_variance, sd);
  if (x.numel() == 0) return;
  const bool global = (is_test && !trainable_statistics) || use_global_stats;
  const std::vector<int64_t> xs = dims_of(x);
  phi::DenseTensor xc = as_dtype(ctx, x, sd);
  phi::DenseTensor c = empty(ctx, xs, sd);
  View xv(xc), cv(c), sm(*saved_mean);
  View smc(*saved_mean, s.chan), svc(*saved_variance, s.chan);
  const oar::Attr axes("axes", s.axes), keep("keepdim", false);
  if (!global) {
    phi::DenseTensor var = empty(ctx, {s.c}, sd), sq = empty(ctx, xs, sd);
    View varv(var), sqv(sq);
    run(ctx, OAR_PADDLE_OP("mean"), {&xv}, {&sm}, {axes, keep});
    run(ctx, OAR_PADDLE_OP("sub"), {&xv, &smc}, {&cv});
    run(ctx, OAR_PADDLE_OP("mul"), {&cv, &cv}, {&sqv});
    run(ctx, OAR_PADDLE_OP("mean"), {&sqv}, {&varv}, {axes, keep});
    phi::DenseTensor inv = inv_std(ctx, var, double(epsilon));
    store(ctx, inv, {s.c}, saved_variance);
    // running = running * momentum + batch * (1 - momentum), in place safe.
    phi::DenseTensor m = scalar(ctx, sd, double(momentum)),
                     rest = scalar(ctx, sd, 1.0 - double(momentum)), tmp = empty(ctx, {s.c}, sd);
    View mv(m), rv(rest), tv(tmp);
    for (auto [batch, running, out] :
         {std::tuple{&sm, &mean, mean_out}, std::tuple{&varv, &variance, variance_out}}) {
      View r(*running), o(*out);
      run(ctx, OAR_PADDLE_OP("mul"), {batch, &rv}, {&tv});
      run(ctx, OAR_PADDLE_OP("mul"), {&r, &mv}, {&o});
      run(ctx, OAR_PADDLE_OP("add"), {&o, &tv}, {&o});
    }
  } else {
    store(ctx, mean, {s.c}, saved_mean);
    store(ctx, inv_std(ctx, variance, double(epsilon)), {s.c}, saved_variance);
    if (mean_out->data() != mean.data()) store(ctx, mean, {s.c}, mean_out);
    if (variance_out->data() != variance.data()) store(ctx, variance, {s.c}, variance_out);
    run(ctx, OAR_PADDLE_OP("sub"), {&xv, &smc}, {&cv});
  }
  // y = (x - mean) * inv * scale + bias.
  run(ctx, OAR_PADDLE_OP("mul"), {&cv, &svc}, {&cv});
  if (scale) {
    View w(*scale, s.chan);
    run(ctx, OAR_PADDLE_OP("mul"), {&cv, &w}, {&cv});
  }
  if (bias) {
    View b(*bias, s.chan);
    run(ctx, OAR_PADDLE_OP("add"), {&cv, &b}, {&cv});
  }
  store(ctx, c, xs, y);
}

// batch_norm_grad, with xhat = (x - mean) * inv and M elements per channel:
// dbias = sum(dy), dscale = sum(dy * xhat) over every axis but 1;
// training: dx = scale * inv * (dy - dbias / M - xhat * dscale / M);
// global statistics (the running ones, constants): dx = scale * inv * dy.
template <typename T, typename Context>
void BatchNormGradKernel(const Context& ctx, const phi::DenseTensor& x,
                         const paddle::optional<phi::DenseTensor>& scale,
                         const paddle::optional<phi::DenseTensor>&,
                         const paddle::optional<phi::DenseTensor>& mean,
                         const paddle::optional<phi::DenseTensor>& variance,
                         const phi::DenseTensor& saved_mean, const phi::DenseTensor& saved_variance,
                         const paddle::optional<phi::DenseTensor>&, const phi::DenseTensor& y_grad,
                         float, float epsilon, const std::string& data_layout, bool is_test,
                         bool use_global_stats, bool, phi::DenseTensor* x_grad,
                         phi::DenseTensor* scale_grad, phi::DenseTensor* bias_grad) {
  const BnShape s = bn_shape(ctx, "batch_norm_grad", x, data_layout);
  const bool global = is_test || use_global_stats;
  if (global && (!mean || !variance)) {
    unsupported(ctx, "batch_norm_grad", "global statistics without the running mean/variance");
  }
  const phi::DataType sd = global ? mean->dtype() : saved_mean.dtype();
  if (x_grad != nullptr) ctx.template Alloc<T>(x_grad);
  if (scale_grad != nullptr) ctx.Alloc(scale_grad, sd);
  if (bias_grad != nullptr) ctx.Alloc(bias_grad, sd);
  if (x.numel() == 0) {
    for (phi::DenseTensor* g : {scale_grad, bias_grad}) {
      if (g != nullptr) fill(ctx, g, 0.0);
    }
    return;
  }
  const std::vector<int64_t> xs = dims_of(x);
  phi::DenseTensor inv = global ? inv_std(ctx, *variance, double(epsilon)) : saved_variance;
  const phi::DenseTensor& mu = global ? *mean : saved_mean;
  phi::DenseTensor xc = as_dtype(ctx, x, sd), dy = as_dtype(ctx, y_grad, sd);
  phi::DenseTensor xhat = empty(ctx, xs, sd), t = empty(ctx, xs, sd);
  phi::DenseTensor db = empty(ctx, {s.c}, sd), ds = empty(ctx, {s.c}, sd);
  View xv(xc), dv(dy), hv(xhat), tv(t), dbv(db), dsv(ds);
  View muc(mu, s.chan), invc(inv, s.chan);
  const oar::Attr axes("axes", s.axes), keep("keepdim", false);
  run(ctx, OAR_PADDLE_OP("sub"), {&xv, &muc}, {&hv});
  run(ctx, OAR_PADDLE_OP("mul"), {&hv, &invc}, {&hv});
  run(ctx, OAR_PADDLE_OP("sum"), {&dv}, {&dbv}, {axes, keep});
  run(ctx, OAR_PADDLE_OP("mul"), {&dv, &hv}, {&tv});
  run(ctx, OAR_PADDLE_OP("sum"), {&tv}, {&dsv}, {axes, keep});
  if (x_grad != nullptr) {
    // k = inv * scale per channel.
    phi::DenseTensor k = empty(ctx, {s.c}, sd);
    View kv(k), kc(k, s.chan), iv(inv);
    if (scale) {
      View w(*scale);
      run(ctx, OAR_PADDLE_OP("mul"), {&iv, &w}, {&kv});
    } else {
      run(ctx, OAR_PADDLE_OP("copy"), {&iv}, {&kv});
    }
    if (global) {
      run(ctx, OAR_PADDLE_OP("mul"), {&dv, &kc}, {&tv});
    } else {
      phi::DenseTensor r = scalar(ctx, sd, 1.0 / double(s.count));
      phi::DenseTensor mdb = empty(ctx, {s.c}, sd), mds = empty(ctx, {s.c}, sd);
      View rv(r), mdbv(mdb), mdsv(mds), mdbc(mdb, s.chan), mdsc(mds, s.chan);
      run(ctx, OAR_PADDLE_OP("mul"), {&dbv, &rv}, {&mdbv});
      run(ctx, OAR_PADDLE_OP("mul"), {&dsv, &rv}, {&mdsv});
      run(ctx, OAR_PADDLE_OP("mul"), {&hv, &mdsc}, {&tv});
      run(ctx, OAR_PADDLE_OP("sub"), {&dv, &tv}, {&tv});
      run(ctx, OAR_PADDLE_OP("sub"), {&tv, &mdbc}, {&tv});
      run(ctx, OAR_PADDLE_OP("mul"), {&tv, &kc}, {&tv});
    }
    store(ctx, t, xs, x_grad);
  }
  if (scale_grad != nullptr) store(ctx, ds, {s.c}, scale_grad);
  if (bias_grad != nullptr) store(ctx, db, {s.c}, bias_grad);
}

}  // namespace oar_paddle

PD_REGISTER_PLUGIN_KERNEL(layer_norm, oar, ALL_LAYOUT, oar_paddle::LayerNormKernel,
                          OAR_PADDLE_FLOATS) {
  kernel->OutputAt(1).SetDataType(phi::DataType::UNDEFINED);
  kernel->OutputAt(2).SetDataType(phi::DataType::UNDEFINED);
}
PD_REGISTER_PLUGIN_KERNEL(layer_norm_grad, oar, ALL_LAYOUT, oar_paddle::LayerNormGradKernel,
                          OAR_PADDLE_FLOATS) {
  kernel->OutputAt(1).SetDataType(phi::DataType::UNDEFINED);
  kernel->OutputAt(2).SetDataType(phi::DataType::UNDEFINED);
}
PD_REGISTER_PLUGIN_KERNEL(embedding, oar, ALL_LAYOUT, oar_paddle::EmbeddingKernel,
                          OAR_PADDLE_FLOATS) {}
PD_REGISTER_PLUGIN_KERNEL(embedding_grad, oar, ALL_LAYOUT, oar_paddle::EmbeddingGradKernel,
                          OAR_PADDLE_FLOATS) {}
PD_REGISTER_PLUGIN_KERNEL(cross_entropy_with_softmax, oar, ALL_LAYOUT,
                          oar_paddle::CrossEntropyWithSoftmaxKernel, OAR_PADDLE_FLOATS) {}
PD_REGISTER_PLUGIN_KERNEL(cross_entropy_with_softmax_grad, oar, ALL_LAYOUT,
                          oar_paddle::CrossEntropyWithSoftmaxGradKernel, OAR_PADDLE_FLOATS) {}
PD_REGISTER_PLUGIN_KERNEL(mean_all, oar, ALL_LAYOUT, oar_paddle::MeanAllKernel, OAR_PADDLE_FLOATS) {
}
PD_REGISTER_PLUGIN_KERNEL(mean_all_grad, oar, ALL_LAYOUT, oar_paddle::MeanAllGradKernel,
                          OAR_PADDLE_FLOATS) {}
// 16-bit x keeps float32 statistics, scale and bias (as Paddle's GPU kernels).
PD_REGISTER_PLUGIN_KERNEL(batch_norm, oar, ALL_LAYOUT, oar_paddle::BatchNormKernel,
                          OAR_PADDLE_FLOATS) {
  if (kernel_key.dtype() == phi::DataType::FLOAT16 ||
      kernel_key.dtype() == phi::DataType::BFLOAT16) {
    for (int i = 1; i <= 4; ++i) {
      kernel->InputAt(i).SetDataType(phi::DataType::FLOAT32);
      kernel->OutputAt(i).SetDataType(phi::DataType::FLOAT32);
    }
  }
}
PD_REGISTER_PLUGIN_KERNEL(batch_norm_grad, oar, ALL_LAYOUT, oar_paddle::BatchNormGradKernel,
                          OAR_PADDLE_FLOATS) {
  if (kernel_key.dtype() == phi::DataType::FLOAT16 ||
      kernel_key.dtype() == phi::DataType::BFLOAT16) {
    for (int i = 1; i <= 6; ++i) kernel->InputAt(i).SetDataType(phi::DataType::FLOAT32);
    kernel->OutputAt(1).SetDataType(phi::DataType::FLOAT32);
    kernel->OutputAt(2).SetDataType(phi::DataType::FLOAT32);
  }
}
