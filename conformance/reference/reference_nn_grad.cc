// The reference implementation of the operators of core/ops/schema_nn_grad.cc:
// plain loops in double (int64 for integers), written from docs/ops.md.
#include <algorithm>
#include <cmath>

#include "conformance/reference/reference_parts.h"

namespace oar::conformance::ref {
namespace {

// layer_norm_grad (|rms| false) and rms_norm_grad, per row of D elements:
// xhat = (x - mean) * rstd, g = dy * weight,
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (rms: no mean(g) term),
// dweight = sum over rows of dy * xhat, dbias = sum over rows of dy.
void norm_grad(Ctx& c, bool rms) {
  const auto dy = values(c.in[0]), x = values(c.in[1]), w = values(c.in[2]);
  const double eps = c.attrs.get_float("eps");
  const int64_t D = c.in[1].shape.back();
  const int64_t rows = D == 0 ? 0 : c.in[1].numel() / D;
  std::vector<double> dweight(size_t(D), 0.0), dbias(size_t(D), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * D;
    const double* dyr = dy.data() + r * D;
    double mean = 0, var = 0;
    if (!rms) {
      for (int64_t j = 0; j < D; ++j) mean += xr[j];
      mean /= double(D);
    }
    for (int64_t j = 0; j < D; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    const double rstd = 1.0 / std::sqrt(var / double(D) + eps);
    double mean_g = 0, mean_gx = 0;
    for (int64_t j = 0; j < D; ++j) {
      const double g = dyr[j] * w[size_t(j)], xhat = (xr[j] - mean) * rstd;
      mean_g += g;
      mean_gx += g * xhat;
      dweight[size_t(j)] += dyr[j] * xhat;
      dbias[size_t(j)] += dyr[j];
    }
    mean_g = rms ? 0.0 : mean_g / double(D);
    mean_gx /= double(D);
    for (int64_t j = 0; j < D; ++j) {
      const double g = dyr[j] * w[size_t(j)], xhat = (xr[j] - mean) * rstd;
      c.out[0].set(r * D + j, rstd * (g - mean_g - xhat * mean_gx));
    }
  }
  for (int64_t j = 0; j < D; ++j) {
    c.out[1].set(j, dweight[size_t(j)]);
    if (!rms) c.out[2].set(j, dbias[size_t(j)]);
  }
}

// The gradient of a pooling: each window (n, c, oh, ow) hands dy[n, c, oh, ow]
// to x's positions: max_pool2d_grad all of it to the window's first maximum
// (row-major over the in-bounds positions; a NaN counts as the maximum, the
// first NaN wins), avg_pool2d_grad dy / divisor to every in-bounds position.
void pool_grad(Ctx& c, bool is_max) {
  const HostTensor &dy = c.in[0], &x = c.in[1];
  HostTensor& dx = c.out[0];
  const auto k = pair_attr(c.attrs, "kernel_size", {});
  const auto stride = pair_attr(c.attrs, "stride", k);
  const auto pad = pair_attr(c.attrs, "padding", {0, 0});
  const bool include_pad = !is_max && c.attrs.get_bool("count_include_pad");
  const int64_t H = x.shape[2], W = x.shape[3], OH = dy.shape[2], OW = dy.shape[3];
  const auto xv = values(x), dyv = values(dy);
  std::vector<double> acc(size_t(x.numel()), 0.0);
  for (int64_t p = 0; p < x.shape[0] * x.shape[1]; ++p) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        const double g = dyv[size_t((p * OH + oh) * OW + ow)];
        std::vector<int64_t> inside;
        for (int64_t h = oh * stride[0] - pad[0]; h < oh * stride[0] - pad[0] + k[0]; ++h) {
          for (int64_t v = ow * stride[1] - pad[1]; v < ow * stride[1] - pad[1] + k[1]; ++v) {
            if (h >= 0 && h < H && v >= 0 && v < W) inside.push_back((p * H + h) * W + v);
          }
        }
        if (is_max) {
          int64_t best = inside.front();
          for (int64_t i : inside) {
            if (std::isnan(xv[size_t(best)])) break;
            if (std::isnan(xv[size_t(i)]) || xv[size_t(i)] > xv[size_t(best)]) best = i;
          }
          acc[size_t(best)] += g;
          continue;
        }
        const double divisor = include_pad ? double(k[0] * k[1]) : double(inside.size());
        for (int64_t i : inside) acc[size_t(i)] += g / divisor;
      }
    }
  }
  for (int64_t i = 0; i < x.numel(); ++i) dx.set(i, acc[size_t(i)]);
}

// conv2d's gradients, from its definition y[n, o, i, j] = Σ x[n, g·Cg + c,
// i·sh - ph + p·dh, j·sw - pw + q·dw] · weight[o, c, p, q]: every term of
// every output hands dy · weight to dx and dy · x to dweight.
void conv_grad(Ctx& c, bool input) {
  const HostTensor& dy = c.in[0];
  const auto stride = pair_attr(c.attrs, "stride", {1, 1});
  const auto pad = pair_attr(c.attrs, "padding", {0, 0});
  const auto dil = pair_attr(c.attrs, "dilation", {1, 1});
  const int64_t groups = c.attrs.get_int("groups");
  const Shape& xs = input ? c.out[0].shape : c.in[1].shape;
  const Shape& ws = input ? c.in[1].shape : c.out[0].shape;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t O = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t OH = dy.shape[2], OW = dy.shape[3], Og = O / groups;
  const auto dyv = values(dy), other = values(c.in[1]);
  std::vector<double> acc(size_t(c.out[0].numel()), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < O; ++o) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          const double g = dyv[size_t(((n * O + o) * OH + oh) * OW + ow)];
          for (int64_t ci = 0; ci < Cg; ++ci) {
            const int64_t ch = (o / Og) * Cg + ci;
            for (int64_t i = 0; i < KH; ++i) {
              const int64_t h = oh * stride[0] - pad[0] + i * dil[0];
              for (int64_t j = 0; j < KW; ++j) {
                const int64_t v = ow * stride[1] - pad[1] + j * dil[1];
                if (h < 0 || h >= H || v < 0 || v >= W) continue;
                const size_t xi = size_t(((n * C + ch) * H + h) * W + v);
                const size_t wi = size_t(((o * Cg + ci) * KH + i) * KW + j);
                if (input) {
                  acc[xi] += g * other[wi];
                } else {
                  acc[wi] += g * other[xi];
                }
              }
            }
          }
        }
      }
    }
  }
  for (size_t i = 0; i < acc.size(); ++i) c.out[0].set(int64_t(i), acc[i]);
}

// scaled_dot_product_attention's gradients, per leading index and query i
// over its visible keys j (p = softmax of the scores, y = Σ p v):
// dv[j] += p_ij dy[i]; ds_ij = p_ij (dy[i]·v[j] - dy[i]·y[i]);
// dq[i] = scale Σ_j ds_ij k[j]; dk[j] += scale ds_ij q[i].
void attention_grad(Ctx& c) {
  const HostTensor &q = c.in[1], &k = c.in[2], &v = c.in[3];
  const size_t r = q.shape.size();
  const int64_t Lq = q.shape[r - 2], D = q.shape[r - 1], Lk = k.shape[r - 2], Dv = v.shape[r - 1];
  const bool causal = c.attrs.get_bool("causal");
  const int64_t shift = c.attrs.get_string("causal_alignment") == "top_left" ? 0 : Lk - Lq;
  double scale = c.attrs.get_float("scale");
  if (scale == 0) scale = D > 0 ? 1.0 / std::sqrt(double(D)) : 1.0;
  const auto dy = values(c.in[0]), qv = values(q), kv = values(k), vv = values(v);
  std::vector<double> dq(qv.size(), 0.0), dk(kv.size(), 0.0), dv(vv.size(), 0.0);
  std::vector<double> p(static_cast<size_t>(Lk)), dp(static_cast<size_t>(Lk));
  for (int64_t b = 0; b < product(q.shape, 0, r - 2); ++b) {
    for (int64_t i = 0; i < Lq; ++i) {
      const int64_t visible = causal ? std::clamp<int64_t>(i + shift + 1, 0, Lk) : Lk;
      double m = -kInf, sum = 0, delta = 0;
      for (int64_t j = 0; j < visible; ++j) {
        double s = 0;
        for (int64_t d = 0; d < D; ++d)
          s += qv[size_t((b * Lq + i) * D + d)] * kv[size_t((b * Lk + j) * D + d)];
        p[size_t(j)] = s * scale;
        m = nan_max(m, p[size_t(j)]);
      }
      for (int64_t j = 0; j < visible; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - m));
      for (int64_t j = 0; j < visible; ++j) {
        p[size_t(j)] /= sum;
        double t = 0;
        for (int64_t e = 0; e < Dv; ++e)
          t += dy[size_t((b * Lq + i) * Dv + e)] * vv[size_t((b * Lk + j) * Dv + e)];
        dp[size_t(j)] = t;
        delta += p[size_t(j)] * t;
      }
      for (int64_t j = 0; j < visible; ++j) {
        const double ds = p[size_t(j)] * (dp[size_t(j)] - delta) * scale;
        for (int64_t e = 0; e < Dv; ++e) {
          dv[size_t((b * Lk + j) * Dv + e)] += p[size_t(j)] * dy[size_t((b * Lq + i) * Dv + e)];
        }
        for (int64_t d = 0; d < D; ++d) {
          dq[size_t((b * Lq + i) * D + d)] += ds * kv[size_t((b * Lk + j) * D + d)];
          dk[size_t((b * Lk + j) * D + d)] += ds * qv[size_t((b * Lq + i) * D + d)];
        }
      }
    }
  }
  for (size_t i = 0; i < dq.size(); ++i) c.out[0].set(int64_t(i), dq[i]);
  for (size_t i = 0; i < dk.size(); ++i) c.out[1].set(int64_t(i), dk[i]);
  for (size_t i = 0; i < dv.size(); ++i) c.out[2].set(int64_t(i), dv[i]);
}

}  // namespace

void add_nn_grad_references(ReferenceTable& table) {
  table["layer_norm_grad"] = [](Ctx& c) { norm_grad(c, false); };
  table["rms_norm_grad"] = [](Ctx& c) { norm_grad(c, true); };
  table["max_pool2d_grad"] = [](Ctx& c) { pool_grad(c, true); };
  table["avg_pool2d_grad"] = [](Ctx& c) { pool_grad(c, false); };
  table["conv2d_grad_input"] = [](Ctx& c) { conv_grad(c, true); };
  table["conv2d_grad_weight"] = [](Ctx& c) { conv_grad(c, false); };
  table["scaled_dot_product_attention_grad"] = attention_grad;
}

}  // namespace oar::conformance::ref
