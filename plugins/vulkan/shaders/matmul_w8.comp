// matmul_w8: y[r, n] = scale[n] * sum_k x[r, k] * weight[n, k] with weight
// i8 [N, K] (weight-only quantization); one invocation per output, f32
// accumulation, one rounding at the store. x is contiguous [rows, K].
//
// Parameters: 0 outputs, 1 N, 2 K, 3 x offset, 4 weight offset, 5 scale
// offset, 6 y offset.
#version 450
#include "common.glsl"

TENSOR(0, DT, x)
TENSOR(1, 7, w)
TENSOR(2, DT, s)
TENSOR(3, DT, y)

void main() {
  uint outputs = PU(0), N = PU(1), K = PU(2);
  for (uint o = gl_GlobalInvocationID.x; o < outputs; o += thread_count()) {
    uint n = o % N;
    uint xi = PU(3) + (o / N) * K;
    uint wi = PU(4) + n * K;
    float acc = 0.0;
    for (uint k = 0u; k < K; ++k) acc += load_x(xi + k) * float(load_w(wi + k));
    store_y(PU(6) + o, acc * load_s(PU(5) + n));
  }
}
