// layer_norm_grad / rms_norm_grad, f32 throughout. OP 0: one invocation per
// row: the row's mean and rstd (into |stats|, f32, for OP 1), then
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * weight (rms:
// no mean(g) term, mean held at 0). OP 1: one invocation per column j:
// dweight[j] = sum_r dy * xhat, dbias[j] = sum_r dy (not for rms).
//
// Parameters: 0 rows, 1 D, 2 dy offset, 3 x offset, 4 weight offset, 5 dx
// offset, 6 dweight offset, 7 dbias offset, 8 stats offset, 9 eps (f32 bits),
// 10 rms.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DT, dy)
TENSOR(1, DT, x)
TENSOR(2, DT, w)
TENSOR(3, DT, dx)
TENSOR(4, DT, dw)
TENSOR(5, DT, db)
TENSOR(6, 3, stats)

void main() {
  uint rows = PU(0), D = PU(1);
  bool rms = P(10) != 0;
  if (OP == 0) {
    for (uint r = gl_GlobalInvocationID.x; r < rows; r += thread_count()) {
      uint gi = PU(2) + r * D, xi = PU(3) + r * D, yi = PU(5) + r * D;
      float mean = 0.0;
      if (!rms) {
        for (uint j = 0u; j < D; ++j) mean += load_x(xi + j);
        mean /= float(D);
      }
      float var = 0.0;
      for (uint j = 0u; j < D; ++j) {
        float d = load_x(xi + j) - mean;
        var += d * d;
      }
      float rstd = 1.0 / sqrt(var / float(D) + PF(9));
      float mean_g = 0.0, mean_gx = 0.0;
      for (uint j = 0u; j < D; ++j) {
        float g = load_dy(gi + j) * load_w(PU(4) + j);
        mean_g += g;
        mean_gx += g * (load_x(xi + j) - mean) * rstd;
      }
      mean_g = rms ? 0.0 : mean_g / float(D);
      mean_gx /= float(D);
      for (uint j = 0u; j < D; ++j) {
        float g = load_dy(gi + j) * load_w(PU(4) + j);
        float xhat = (load_x(xi + j) - mean) * rstd;
        store_dx(yi + j, rstd * (g - mean_g - xhat * mean_gx));
      }
      store_stats(PU(8) + 2u * r, mean);
      store_stats(PU(8) + 2u * r + 1u, rstd);
    }
    return;
  }
  // Column sums over every row, compensated (Kahan): the terms of dweight
  // cancel, and a plain f32 sum over a thousand rows errs by more than the
  // tolerance of the (much smaller) result. |precise| keeps the compiler
  // from folding the compensation away.
  for (uint j = gl_GlobalInvocationID.x; j < D; j += thread_count()) {
    precise float sum_w = 0.0, sum_b = 0.0, carry_w = 0.0, carry_b = 0.0;
    for (uint r = 0u; r < rows; ++r) {
      float g = load_dy(PU(2) + r * D + j);
      float mean = load_stats(PU(8) + 2u * r), rstd = load_stats(PU(8) + 2u * r + 1u);
      precise float term_w = g * (load_x(PU(3) + r * D + j) - mean) * rstd - carry_w;
      precise float next_w = sum_w + term_w;
      carry_w = (next_w - sum_w) - term_w;
      sum_w = next_w;
      precise float term_b = g - carry_b;
      precise float next_b = sum_b + term_b;
      carry_b = (next_b - sum_b) - term_b;
      sum_b = next_b;
    }
    store_dw(PU(6) + j, sum_w);
    if (!rms) store_db(PU(7) + j, sum_b);
  }
}
