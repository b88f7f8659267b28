// max_pool2d_grad / avg_pool2d_grad, f32 throughout: one invocation per
// element (plane, h, w) of dx, summing dy over the windows that hold it: max
// only those whose first maximum (row-major over in-bounds positions, a NaN
// counting as the maximum) it is; avg dy / divisor of each.
//
// Parameters: 0 dx elements, 1 H, 2 W, 3 OH, 4 OW, 5 KH, 6 KW, 7 SH, 8 SW,
// 9 PH, 10 PW, 11 max, 12 count_include_pad, 13 dy offset, 14 x offset,
// 15 dx offset.
#version 450
#include "common.glsl"

TENSOR(0, DT, dy)
TENSOR(1, DT, x)
TENSOR(3, DT, dx)

void main() {
  uint n = PU(0);
  int H = P(1), W = P(2), OH = P(3), OW = P(4), KH = P(5), KW = P(6);
  int SH = P(7), SW = P(8), PH = P(9), PW = P(10);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += thread_count()) {
    int col = int(i % uint(W));
    int row = int((i / uint(W)) % uint(H));
    uint plane = i / uint(W * H);
    uint xbase = PU(14) + plane * uint(H * W);
    uint gbase = PU(13) + plane * uint(OH * OW);
    int oh_low = row + PH - KH + 1, ow_low = col + PW - KW + 1;
    int oh_begin = oh_low <= 0 ? 0 : (oh_low + SH - 1) / SH;
    int ow_begin = ow_low <= 0 ? 0 : (ow_low + SW - 1) / SW;
    int oh_end = min((row + PH) / SH + 1, OH);
    int ow_end = min((col + PW) / SW + 1, OW);
    float acc = 0.0;
    for (int oh = oh_begin; oh < oh_end; ++oh) {
      int h0 = oh * SH - PH;
      int h_begin = max(h0, 0), h_end = min(h0 + KH, H);
      for (int ow = ow_begin; ow < ow_end; ++ow) {
        int w0 = ow * SW - PW;
        int w_begin = max(w0, 0), w_end = min(w0 + KW, W);
        float g = load_dy(gbase + uint(oh * OW + ow));
        if (P(11) != 0) {
          int best = h_begin * W + w_begin;
          float best_value = load_x(xbase + uint(best));
          bool done = isnan(best_value);
          for (int h = h_begin; h < h_end && !done; ++h) {
            for (int w = w_begin; w < w_end && !done; ++w) {
              float v = load_x(xbase + uint(h * W + w));
              if (isnan(v) || v > best_value) {
                best = h * W + w;
                best_value = v;
                done = isnan(v);
              }
            }
          }
          if (best == row * W + col) acc += g;
        } else {
          int count = P(12) != 0 ? KH * KW : (h_end - h_begin) * (w_end - w_begin);
          acc += g / float(count);
        }
      }
    }
    store_dx(PU(15) + i, acc);
  }
}
