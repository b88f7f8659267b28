// cpu kernels of the gradients of the normalizations, conv2d, pooling and attention
// (core/ops/schema_nn_grad.cc). Loops in double, one rounding at the store.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace oar::cpu {
namespace {

constexpr int64_t kParallelWork = int64_t(1) << 15;

// layer_norm_grad (|rms| false) and rms_norm_grad: a pass per row for dx that
// keeps each row's mean and rstd, then column sums for dweight and dbias.
template <typename T>
void norm_grad_run(View dy, View x, View weight, View dx, View dweight, View dbias, double eps,
                   bool rms) {
  const int64_t d = x.shape[x.ndim - 1];
  const int64_t rows = d == 0 ? 0 : x.numel() / d;
  const T* w = weight.ptr<T>();
  std::vector<double> mean(size_t(rows), 0.0), rstd(size_t(rows), 0.0);
#pragma omp parallel for if (x.numel() > kParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x.ptr<T>() + r * d;
    const T* gr = dy.ptr<T>() + r * d;
    double m = 0, var = 0;
    if (!rms) {
      for (int64_t j = 0; j < d; ++j) m += load(xr + j);
      m /= double(d);
    }
    for (int64_t j = 0; j < d; ++j) {
      const double centered = load(xr + j) - m;
      var += centered * centered;
    }
    const double s = 1 / std::sqrt(var / double(d) + eps);
    double mean_g = 0, mean_gx = 0;
    for (int64_t j = 0; j < d; ++j) {
      const double g = double(load(gr + j)) * load(w + j);
      mean_g += g;
      mean_gx += g * (load(xr + j) - m) * s;
    }
    mean_g = rms ? 0.0 : mean_g / double(d);
    mean_gx /= double(d);
    T* out = dx.ptr<T>() + r * d;
    for (int64_t j = 0; j < d; ++j) {
      const double g = double(load(gr + j)) * load(w + j), xhat = (load(xr + j) - m) * s;
      store(out + j, s * (g - mean_g - xhat * mean_gx));
    }
    mean[size_t(r)] = m;
    rstd[size_t(r)] = s;
  }
#pragma omp parallel for if (x.numel() > kParallelWork)
  for (int64_t j = 0; j < d; ++j) {
    double sum_w = 0, sum_b = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const double g = load(dy.ptr<T>() + r * d + j);
      sum_w += g * (load(x.ptr<T>() + r * d + j) - mean[size_t(r)]) * rstd[size_t(r)];
      sum_b += g;
    }
    store(dweight.ptr<T>() + j, sum_w);
    if (!rms) store(dbias.ptr<T>() + j, sum_b);
  }
}

void norm_grad_kernel(KernelContext& context) {
  const bool rms = std::string(context.schema.name) == "rms_norm_grad";
  View dy = context.inputs[0], x = context.inputs[1], weight = context.inputs[2];
  View dx = context.outputs[0], dweight = context.outputs[1];
  View dbias = rms ? View{} : context.outputs[2];
  const double eps = context.attrs.get_float("eps");
  if (dweight.numel() == 0) return;  // D = 0: every output is empty
  with_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { norm_grad_run<T>(dy, x, weight, dx, dweight, dbias, eps, rms); });
  });
}

struct PoolGrad {
  int64_t planes, h, w, oh, ow;
  std::array<int64_t, 2> kernel, stride, padding;
  bool max, include_pad;
};

// Per plane: every window hands its dy to x's positions (max: the first
// maximum in row-major order, a NaN counting as the maximum), accumulated in
// double and stored once.
template <typename T>
void pool_grad_run(View dy, View x, View dx, PoolGrad s) {
#pragma omp parallel for if (s.planes * s.h * s.w > kParallelWork)
  for (int64_t p = 0; p < s.planes; ++p) {
    const T* plane = x.ptr<T>() + p * s.h * s.w;
    const T* g = dy.ptr<T>() + p * s.oh * s.ow;
    std::vector<double> acc(size_t(s.h * s.w), 0.0);
    for (int64_t oh = 0; oh < s.oh; ++oh) {
      const int64_t h0 = oh * s.stride[0] - s.padding[0];
      const int64_t h_begin = std::max<int64_t>(h0, 0), h_end = std::min(h0 + s.kernel[0], s.h);
      for (int64_t ow = 0; ow < s.ow; ++ow) {
        const int64_t w0 = ow * s.stride[1] - s.padding[1];
        const int64_t w_begin = std::max<int64_t>(w0, 0), w_end = std::min(w0 + s.kernel[1], s.w);
        const double value = load(g + oh * s.ow + ow);
        if (s.max) {
          int64_t best = h_begin * s.w + w_begin;
          double best_value = load(plane + best);
          for (int64_t h = h_begin; h < h_end && !std::isnan(best_value); ++h) {
            for (int64_t w = w_begin; w < w_end; ++w) {
              const double v = load(plane + h * s.w + w);
              if (std::isnan(v) || v > best_value) {
                best = h * s.w + w;
                best_value = v;
                if (std::isnan(v)) break;
              }
            }
          }
          acc[size_t(best)] += value;
          continue;
        }
        const int64_t count =
            s.include_pad ? s.kernel[0] * s.kernel[1] : (h_end - h_begin) * (w_end - w_begin);
        const double share = value / double(count);
        for (int64_t h = h_begin; h < h_end; ++h) {
          for (int64_t w = w_begin; w < w_end; ++w) acc[size_t(h * s.w + w)] += share;
        }
      }
    }
    T* out = dx.ptr<T>() + p * s.h * s.w;
    for (int64_t i = 0; i < s.h * s.w; ++i) store(out + i, acc[size_t(i)]);
  }
}

void pool_grad_kernel(KernelContext& context) {
  View dy = context.inputs[0], x = context.inputs[1], dx = context.outputs[0];
  PoolGrad s{};
  s.max = std::string(context.schema.name) == "max_pool2d_grad";
  s.include_pad = !s.max && context.attrs.get_bool("count_include_pad");
  s.planes = x.shape[0] * x.shape[1];
  s.h = x.shape[2];
  s.w = x.shape[3];
  s.oh = dy.shape[2];
  s.ow = dy.shape[3];
  s.kernel = context.attrs.get_pair("kernel_size", {});
  s.stride = context.attrs.get_pair("stride", {s.kernel[0], s.kernel[1]});
  s.padding = context.attrs.get_pair("padding", {0, 0});
  if (dx.numel() == 0) return;
  with_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { pool_grad_run<T>(dy, x, dx, s); });
  });
}

struct ConvGrad {
  int64_t n, c, h, w, o, kh, kw, oh, ow, groups;
  std::array<int64_t, 2> stride, padding, dilation;
};

ConvGrad conv_grad_of(const View& x_like, const View& w_like, const View& dy,
                      const ops::Attrs& attrs) {
  ConvGrad s{};
  s.n = x_like.shape[0];
  s.c = x_like.shape[1];
  s.h = x_like.shape[2];
  s.w = x_like.shape[3];
  s.o = w_like.shape[0];
  s.kh = w_like.shape[2];
  s.kw = w_like.shape[3];
  s.oh = dy.shape[2];
  s.ow = dy.shape[3];
  s.groups = attrs.get_int("groups");
  s.stride = attrs.get_pair("stride", {1, 1});
  s.padding = attrs.get_pair("padding", {0, 0});
  s.dilation = attrs.get_pair("dilation", {1, 1});
  return s;
}

// dx[n, ci, h, w] = sum over the group's output channels o and kernel taps
// (p, q) whose output position (oh, ow) lands on (h, w) of dy * weight.
template <typename T>
void conv_grad_input_run(View dy, View weight, View dx, ConvGrad s) {
  const int64_t cg = s.c / s.groups, og = s.o / s.groups, total = dx.numel();
  const T* g = dy.ptr<T>();
  const T* wt = weight.ptr<T>();
#pragma omp parallel for if (total * og * s.kh * s.kw > kParallelWork)
  for (int64_t i = 0; i < total; ++i) {
    const int64_t col = i % s.w, row = i / s.w % s.h, ci = i / (s.w * s.h) % s.c;
    const int64_t n = i / (s.w * s.h * s.c), group = ci / cg, c = ci % cg;
    double acc = 0;
    for (int64_t o = group * og; o < (group + 1) * og; ++o) {
      for (int64_t p = 0; p < s.kh; ++p) {
        const int64_t t = row + s.padding[0] - p * s.dilation[0];
        if (t < 0 || t % s.stride[0] != 0 || t / s.stride[0] >= s.oh) continue;
        for (int64_t q = 0; q < s.kw; ++q) {
          const int64_t u = col + s.padding[1] - q * s.dilation[1];
          if (u < 0 || u % s.stride[1] != 0 || u / s.stride[1] >= s.ow) continue;
          acc +=
              double(load(g + ((n * s.o + o) * s.oh + t / s.stride[0]) * s.ow + u / s.stride[1])) *
              load(wt + ((o * cg + c) * s.kh + p) * s.kw + q);
        }
      }
    }
    store(dx.ptr<T>() + i, acc);
  }
}

// dweight[o, c, p, q] = sum over n, oh, ow of dy * x at the tap's position.
template <typename T>
void conv_grad_weight_run(View dy, View x, View dweight, ConvGrad s) {
  const int64_t cg = s.c / s.groups, og = s.o / s.groups, total = dweight.numel();
  const T* g = dy.ptr<T>();
  const T* px = x.ptr<T>();
#pragma omp parallel for if (total * s.n * s.oh * s.ow > kParallelWork)
  for (int64_t i = 0; i < total; ++i) {
    const int64_t q = i % s.kw, p = i / s.kw % s.kh, c = i / (s.kw * s.kh) % cg;
    const int64_t o = i / (s.kw * s.kh * cg), ch = o / og * cg + c;
    double acc = 0;
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t oh = 0; oh < s.oh; ++oh) {
        const int64_t h = oh * s.stride[0] - s.padding[0] + p * s.dilation[0];
        if (h < 0 || h >= s.h) continue;
        for (int64_t ow = 0; ow < s.ow; ++ow) {
          const int64_t w = ow * s.stride[1] - s.padding[1] + q * s.dilation[1];
          if (w < 0 || w >= s.w) continue;
          acc += double(load(g + ((n * s.o + o) * s.oh + oh) * s.ow + ow)) *
                 load(px + ((n * s.c + ch) * s.h + h) * s.w + w);
        }
      }
    }
    store(dweight.ptr<T>() + i, acc);
  }
}

void conv_grad_input_kernel(KernelContext& context) {
  View dy = context.inputs[0], weight = context.inputs[1], dx = context.outputs[0];
  ConvGrad s = conv_grad_of(dx, weight, dy, context.attrs);
  if (dx.numel() == 0) return;
  with_float(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { conv_grad_input_run<T>(dy, weight, dx, s); });
  });
}

void conv_grad_weight_kernel(KernelContext& context) {
  View dy = context.inputs[0], x = context.inputs[1], dweight = context.outputs[0];
  ConvGrad s = conv_grad_of(x, dweight, dy, context.attrs);
  if (dweight.numel() == 0) return;
  with_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { conv_grad_weight_run<T>(dy, x, dweight, s); });
  });
}

struct AttentionGrad {
  int64_t batch, lq, lk, d, dv, shift;
  double scale;
  bool causal;
};

// Per batch item (in parallel): each query's softmax over its visible keys,
// then dv += p dy, ds = p (dy.v - dy.y), dq = scale ds k, dk += scale ds q, in
// double.
template <typename T>
void attention_grad_run(View dy, View q, View k, View v, View dq, View dk, View dv,
                        AttentionGrad s) {
#pragma omp parallel for if (s.batch * s.lq * s.lk * (s.d + s.dv) > kParallelWork)
  for (int64_t b = 0; b < s.batch; ++b) {
    const T* pg = dy.ptr<T>() + b * s.lq * s.dv;
    const T* pq = q.ptr<T>() + b * s.lq * s.d;
    const T* pk = k.ptr<T>() + b * s.lk * s.d;
    const T* pv = v.ptr<T>() + b * s.lk * s.dv;
    std::vector<double> gq(size_t(s.lq * s.d), 0.0), gk(size_t(s.lk * s.d), 0.0),
        gv(size_t(s.lk * s.dv), 0.0), p(size_t(s.lk)), dp(size_t(s.lk));
    for (int64_t i = 0; i < s.lq; ++i) {
      const int64_t visible = s.causal ? std::clamp<int64_t>(i + s.shift + 1, 0, s.lk) : s.lk;
      double m = -std::numeric_limits<double>::infinity(), sum = 0, delta = 0;
      for (int64_t j = 0; j < visible; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < s.d; ++e)
          dot += double(load(pq + i * s.d + e)) * load(pk + j * s.d + e);
        p[size_t(j)] = dot * s.scale;
        if (std::isnan(p[size_t(j)]) || p[size_t(j)] > m) m = std::isnan(m) ? m : p[size_t(j)];
      }
      for (int64_t j = 0; j < visible; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - m));
      for (int64_t j = 0; j < visible; ++j) {
        p[size_t(j)] /= sum;
        double dot = 0;
        for (int64_t e = 0; e < s.dv; ++e) {
          dot += double(load(pg + i * s.dv + e)) * load(pv + j * s.dv + e);
        }
        dp[size_t(j)] = dot;
        delta += p[size_t(j)] * dot;
      }
      for (int64_t j = 0; j < visible; ++j) {
        const double ds = p[size_t(j)] * (dp[size_t(j)] - delta) * s.scale;
        for (int64_t e = 0; e < s.dv; ++e)
          gv[size_t(j * s.dv + e)] += p[size_t(j)] * load(pg + i * s.dv + e);
        for (int64_t e = 0; e < s.d; ++e) {
          gq[size_t(i * s.d + e)] += ds * load(pk + j * s.d + e);
          gk[size_t(j * s.d + e)] += ds * load(pq + i * s.d + e);
        }
      }
    }
    for (size_t i = 0; i < gq.size(); ++i) store(dq.ptr<T>() + b * s.lq * s.d + int64_t(i), gq[i]);
    for (size_t i = 0; i < gk.size(); ++i) store(dk.ptr<T>() + b * s.lk * s.d + int64_t(i), gk[i]);
    for (size_t i = 0; i < gv.size(); ++i) store(dv.ptr<T>() + b * s.lk * s.dv + int64_t(i), gv[i]);
  }
}

void attention_grad_kernel(KernelContext& context) {
  View dy = context.inputs[0], q = context.inputs[1], k = context.inputs[2], v = context.inputs[3];
  View dq = context.outputs[0], dk = context.outputs[1], dv = context.outputs[2];
  const int r = q.ndim;
  AttentionGrad s{1,
                  q.shape[r - 2],
                  k.shape[r - 2],
                  q.shape[r - 1],
                  v.shape[r - 1],
                  0,
                  context.attrs.get_float("scale"),
                  context.attrs.get_bool("causal")};
  for (int i = 0; i < r - 2; ++i) s.batch *= q.shape[i];
  if (context.attrs.get_string("causal_alignment") != "top_left") s.shift = s.lk - s.lq;
  if (s.scale == 0) s.scale = s.d > 0 ? 1 / std::sqrt(double(s.d)) : 1.0;
  if (dq.numel() == 0 && dk.numel() == 0 && dv.numel() == 0) return;
  with_float(q.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { attention_grad_run<T>(dy, q, k, v, dq, dk, dv, s); });
  });
}

}  // namespace

void register_nn_grad_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table) {
  register_op(registrar, "layer_norm_grad", &norm_grad_kernel, same_signatures(ops::kFloats, 3, 3),
              0, table);
  register_op(registrar, "rms_norm_grad", &norm_grad_kernel, same_signatures(ops::kFloats, 3, 2), 0,
              table);
  register_op(registrar, "max_pool2d_grad", &pool_grad_kernel, same_signatures(ops::kFloats, 2, 1),
              0, table);
  register_op(registrar, "avg_pool2d_grad", &pool_grad_kernel, same_signatures(ops::kFloats, 2, 1),
              0, table);
  register_op(registrar, "conv2d_grad_input", &conv_grad_input_kernel,
              same_signatures(ops::kFloats, 2, 1), 0, table);
  register_op(registrar, "conv2d_grad_weight", &conv_grad_weight_kernel,
              same_signatures(ops::kFloats, 2, 1), 0, table);
  register_op(registrar, "scaled_dot_product_attention_grad", &attention_grad_kernel,
              same_signatures(ops::kFloats, 4, 3), 0, table);
}

}  // namespace oar::cpu
