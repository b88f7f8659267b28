// scaled_dot_product_attention_grad, f32 throughout, in three passes over
// [batch, Lq, D] q, [batch, Lk, D] k, [batch, Lk, Dv] v, [batch, Lq, Dv] dy.
// OP 0, per query row: the score maximum m, the exp-sum l and delta =
// sum_j p_j (dy . v_j) into |stats|. OP 1, per element of dq: scale sum_j
// ds_j k_j with ds_j = p_j (dy . v_j - delta). OP 2, per key j and column c:
// c < D: dk = scale sum_i ds_ij q_i; else dv = sum_i p_ij dy_i. A causal row
// i sees keys j < min(Lk, max(i + shift + 1, 0)).
//
// Parameters: 0 items, 1 batch, 2 Lq, 3 Lk, 4 D, 5 Dv, 6 causal, 7 shift,
// 8 scale (f32 bits), 9 dy, 10 q, 11 k, 12 v, 13 stats, 14 dq, 15 dk, 16 dv
// offsets.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DT, dy)
TENSOR(1, DT, q)
TENSOR(2, DT, k)
TENSOR(3, DT, v)
TENSOR(4, DT, dq)
TENSOR(5, DT, dk)
TENSOR(6, DT, dv)
TENSOR(7, 3, stats)

int Lq, Lk, D, Dv;

int visible(int i) { return P(6) != 0 ? min(Lk, max(i + P(7) + 1, 0)) : Lk; }

float score(int b, int i, int j) {
  float s = 0.0;
  for (int t = 0; t < D; ++t) {
    s += load_q(PU(10) + uint((b * Lq + i) * D + t)) * load_k(PU(11) + uint((b * Lk + j) * D + t));
  }
  return s * PF(8);
}

float dp(int b, int i, int j) {
  float s = 0.0;
  for (int t = 0; t < Dv; ++t) {
    s += load_dy(PU(9) + uint((b * Lq + i) * Dv + t)) * load_v(PU(12) + uint((b * Lk + j) * Dv + t));
  }
  return s;
}

void main() {
  uint items = PU(0);
  Lq = P(2);
  Lk = P(3);
  D = P(4);
  Dv = P(5);
  for (uint index = gl_GlobalInvocationID.x; index < items; index += thread_count()) {
    int idx = int(index);
    if (OP == 0) {
      int b = idx / Lq, i = idx % Lq, n = visible(i);
      float m = uintBitsToFloat(0xff800000u);
      for (int j = 0; j < n; ++j) m = max(m, score(b, i, j));
      float l = 0.0, weighted = 0.0;
      for (int j = 0; j < n; ++j) {
        float e = exp(score(b, i, j) - m);
        l += e;
        weighted += e * dp(b, i, j);
      }
      store_stats(PU(13) + 3u * index, m);
      store_stats(PU(13) + 3u * index + 1u, l);
      store_stats(PU(13) + 3u * index + 2u, n > 0 ? weighted / l : 0.0);
    } else if (OP == 1) {
      int t = idx % D, row = idx / D, b = row / Lq, i = row % Lq, n = visible(i);
      float m = load_stats(PU(13) + 3u * uint(row)), l = load_stats(PU(13) + 3u * uint(row) + 1u);
      float delta = load_stats(PU(13) + 3u * uint(row) + 2u);
      float acc = 0.0;
      for (int j = 0; j < n; ++j) {
        float p = exp(score(b, i, j) - m) / l;
        acc += p * (dp(b, i, j) - delta) * PF(8) * load_k(PU(11) + uint((b * Lk + j) * D + t));
      }
      store_dq(PU(14) + index, acc);
    } else {
      int width = D + Dv, col = idx % width, key = idx / width, b = key / Lk, j = key % Lk;
      float acc = 0.0;
      for (int i = 0; i < Lq; ++i) {
        if (j >= visible(i)) continue;
        uint row = uint(b * Lq + i);
        float p = exp(score(b, i, j) - load_stats(PU(13) + 3u * row)) /
                  load_stats(PU(13) + 3u * row + 1u);
        if (col < D) {
          float ds = p * (dp(b, i, j) - load_stats(PU(13) + 3u * row + 2u)) * PF(8);
          acc += ds * load_q(PU(10) + row * uint(D) + uint(col));
        } else {
          acc += p * load_dy(PU(9) + row * uint(Dv) + uint(col - D));
        }
      }
      if (col < D) {
        store_dk(PU(15) + uint(key * D + col), acc);
      } else {
        store_dv(PU(16) + uint(key * Dv + col - D), acc);
      }
    }
  }
}
