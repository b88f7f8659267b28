// rms_norm and rms_norm_grad (paddle.nn.functional.rms_norm), which Paddle's
// CPU wheel has no kernel for: the arguments are those of the GPU kernel
// (paddle/phi/kernels/gpu/rms_norm_cuda_kernel.h in the wheel) and of the
// generated API (rms_norm(x, scale?, normalized_shape, epsilon) -> y, invvar).
//
// x is viewed as [rows, D] (D the product of normalized_shape):
//   y      = OAR rms_norm(x, scale) (scale missing: ones)
//   invvar = 1 / sqrt(mean(x^2) + eps) per row, float32 for 16-bit x (Paddle's
//            accumulation type): cast, mul, mean, add, rsqrt
//   dx, dscale = OAR rms_norm_grad(dy, x, scale) (recomputes the statistics;
//            Paddle's invvar is not read)
#include "kernels/common.h"
#include "paddle/phi/common/amp_type_traits.h"

namespace oar_paddle {

namespace {

struct Rows {
  int64_t rows = 1, d = 1;
};

Rows rows_of(const phi::CustomContext& ctx, const char* kernel, const phi::DenseTensor& x,
             const std::vector<int64_t>& normalized_shape) {
  const std::vector<int64_t> xs = dims_of(x);
  if (normalized_shape.empty() || normalized_shape.size() > xs.size()) {
    unsupported(ctx, kernel, "a normalized_shape that is empty or longer than x's shape");
  }
  Rows r;
  const size_t begin = xs.size() - normalized_shape.size();
  for (size_t i = 0; i < xs.size(); ++i) (i < begin ? r.rows : r.d) *= xs[i];
  return r;
}

// The scale as [D], or ones when Paddle passes none.
phi::DenseTensor weight_of(const phi::CustomContext& ctx,
                           const paddle::optional<phi::DenseTensor>& scale, const Rows& r,
                           phi::DataType dtype) {
  if (scale) return *scale;
  phi::DenseTensor ones = empty(ctx, {r.d}, dtype);
  fill(ctx, &ones, 1.0);
  return ones;
}

}  // namespace

template <typename T, typename Context>
void RmsNormKernel(const Context& ctx, const phi::DenseTensor& x,
                   const paddle::optional<phi::DenseTensor>& scale,
                   const std::vector<int64_t>& normalized_shape, double epsilon,
                   phi::DenseTensor* y, phi::DenseTensor* invvar) {
  using Acc = typename phi::dtype::MPTypeTrait<T>::Type;
  ctx.template Alloc<T>(y);
  if (invvar != nullptr) ctx.template Alloc<Acc>(invvar);
  if (x.numel() == 0) return;
  const Rows r = rows_of(ctx, "rms_norm", x, normalized_shape);
  phi::DenseTensor w = weight_of(ctx, scale, r, x.dtype());
  View xv(x, {r.rows, r.d}), wv(w, {r.d}), yv(*y, {r.rows, r.d});
  run(ctx, OAR_PADDLE_OP("rms_norm"), {&xv, &wv}, {&yv}, {oar::Attr("eps", epsilon)});
  if (invvar == nullptr) return;
  // invvar in the accumulation dtype.
  const phi::DataType acc = invvar->dtype();
  phi::DenseTensor wide = x;
  if (acc != x.dtype()) {
    wide = empty(ctx, {r.rows, r.d}, acc);
    View o(wide);
    run(ctx, OAR_PADDLE_OP("cast"), {&xv}, {&o});
  }
  phi::DenseTensor sq = empty(ctx, {r.rows, r.d}, acc);
  phi::DenseTensor ms = empty(ctx, {r.rows, 1}, acc);
  phi::DenseTensor eps = scalar(ctx, acc, epsilon);
  View wv2(wide, {r.rows, r.d}), s(sq), m(ms), e(eps), out(*invvar, {r.rows, 1});
  run(ctx, OAR_PADDLE_OP("mul"), {&wv2, &wv2}, {&s});
  run(ctx, OAR_PADDLE_OP("mean"), {&s}, {&m},
      {oar::Attr("axes", std::vector<int64_t>{1}), oar::Attr("keepdim", true)});
  run(ctx, OAR_PADDLE_OP("add"), {&m, &e}, {&m});
  run(ctx, OAR_PADDLE_OP("rsqrt"), {&m}, {&out});
}

template <typename T, typename Context>
void RmsNormGradKernel(const Context& ctx, const phi::DenseTensor& x,
                       const paddle::optional<phi::DenseTensor>& scale, const phi::DenseTensor&,
                       const phi::DenseTensor& dy, const std::vector<int64_t>& normalized_shape,
                       double epsilon, phi::DenseTensor* dx, phi::DenseTensor* dscale) {
  if (dx != nullptr) ctx.template Alloc<T>(dx);
  if (dscale != nullptr) ctx.template Alloc<T>(dscale);
  if (x.numel() == 0) {
    if (dscale != nullptr) fill(ctx, dscale, 0.0);
    return;
  }
  const Rows r = rows_of(ctx, "rms_norm_grad", x, normalized_shape);
  phi::DenseTensor w = weight_of(ctx, scale, r, x.dtype());
  // OAR's operator writes both outputs; scratch for the one Paddle does not want.
  phi::DenseTensor dx_scratch, dw_scratch;
  if (dx == nullptr) dx_scratch = empty(ctx, {r.rows, r.d}, x.dtype());
  if (dscale == nullptr || !scale) dw_scratch = empty(ctx, {r.d}, x.dtype());
  phi::DenseTensor* dx_out = dx != nullptr ? dx : &dx_scratch;
  phi::DenseTensor* dw_out = dscale != nullptr && scale ? dscale : &dw_scratch;
  View d(dy, {r.rows, r.d}), xv(x, {r.rows, r.d}), wv(w, {r.d});
  View o(*dx_out, {r.rows, r.d}), ow(*dw_out, {r.d});
  run(ctx, OAR_PADDLE_OP("rms_norm_grad"), {&d, &xv, &wv}, {&o, &ow}, {oar::Attr("eps", epsilon)});
  if (dscale != nullptr && !scale) fill(ctx, dscale, 0.0);
}

}  // namespace oar_paddle

PD_REGISTER_PLUGIN_KERNEL(rms_norm, oar, ALL_LAYOUT, oar_paddle::RmsNormKernel, float, double,
                          phi::float16, phi::bfloat16) {
  if (kernel_key.dtype() == phi::DataType::FLOAT16 ||
      kernel_key.dtype() == phi::DataType::BFLOAT16) {
    kernel->OutputAt(1).SetDataType(phi::DataType::FLOAT32);
  }
}
PD_REGISTER_PLUGIN_KERNEL(rms_norm_grad, oar, ALL_LAYOUT, oar_paddle::RmsNormGradKernel, float,
                          double, phi::float16, phi::bfloat16) {}
