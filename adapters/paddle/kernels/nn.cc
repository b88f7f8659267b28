// Neural-network kernels: matmul, softmax, log_softmax.
#include "kernels/common.h"

namespace oar_paddle {

// Paddle's matmul promotes 1-D operands (x: [K] -> [1, K], y: [K] -> [K, 1],
// then drops that dimension from the result); OAR's takes rank >= 2, so the
// views carry the promoted shapes. Transposes of a 1-D operand are no-ops.
template <typename T, typename Context>
void MatmulKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y,
                  bool transpose_x, bool transpose_y, phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  std::vector<int64_t> xs = dims_of(x), ys = dims_of(y);
  if (xs.size() == 1) xs.insert(xs.begin(), 1), transpose_x = false;
  if (ys.size() == 1) ys.push_back(1), transpose_y = false;
  // The result's shape with both promotions kept.
  std::vector<int64_t> batch_x(xs.begin(), xs.end() - 2), batch_y(ys.begin(), ys.end() - 2);
  size_t rank = std::max(batch_x.size(), batch_y.size());
  std::vector<int64_t> os(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i + batch_x.size() >= rank ? batch_x[i + batch_x.size() - rank] : 1;
    int64_t b = i + batch_y.size() >= rank ? batch_y[i + batch_y.size() - rank] : 1;
    os[i] = a == 1 ? b : a;
  }
  os.push_back(transpose_x ? xs[xs.size() - 1] : xs[xs.size() - 2]);
  os.push_back(transpose_y ? ys[ys.size() - 2] : ys[ys.size() - 1]);
  View a(x, xs), b(y, ys), o(*out, os);
  run(ctx, OAR_PADDLE_OP("matmul"), {&a, &b}, {&o},
      {oar::Attr("transpose_a", transpose_x), oar::Attr("transpose_b", transpose_y)});
}

template <typename T, typename Context>
void SoftmaxKernel(const Context& ctx, const phi::DenseTensor& x, int axis, phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  View a(x), o(*out);
  run(ctx, OAR_PADDLE_OP("softmax"), {&a}, {&o}, {oar::Attr("axis", int64_t(axis))});
}

template <typename T, typename Context>
void LogSoftmaxKernel(const Context& ctx, const phi::DenseTensor& x, int axis,
                      phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  View a(x), o(*out);
  run(ctx, OAR_PADDLE_OP("log_softmax"), {&a}, {&o}, {oar::Attr("axis", int64_t(axis))});
}

}  // namespace oar_paddle

PD_REGISTER_PLUGIN_KERNEL(matmul, oar, ALL_LAYOUT, oar_paddle::MatmulKernel, OAR_PADDLE_FLOATS) {}
PD_REGISTER_PLUGIN_KERNEL(softmax, oar, ALL_LAYOUT, oar_paddle::SoftmaxKernel, OAR_PADDLE_FLOATS) {}
PD_REGISTER_PLUGIN_KERNEL(log_softmax, oar, ALL_LAYOUT, oar_paddle::LogSoftmaxKernel,
                          OAR_PADDLE_FLOATS) {}
