// Reductions. Invocation g reduces chunk g % chunks of output g / chunks:
// with one chunk that is the whole result, with several (long reductions,
// which a single invocation must not walk on llvmpipe) it is a partial result
// that a second dispatch reduces. OP: 0 sum, 1 mean, 2 max, 3 min, 4 prod,
// 5 argmax, 6 argmin (ARG builds). Float sums are compensated (Kahan).
//
// Parameters: 0 invocations, 1 kept ndim, 2..9 kept shape, 10..17 kept
// strides in x, 18 reduced ndim, 19..26 reduced shape, 27..34 reduced
// strides, 35 reduced count, 36 x offset, 37 y offset, 38 mean divisor (f32
// bits), 39 chunk length, 40 chunks, 41 ARG mode (0 indices, 1 partial:
// indices to y and values to binding 4 at 42, 2 final: indices read from
// binding 1 at 42 + the value's position), 42 see 41.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DTX, x)
TENSOR(3, DTY, y)
#ifdef ARG
TENSOR(1, 5, indices_in)
TENSOR(4, DTX, values_out)
#endif

#define IS_FLOAT (DTX <= 3)
#define T CAT(COMPUTE_, DTX)
#define Y CAT(COMPUTE_, DTY)

void main() {
  uint invocations = PU(0);
  uint count = PU(35), chunk = PU(39), chunks = PU(40);
  for (uint g = gl_GlobalInvocationID.x; g < invocations; g += thread_count()) {
    uint o = g / chunks;
    uint first = (g % chunks) * chunk;
    uint last = min(first + chunk, count);
    int base = P(36) + strided_offset(o, P(1), 2, 10);
#ifdef ARG
    T best = T(0);
    uint best_at = first;
    bool best_nan = false;
    for (uint r = first; r < last; ++r) {
      T v = load_x(uint(base + strided_offset(r, P(18), 19, 27)));
#if IS_FLOAT
      if (isnan(v)) {
        best = v;
        best_at = r;
        break;  // the first NaN wins
      }
#endif
      if (r == first || (OP == 5 ? v > best : v < best)) {
        best = v;
        best_at = r;
      }
    }
    uint at = uint(base + strided_offset(best_at, P(18), 19, 27));
    int mode = P(41);
    if (mode == 2) {
      y.v[uint(P(37)) + g] = indices_in.v[uint(P(42) + int(at) - P(36))];
    } else {
      y.v[uint(P(37)) + g] = int64_t(best_at);
      if (mode == 1 && last > first) values_out.v[uint(P(42)) + g] = x.v[at];
    }
#else
    // precise: without it glslc/llvmpipe may reassociate (sum - acc) - term
    // to 0 and drop the compensation.
    precise Y acc = (OP == 4) ? Y(1) : Y(0);
    precise Y compensation = Y(0);
    bool any_nan = false;
    for (uint r = first; r < last; ++r) {
      Y v = Y(load_x(uint(base + strided_offset(r, P(18), 19, 27))));
      if (OP == 0 || OP == 1) {
#if DTY <= 3
        precise Y term = v - compensation;
        precise Y sum = acc + term;
        // Inf terms would turn the compensation into NaN: plain sum then.
        compensation = isinf(sum) ? 0.0 : (sum - acc) - term;
        acc = sum;
#else
        acc += v;
#endif
      } else if (OP == 4) {
        acc *= v;
      } else {
#if DTY <= 3
        if (isnan(v)) any_nan = true;
#endif
        if (r == first || (OP == 2 ? v > acc : v < acc)) acc = v;
      }
    }
#if DTY <= 3
    if (OP == 1) acc = acc / PF(38);
    if (any_nan) acc = uintBitsToFloat(0x7fc00000u);
#endif
    store_y(uint(P(37)) + g, acc);
#endif
  }
}
