// Gradient kernels and the SGD update. Where OAR has the backward operator
// (relu_grad, tanh_grad, sigmoid_grad, silu_grad, gelu_grad, softmax_grad,
// log_softmax_grad) it is called; the others are composed of forward OAR
// operators: a broadcast gradient is summed back to its input's shape,
// matmul's gradients are matmuls, mean's is a scaled broadcast.
#include "kernels/common.h"

namespace oar_paddle {

namespace {

// Writes |full| (the shape of a broadcast result) summed down to |dx|'s
// shape: over the leading dimensions |dx| lacks and where |dx| has 1.
void reduce_to(const phi::CustomContext& ctx, const phi::DenseTensor& full, phi::DenseTensor* dx) {
  if (dx->numel() == 0) return;
  std::vector<int64_t> fs = dims_of(full), xs = dims_of(*dx);
  size_t lead = fs.size() - xs.size();
  std::vector<int64_t> axes, kept = fs;
  for (size_t i = 0; i < fs.size(); ++i) {
    if (i < lead || (xs[i - lead] == 1 && fs[i] != 1)) {
      axes.push_back(int64_t(i));
      kept[i] = 1;
    }
  }
  View f(full);
  if (axes.empty()) {
    View o(*dx, fs);
    run(ctx, OAR_PADDLE_OP("copy"), {&f}, {&o});
    return;
  }
  View o(*dx, kept);  // dx's elements, with the reduced axes kept as 1
  run(ctx, OAR_PADDLE_OP("sum"), {&f}, {&o}, {oar::Attr("axes", axes), oar::Attr("keepdim", true)});
}

// dx = reduce_to(op(a, b)) for a broadcast binary op, or a plain op when the
// shapes already match.
void binary_to(const phi::CustomContext& ctx, const oar::OpId& op, const phi::DenseTensor& a,
               const phi::DenseTensor& b, const phi::DenseTensor& like, phi::DenseTensor* dx) {
  ctx.Alloc(dx, like.dtype());
  if (dx->numel() == 0) return;
  View va(a), vb(b);
  if (dims_of(a) == dims_of(*dx) && dims_of(b) == dims_of(*dx)) {
    View o(*dx);
    run(ctx, op, {&va, &vb}, {&o});
    return;
  }
  std::vector<int64_t> full_shape =
      dims_of(a).size() >= dims_of(b).size() ? dims_of(a) : dims_of(b);
  // The broadcast of both shapes.
  std::vector<int64_t> sa = dims_of(a), sb = dims_of(b);
  size_t rank = std::max(sa.size(), sb.size());
  full_shape.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i + sa.size() >= rank ? sa[i + sa.size() - rank] : 1;
    int64_t y = i + sb.size() >= rank ? sb[i + sb.size() - rank] : 1;
    full_shape[i] = x == 1 ? y : x;
  }
  phi::DenseTensor full = empty(ctx, full_shape, like.dtype());
  View o(full);
  run(ctx, op, {&va, &vb}, {&o});
  reduce_to(ctx, full, dx);
}

}  // namespace

// ---- pointwise gradients that OAR has

#define OAR_PADDLE_GRAD_DEPOUT(kernel, op)                                                   \
  template <typename T, typename Context>                                                    \
  void kernel(const Context& ctx, const phi::DenseTensor& out, const phi::DenseTensor& dout, \
              phi::DenseTensor* dx) {                                                        \
    ctx.template Alloc<T>(dx);                                                               \
    if (dx->numel() == 0) return;                                                            \
    View dy(dout), y(out), o(*dx);                                                           \
    run(ctx, OAR_PADDLE_OP(op), {&dy, &y}, {&o});                                            \
  }
// relu_grad reads x > 0; Paddle hands relu's output, which is > 0 exactly there.
OAR_PADDLE_GRAD_DEPOUT(ReluGradKernel, "relu_grad")
OAR_PADDLE_GRAD_DEPOUT(TanhGradKernel, "tanh_grad")
OAR_PADDLE_GRAD_DEPOUT(SigmoidGradKernel, "sigmoid_grad")

template <typename T, typename Context>
void SiluGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor&,
                    const phi::DenseTensor& dout, phi::DenseTensor* dx) {
  ctx.template Alloc<T>(dx);
  if (dx->numel() == 0) return;
  View dy(dout), vx(x), o(*dx);
  run(ctx, OAR_PADDLE_OP("silu_grad"), {&dy, &vx}, {&o});
}

template <typename T, typename Context>
void GeluGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& dout,
                    bool approximate, phi::DenseTensor* dx) {
  ctx.template Alloc<T>(dx);
  if (dx->numel() == 0) return;
  View dy(dout), vx(x), o(*dx);
  run(ctx, OAR_PADDLE_OP("gelu_grad"), {&dy, &vx}, {&o},
      {oar::Attr("approximate", approximate ? "tanh" : "none")});
}

#define OAR_PADDLE_ROW_GRAD(kernel, op)                                                      \
  template <typename T, typename Context>                                                    \
  void kernel(const Context& ctx, const phi::DenseTensor& out, const phi::DenseTensor& dout, \
              int axis, phi::DenseTensor* dx) {                                              \
    ctx.template Alloc<T>(dx);                                                               \
    if (dx->numel() == 0) return;                                                            \
    View dy(dout), y(out), o(*dx);                                                           \
    run(ctx, OAR_PADDLE_OP(op), {&dy, &y}, {&o}, {oar::Attr("axis", int64_t(axis))});        \
  }
OAR_PADDLE_ROW_GRAD(SoftmaxGradKernel, "softmax_grad")
OAR_PADDLE_ROW_GRAD(LogSoftmaxGradKernel, "log_softmax_grad")

// ---- composed gradients

template <typename T, typename Context>
void AddGradKernel(const Context& ctx, const phi::DenseTensor&, const phi::DenseTensor&,
                   const phi::DenseTensor& dout, int, phi::DenseTensor* dx, phi::DenseTensor* dy) {
  for (phi::DenseTensor* target : {dx, dy}) {
    if (target == nullptr) continue;
    ctx.template Alloc<T>(target);
    reduce_to(ctx, dout, target);
  }
}

template <typename T, typename Context>
void SubtractGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor&,
                        const phi::DenseTensor& dout, int, phi::DenseTensor* dx,
                        phi::DenseTensor* dy) {
  if (dx != nullptr) {
    ctx.template Alloc<T>(dx);
    reduce_to(ctx, dout, dx);
  }
  if (dy != nullptr) {
    ctx.template Alloc<T>(dy);
    if (dy->numel() == 0) return;
    phi::DenseTensor neg = empty(ctx, dims_of(dout), dout.dtype());
    View d(dout), n(neg);
    run(ctx, OAR_PADDLE_OP("neg"), {&d}, {&n});
    reduce_to(ctx, neg, dy);
  }
  (void)x;
}

// dx = dout * y and dy = dout * x, each summed back over broadcast axes. dx
// or dy may share dout's memory (in-place gradients): both are computed into
// new tensors before either output is written.
template <typename T, typename Context>
void MultiplyGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y,
                        const phi::DenseTensor& dout, int, phi::DenseTensor* dx,
                        phi::DenseTensor* dy) {
  phi::DenseTensor gx, gy;
  if (dx != nullptr) {
    gx.Resize(dx->dims());
    binary_to(ctx, OAR_PADDLE_OP("mul"), dout, y, x, &gx);
  }
  if (dy != nullptr) {
    gy.Resize(dy->dims());
    binary_to(ctx, OAR_PADDLE_OP("mul"), dout, x, y, &gy);
  }
  for (auto [target, value] : {std::make_pair(dx, &gx), std::make_pair(dy, &gy)}) {
    if (target == nullptr) continue;
    ctx.template Alloc<T>(target);
    if (target->numel() == 0) continue;
    View v(*value), o(*target);
    run(ctx, OAR_PADDLE_OP("copy"), {&v}, {&o});
  }
}

// x ^ factor as OAR's pow with a broadcast scalar exponent.
template <typename T, typename Context>
void PowKernel(const Context& ctx, const phi::DenseTensor& x, const phi::Scalar& factor,
               phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  phi::DenseTensor e = scalar(ctx, x.dtype(), factor.to<double>());
  View a(x), b(e), o(*out);
  run(ctx, OAR_PADDLE_OP("pow"), {&a, &b}, {&o});
}

// dx = dout * factor * x ^ (factor - 1). Paddle may hand dx in dout's memory
// (an in-place gradient), so dout is read only by the last, elementwise step.
template <typename T, typename Context>
void PowGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& dout,
                   const phi::Scalar& factor, phi::DenseTensor* dx) {
  ctx.template Alloc<T>(dx);
  if (dx->numel() == 0) return;
  double f = factor.to<double>();
  phi::DenseTensor e = scalar(ctx, x.dtype(), f - 1), k = scalar(ctx, x.dtype(), f);
  phi::DenseTensor t = empty(ctx, dims_of(x), x.dtype());
  View a(x), ve(e), vk(k), vt(t), d(dout), o(*dx);
  run(ctx, OAR_PADDLE_OP("pow"), {&a, &ve}, {&vt});
  run(ctx, OAR_PADDLE_OP("mul"), {&vt, &vk}, {&vt});
  run(ctx, OAR_PADDLE_OP("mul"), {&vt, &d}, {&o});
}

// Paddle's matmul gradients, each a matmul (reading through transposes) of
// the promoted shapes, summed over broadcast batch dimensions.
template <typename T, typename Context>
void MatmulGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y,
                      const phi::DenseTensor& dout, bool tx, bool ty, phi::DenseTensor* dx,
                      phi::DenseTensor* dy) {
  std::vector<int64_t> xs = dims_of(x), ys = dims_of(y);
  bool x_vec = xs.size() == 1, y_vec = ys.size() == 1;
  if (x_vec) xs.insert(xs.begin(), 1), tx = false;
  if (y_vec) ys.push_back(1), ty = false;
  // dout with both promotions kept: [batch..., M, N].
  std::vector<int64_t> ds = dims_of(dout);
  if (x_vec) ds.insert(ds.end() - (y_vec ? 0 : 1), 1);
  if (y_vec) ds.push_back(1);
  std::vector<int64_t> batch(ds.begin(), ds.end() - 2);
  View vx(x, xs), vy(y, ys), vd(dout, ds);
  auto grad = [&](phi::DenseTensor* target, const std::vector<int64_t>& target_shape, const View& a,
                  bool ta, const View& b, bool tb) {
    ctx.template Alloc<T>(target);
    if (target->numel() == 0) return;
    std::vector<int64_t> full_shape = batch;
    full_shape.push_back(target_shape[target_shape.size() - 2]);
    full_shape.push_back(target_shape[target_shape.size() - 1]);
    oar::Attr attrs[] = {oar::Attr("transpose_a", ta), oar::Attr("transpose_b", tb)};
    if (full_shape == target_shape) {
      View o(*target, target_shape);
      run(ctx, OAR_PADDLE_OP("matmul"), {&a, &b}, {&o}, {attrs[0], attrs[1]});
      return;
    }
    phi::DenseTensor full = empty(ctx, full_shape, x.dtype());
    View o(full);
    run(ctx, OAR_PADDLE_OP("matmul"), {&a, &b}, {&o}, {attrs[0], attrs[1]});
    phi::DenseTensor shaped;  // target viewed with its promoted shape
    shaped.ShareDataWith(*target);
    shaped.Resize(common::make_ddim(target_shape));
    reduce_to(ctx, full, &shaped);
  };
  if (dx != nullptr) {
    if (!tx && !ty) grad(dx, xs, vd, false, vy, true);
    if (tx && !ty) grad(dx, xs, vy, false, vd, true);
    if (!tx && ty) grad(dx, xs, vd, false, vy, false);
    if (tx && ty) grad(dx, xs, vy, true, vd, true);
  }
  if (dy != nullptr) {
    if (!tx && !ty) grad(dy, ys, vx, true, vd, false);
    if (tx && !ty) grad(dy, ys, vx, false, vd, false);
    if (!tx && ty) grad(dy, ys, vd, true, vx, false);
    if (tx && ty) grad(dy, ys, vd, true, vx, true);
  }
}

namespace {
// dout viewed with the reduced axes kept (size 1), to broadcast against x.
std::vector<int64_t> kept_shape(const phi::DenseTensor& x, const phi::IntArray& dims,
                                bool reduce_all) {
  std::vector<int64_t> shape = dims_of(x);
  std::vector<int64_t> axes(dims.GetData().begin(), dims.GetData().end());
  if (reduce_all || axes.empty()) {
    for (int64_t& d : shape) d = 1;
    return shape;
  }
  for (int64_t a : axes) shape[size_t(a < 0 ? a + int64_t(shape.size()) : a)] = 1;
  return shape;
}
}  // namespace

// dx = broadcast(dout) * (1 / count).
template <typename T, typename Context>
void MeanGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& dout,
                    const phi::IntArray& dims, bool, bool reduce_all, phi::DenseTensor* dx) {
  ctx.template Alloc<T>(dx);
  if (dx->numel() == 0) return;
  std::vector<int64_t> kept = kept_shape(x, dims, reduce_all);
  int64_t reduced = 1;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (kept[i] == 1) reduced *= dims_of(x)[i];
  }
  fill(ctx, dx, 1.0 / double(reduced));
  View d(dout, kept), o(*dx);
  run(ctx, OAR_PADDLE_OP("mul"), {&o, &d}, {&o});
}

// dx = broadcast(dout).
template <typename T, typename Context>
void SumGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& dout,
                   const phi::IntArray& dims, bool, bool reduce_all, phi::DenseTensor* dx) {
  ctx.template Alloc<T>(dx);
  if (dx->numel() == 0) return;
  fill(ctx, dx, 0.0);
  View d(dout, kept_shape(x, dims, reduce_all)), o(*dx);
  run(ctx, OAR_PADDLE_OP("add"), {&o, &d}, {&o});
}

// param_out = param - learning_rate * grad, learning_rate a one-element
// device tensor (read on the device: no copy to the host per step).
template <typename T, typename Context>
void SgdKernel(const Context& ctx, const phi::DenseTensor& param,
               const phi::DenseTensor& learning_rate, const phi::DenseTensor& grad,
               const paddle::optional<phi::DenseTensor>&, bool, phi::DenseTensor* param_out,
               phi::DenseTensor*) {
  ctx.template Alloc<T>(param_out);
  if (param_out->numel() == 0) return;
  phi::DenseTensor step = empty(ctx, dims_of(grad), grad.dtype());
  View g(grad), lr(learning_rate, {}), s(step), p(param), o(*param_out);
  run(ctx, OAR_PADDLE_OP("mul"), {&g, &lr}, {&s});
  run(ctx, OAR_PADDLE_OP("sub"), {&p, &s}, {&o});
}

}  // namespace oar_paddle

OAR_PADDLE_REGISTER(relu_grad, ReluGradKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(tanh_grad, TanhGradKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(sigmoid_grad, SigmoidGradKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(silu_grad, SiluGradKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(gelu_grad, GeluGradKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(softmax_grad, SoftmaxGradKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(log_softmax_grad, LogSoftmaxGradKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(add_grad, AddGradKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(subtract_grad, SubtractGradKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(multiply_grad, MultiplyGradKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(pow, PowKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(pow_grad, PowGradKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(matmul_grad, MatmulGradKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(mean_grad, MeanGradKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(sum_grad, SumGradKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(sgd, SgdKernel, OAR_PADDLE_FLOATS)
