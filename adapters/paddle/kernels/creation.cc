// Creation and layout kernels: full, full_like, cast, contiguous, transpose,
// and scale (composed of fill, mul and add).
#include "kernels/common.h"
#include "paddle/common/ddim.h"

namespace oar_paddle {

template <typename T, typename Context>
void FullKernel(const Context& ctx, const phi::IntArray& shape, const phi::Scalar& value,
                phi::DataType, phi::DenseTensor* out) {
  out->Resize(common::make_ddim(shape.GetData()));
  ctx.template Alloc<T>(out);
  fill(ctx, out, value.to<double>());
}

template <typename T, typename Context>
void FullLikeKernel(const Context& ctx, const phi::DenseTensor&, const phi::Scalar& value,
                    phi::DataType, phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  fill(ctx, out, value.to<double>());
}

template <typename T, typename Context>
void CastKernel(const Context& ctx, const phi::DenseTensor& x, phi::DataType out_dtype,
                phi::DenseTensor* out) {
  ctx.Alloc(out, out_dtype);
  if (out->numel() == 0) return;
  View a(x), o(*out);
  run(ctx, OAR_PADDLE_OP("cast"), {&a}, {&o});
}

// A strided view (Paddle's stride kernels) to a compact tensor: OAR's copy is
// the one operator that reads arbitrary strides.
template <typename T, typename Context>
void ContiguousKernel(const Context& ctx, const phi::DenseTensor& input, phi::DenseTensor* out) {
  phi::DenseTensorMeta meta = input.meta();
  meta.strides = meta.calc_strides(meta.dims);
  meta.offset = 0;
  out->set_meta(meta);
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  View a(input), o(*out);
  run(ctx, OAR_PADDLE_OP("copy"), {&a}, {&o});
}

template <typename T, typename Context>
void TransposeKernel(const Context& ctx, const phi::DenseTensor& x, const std::vector<int>& axis,
                     phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  std::vector<int64_t> perm(axis.begin(), axis.end());
  for (int64_t& p : perm) {
    if (p < 0) p += x.dims().size();
  }
  View a(x), o(*out);
  run(ctx, OAR_PADDLE_OP("transpose"), {&a}, {&o}, {oar::Attr("perm", perm)});
}

// The gradient of a transpose is the transpose by the inverse permutation.
template <typename T, typename Context>
void TransposeGradKernel(const Context& ctx, const phi::DenseTensor& out_grad,
                         const std::vector<int>& axis, phi::DenseTensor* x_grad) {
  ctx.template Alloc<T>(x_grad);
  if (x_grad->numel() == 0) return;
  const int64_t rank = int64_t(axis.size());
  std::vector<int64_t> inverse(axis.size());
  for (size_t i = 0; i < axis.size(); ++i) {
    int64_t p = axis[i] < 0 ? axis[i] + rank : axis[i];
    inverse[size_t(p)] = int64_t(i);
  }
  View a(out_grad), o(*x_grad);
  run(ctx, OAR_PADDLE_OP("transpose"), {&a}, {&o}, {oar::Attr("perm", inverse)});
}

// bias_after_scale ? x * scale + bias : (x + bias) * scale.
template <typename T, typename Context>
void ScaleKernel(const Context& ctx, const phi::DenseTensor& x, const phi::Scalar& scale,
                 const phi::Scalar& bias, bool bias_after_scale, phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  double s = scale.to<double>(), b = bias.to<double>();
  View a(x), o(*out);
  phi::DenseTensor st = scalar(ctx, x.dtype(), s);
  phi::DenseTensor bt = scalar(ctx, x.dtype(), b);
  View sv(st), bv(bt);
  if (bias_after_scale) {
    run(ctx, OAR_PADDLE_OP("mul"), {&a, &sv}, {&o});
    if (b != 0) run(ctx, OAR_PADDLE_OP("add"), {&o, &bv}, {&o});
  } else {
    run(ctx, OAR_PADDLE_OP("add"), {&a, &bv}, {&o});
    run(ctx, OAR_PADDLE_OP("mul"), {&o, &sv}, {&o});
  }
}

}  // namespace oar_paddle

PD_REGISTER_PLUGIN_KERNEL(full, oar, ALL_LAYOUT, oar_paddle::FullKernel, OAR_PADDLE_ALL) {}
PD_REGISTER_PLUGIN_KERNEL(full_like, oar, ALL_LAYOUT, oar_paddle::FullLikeKernel, OAR_PADDLE_ALL) {
  kernel->InputAt(0).SetBackend(phi::Backend::ALL_BACKEND);
}
PD_REGISTER_PLUGIN_KERNEL(cast, oar, ALL_LAYOUT, oar_paddle::CastKernel, OAR_PADDLE_ALL) {
  kernel->OutputAt(0).SetDataType(phi::DataType::UNDEFINED);
}
PD_REGISTER_PLUGIN_KERNEL(contiguous, oar, ALL_LAYOUT, oar_paddle::ContiguousKernel,
                          OAR_PADDLE_ALL) {}
PD_REGISTER_PLUGIN_KERNEL(transpose, oar, ALL_LAYOUT, oar_paddle::TransposeKernel, OAR_PADDLE_ALL) {
}
PD_REGISTER_PLUGIN_KERNEL(transpose_grad, oar, ALL_LAYOUT, oar_paddle::TransposeGradKernel,
                          OAR_PADDLE_ALL) {}
PD_REGISTER_PLUGIN_KERNEL(scale, oar, ALL_LAYOUT, oar_paddle::ScaleKernel, OAR_PADDLE_FLOATS) {}
