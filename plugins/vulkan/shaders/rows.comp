// Row-wise and per-channel normalisations. OP: 0 softmax, 1 log_softmax, 2
// layer_norm, 3 rms_norm (one invocation per row; a row is L elements
// |inner| apart), 4 batch_norm and 5 rotary_embedding (one invocation per
// element or pair).
//
// Parameters for 0..3: 0 rows, 1 inner, 2 L, 3 x offset, 4 y offset, 5 weight
// offset, 6 bias offset, 7 eps (f32 bits).
// For 4: 0 n, 1 inner, 2 C, 3 x, 4 y, 5 weight, 6 bias, 7 eps, 8 mean, 9 var.
// For 5: 0 pairs, 1 S, 2 half of D, 3 interleaved, 4 x, 5 cos, 6 sin, 7 y.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DT, x)
TENSOR(1, DT, w)
TENSOR(2, DT, b)
TENSOR(3, DT, y)
TENSOR(4, DT, mean_in)
TENSOR(5, DT, var_in)

float nan_value() { return uintBitsToFloat(0x7fc00000u); }

void normalise_row(uint row) {
  uint inner = PU(1), L = PU(2);
  uint start = (row / inner) * L * inner + row % inner;
  uint xi = PU(3) + start, yi = PU(4) + start;
  if (OP == 0 || OP == 1) {
    float m = uintBitsToFloat(0xff800000u);
    bool invalid = false;
    for (uint j = 0u; j < L; ++j) {
      float v = load_x(xi + j * inner);
      if (isnan(v)) invalid = true;
      m = max(m, v);
    }
    // NaN, +inf or only -inf in the row: every position is NaN.
    if (invalid || isinf(m)) {
      for (uint j = 0u; j < L; ++j) store_y(yi + j * inner, nan_value());
      return;
    }
    float s = 0.0;
    for (uint j = 0u; j < L; ++j) s += exp(load_x(xi + j * inner) - m);
    float log_s = log(s);
    for (uint j = 0u; j < L; ++j) {
      float v = load_x(xi + j * inner) - m;
      store_y(yi + j * inner, OP == 0 ? exp(v) / s : v - log_s);
    }
    return;
  }
  float eps = PF(7);
  float mean = 0.0;
  if (OP == 2) {
    for (uint j = 0u; j < L; ++j) mean += load_x(xi + j * inner);
    mean /= float(L);
  }
  float square_sum = 0.0;
  for (uint j = 0u; j < L; ++j) {
    float d = load_x(xi + j * inner) - mean;
    square_sum += d * d;
  }
  float inv = 1.0 / sqrt(square_sum / float(L) + eps);
  for (uint j = 0u; j < L; ++j) {
    float v = (load_x(xi + j * inner) - mean) * inv * load_w(PU(5) + j);
    if (OP == 2) v += load_b(PU(6) + j);
    store_y(yi + j * inner, v);
  }
}

void main() {
  uint n = PU(0);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += thread_count()) {
    if (OP <= 3) {
      normalise_row(i);
    } else if (OP == 4) {
      uint c = (i / PU(1)) % PU(2);
      float d = load_var_in(PU(9) + c) + PF(7);
      float v = (load_x(PU(3) + i) - load_mean_in(PU(8) + c)) / sqrt(d);
      store_y(PU(4) + i, v * load_w(PU(5) + c) + load_b(PU(6) + c));
    } else {
      uint half_d = PU(2);
      uint k = i % half_d;
      uint row = i / half_d;
      uint s = row % PU(1);
      uint first = row * 2u * half_d + (P(3) != 0 ? 2u * k : k);
      uint second = first + (P(3) != 0 ? 1u : half_d);
      float x1 = load_x(PU(4) + first), x2 = load_x(PU(4) + second);
      float co = load_w(PU(5) + s * half_d + k), si = load_b(PU(6) + s * half_d + k);
      store_y(PU(7) + first, x1 * co - x2 * si);
      store_y(PU(7) + second, x2 * co + x1 * si);
    }
  }
}
