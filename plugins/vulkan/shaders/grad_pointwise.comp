// The pointwise gradients, dx = dy * f'(b) with b the operator's second input
// (x, or the forward output y for sigmoid and tanh), computed in f32 and
// rounded once at the store. OP: 0 relu, 1 sigmoid, 2 tanh, 3 silu, 4 gelu
// (erf form), 5 gelu (tanh form).
//
// Parameters: 0 n, 1 dy offset, 2 b offset, 3 dx offset.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DT, dy)
TENSOR(1, DT, b)
TENSOR(3, DT, dx)

float sigmoid_f(float x) { return 1.0 / (1.0 + exp(-x)); }

// erfc from the Numerical Recipes Chebyshev fit (relative error < 1.2e-7 for
// every x): Phi(x) = erfc(-x / sqrt(2)) / 2 keeps its precision in the left
// tail, where 1 + erf(x) cancels.
float erfc_f(float x) {
  float z = abs(x);
  float t = 1.0 / (1.0 + 0.5 * z);
  float poly =
      -z * z - 1.26551223 +
      t * (1.00002368 +
           t * (0.37409196 +
                t * (0.09678418 +
                     t * (-0.18628806 +
                          t * (0.27886807 +
                               t * (-1.13520398 +
                                    t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  float r = t * exp(poly);
  return x >= 0.0 ? r : 2.0 - r;
}

float derivative(float v) {
  if (OP == 1) return v * (1.0 - v);
  // (1 - y)(1 + y), not 1 - y^2: no cancellation near |y| = 1.
  if (OP == 2) return (1.0 - v) * (1.0 + v);
  if (OP == 3) return sigmoid_f(v) * (1.0 + v * sigmoid_f(-v));
  if (OP == 4) {
    float cdf = 0.5 * erfc_f(-v * 0.70710678118654752);
    float pdf = exp(-0.5 * v * v) * 0.39894228040143267;
    return cdf + v * pdf;
  }
  // tanh form: with s = sigmoid(2u) = (1 + tanh u) / 2, d/dx = s + 2 x s (1 - s) u'.
  float k = 0.79788456080286536, c = 0.044715;
  float u = k * (v + c * v * v * v);
  float s = sigmoid_f(2.0 * u), t = sigmoid_f(-2.0 * u);
  return s + 2.0 * v * s * t * k * (1.0 + 3.0 * c * v * v);
}

void main() {
  uint n = PU(0);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += thread_count()) {
    float g = load_dy(PU(1) + i);
    float v = load_b(PU(2) + i);
    float r;
    if (OP == 0) {
      r = isnan(v) ? v : (v > 0.0 ? g : 0.0);
    } else {
      r = g * derivative(v);
    }
    store_dx(PU(3) + i, r);
  }
}
