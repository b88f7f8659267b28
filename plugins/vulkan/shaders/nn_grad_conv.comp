// conv2d_grad_input (OP 0) and conv2d_grad_weight (OP 1), f32 throughout: one
// invocation per result element. OP 0: dx[n, ci, h, w] sums dy * weight over
// the group's output channels and the taps whose output position lands on
// (h, w). OP 1: dweight[o, c, a, b] sums dy * x over n, oh, ow.
//
// Parameters: 0 results, 1 N, 2 C, 3 H, 4 W, 5 O, 6 KH, 7 KW, 8 OH, 9 OW,
// 10 groups, 11 SH, 12 SW, 13 PH, 14 PW, 15 DH, 16 DW, 17 dy offset, 18 weight
// (OP 0) or x (OP 1) offset, 19 result offset.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DT, dy)
TENSOR(1, DT, other)
TENSOR(3, DT, result)

void main() {
  uint total = PU(0);
  int N = P(1), C = P(2), H = P(3), W = P(4), O = P(5), KH = P(6), KW = P(7);
  int OH = P(8), OW = P(9), G = P(10), SH = P(11), SW = P(12), PH = P(13), PW = P(14);
  int DH = P(15), DW = P(16);
  int cg = C / G, og = O / G;
  for (uint index = gl_GlobalInvocationID.x; index < total; index += thread_count()) {
    int i = int(index);
    float acc = 0.0;
    if (OP == 0) {
      int col = i % W, row = (i / W) % H, ci = (i / (W * H)) % C, n = i / (W * H * C);
      int group = ci / cg, c = ci % cg;
      for (int o = group * og; o < (group + 1) * og; ++o) {
        for (int a = 0; a < KH; ++a) {
          int t = row + PH - a * DH;
          if (t < 0 || t % SH != 0 || t / SH >= OH) continue;
          for (int b = 0; b < KW; ++b) {
            int u = col + PW - b * DW;
            if (u < 0 || u % SW != 0 || u / SW >= OW) continue;
            acc += load_dy(PU(17) + uint(((n * O + o) * OH + t / SH) * OW + u / SW)) *
                   load_other(PU(18) + uint(((o * cg + c) * KH + a) * KW + b));
          }
        }
      }
    } else {
      int b = i % KW, a = (i / KW) % KH, c = (i / (KW * KH)) % cg, o = i / (KW * KH * cg);
      int ch = o / og * cg + c;
      for (int n = 0; n < N; ++n) {
        for (int oh = 0; oh < OH; ++oh) {
          int h = oh * SH - PH + a * DH;
          if (h < 0 || h >= H) continue;
          for (int ow = 0; ow < OW; ++ow) {
            int w = ow * SW - PW + b * DW;
            if (w < 0 || w >= W) continue;
            acc += load_dy(PU(17) + uint(((n * O + o) * OH + oh) * OW + ow)) *
                   load_other(PU(18) + uint(((n * C + ch) * H + h) * W + w));
          }
        }
      }
    }
    store_result(PU(19) + index, acc);
  }
}
