// conv2d (OP 0), max_pool2d (1), avg_pool2d (2) in NCHW: one invocation per
// output element, f32 accumulation, zero padding read as "outside".
//
// Parameters: 0 outputs, 1 N, 2 C, 3 H, 4 W, 5 O, 6 OH, 7 OW, 8 KH, 9 KW, 10
// stride h, 11 stride w, 12 pad h, 13 pad w, 14 dilation h, 15 dilation w, 16
// groups, 17 has bias, 18 count_include_pad, 19 x offset, 20 weight offset, 21
// bias offset, 22 y offset.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DT, x)
TENSOR(1, DT, w)
TENSOR(2, DT, bias)
TENSOR(3, DT, y)

void main() {
  uint outputs = PU(0);
  int C = P(2), H = P(3), W = P(4), O = P(5), OH = P(6), OW = P(7), KH = P(8), KW = P(9);
  int sh = P(10), sw = P(11), ph = P(12), pw = P(13), dh = P(14), dw = P(15);
  for (uint index = gl_GlobalInvocationID.x; index < outputs; index += thread_count()) {
    int j = int(index % uint(OW));
    int i = int((index / uint(OW)) % uint(OH));
    int o = int((index / uint(OW * OH)) % uint(O));
    int n = int(index / uint(OW * OH * O));
    int top = i * sh - ph, left = j * sw - pw;
    if (OP == 0) {
      int per_group_in = C / P(16);
      int group = o / (O / P(16));
      float acc = P(17) != 0 ? load_bias(PU(21) + uint(o)) : 0.0;
      for (int c = 0; c < per_group_in; ++c) {
        int x_plane = P(19) + ((n * C + group * per_group_in + c) * H) * W;
        int w_plane = P(20) + ((o * per_group_in + c) * KH) * KW;
        for (int p = 0; p < KH; ++p) {
          int r = top + p * dh;
          if (r < 0 || r >= H) continue;
          for (int q = 0; q < KW; ++q) {
            int col = left + q * dw;
            if (col < 0 || col >= W) continue;
            acc += load_x(uint(x_plane + r * W + col)) * load_w(uint(w_plane + p * KW + q));
          }
        }
      }
      store_y(PU(22) + index, acc);
      continue;
    }
    int x_plane = P(19) + ((n * C + o) * H) * W;
    float acc = OP == 1 ? uintBitsToFloat(0xff800000u) : 0.0;
    bool nan_seen = false;
    int inside = 0;
    for (int p = 0; p < KH; ++p) {
      int r = top + p;
      if (r < 0 || r >= H) continue;
      for (int q = 0; q < KW; ++q) {
        int col = left + q;
        if (col < 0 || col >= W) continue;
        float v = load_x(uint(x_plane + r * W + col));
        ++inside;
        if (OP == 1) {
          if (isnan(v)) nan_seen = true;
          acc = max(acc, v);
        } else {
          acc += v;
        }
      }
    }
    if (OP == 1 && nan_seen) acc = uintBitsToFloat(0x7fc00000u);
    if (OP == 2) acc /= float(P(18) != 0 ? KH * KW : inside);
    store_y(PU(22) + index, acc);
  }
}
