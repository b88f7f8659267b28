// matmul: one invocation per output element, f32 accumulation. Transposes
// and broadcast batch dimensions are strides.
//
// Parameters: 0 outputs, 1 batch ndim, 2..9 batch shape, 10..17 a batch
// strides, 18..25 b batch strides, 26 M, 27 N, 28 K, 29 a offset, 30 a m
// stride, 31 a k stride, 32 b offset, 33 b k stride, 34 b n stride, 35 y
// offset.
#version 450
#include "common.glsl"

TENSOR(0, DT, a)
TENSOR(1, DT, b)
TENSOR(3, DT, y)

void main() {
  uint outputs = PU(0);
  uint M = PU(26), N = PU(27), K = PU(28);
  for (uint o = gl_GlobalInvocationID.x; o < outputs; o += thread_count()) {
    uint n = o % N;
    uint m = (o / N) % M;
    uint batch = o / (N * M);
    int ai = P(29) + strided_offset(batch, P(1), 2, 10) + int(m) * P(30);
    int bi = P(32) + strided_offset(batch, P(1), 2, 18) + int(n) * P(34);
    int ak = P(31), bk = P(33);
    float acc = 0.0;
    for (uint k = 0u; k < K; ++k) {
      acc += load_a(uint(ai)) * load_b(uint(bi));
      ai += ak;
      bi += bk;
    }
    store_y(uint(P(35)) + o, acc);
  }
}
