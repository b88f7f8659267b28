// Sliding-window operators from primitives: conv2d (im2col from strided
// slices of the padded input, then one matmul), max_pool2d and avg_pool2d
// (the same slices combined with maximum or add). Padding is concat with
// fill. docs/ops.md, "Primitives and decompositions".
#include <array>
#include <limits>
#include <vector>

#include "core/ops/decompositions/decompose.h"

namespace oar::decompose {
namespace {

#define OAR_OP(var, name) static const OpId var(name)

struct Window {
  int64_t kh, kw;  // window size
  int64_t sh, sw;  // stride
  int64_t ph, pw;  // padding
  int64_t dh, dw;  // dilation
  int64_t oh, ow;  // output extent
};

// The window tap (p, q) of every output position: [N, C, OH, OW] with
// element (i, j) = xp[..., i·sh + p·dh, j·sw + q·dw].
const DLTensor* tap(Graph& g, const DLTensor* xp, const Window& w, int64_t p, int64_t q) {
  return window_tap(g, xp, p * w.dh, q * w.dw, w.oh, w.ow, w.sh, w.sw);
}

Window window_of(Graph& g, int64_t kh, int64_t kw, std::array<int64_t, 2> stride,
                 std::array<int64_t, 2> padding, std::array<int64_t, 2> dilation) {
  const DLTensor* out = g.out(0);
  return Window{kh,         kw,          stride[0],   stride[1],     padding[0],
                padding[1], dilation[0], dilation[1], out->shape[2], out->shape[3]};
}

// y[n, o, :, :] = bias[o] + W[o, :] · cols[n, :, :], with cols the im2col
// matrix [N, C·KH·KW, OH·OW] (column order c, p, q: weight's own layout).
void conv2d(Graph& g) {
  OAR_OP(concat, "concat");
  OAR_OP(matmul, "matmul");
  OAR_OP(slice, "slice");
  OAR_OP(add, "add");
  const DLTensor* x = g.widen(g.in(0));
  const DLTensor* weight = g.widen(g.in(1));
  const int64_t n = x->shape[0], c = x->shape[1];
  const int64_t o = weight->shape[0], kh = weight->shape[2], kw = weight->shape[3];
  const int64_t groups = g.attrs().get_int("groups");
  const Window w =
      window_of(g, kh, kw, g.attrs().get_pair("stride", {1, 1}),
                g.attrs().get_pair("padding", {0, 0}), g.attrs().get_pair("dilation", {1, 1}));
  const int64_t l = w.oh * w.ow, k = c * kh * kw;
  const DLTensor* xp = pad_hw(g, x, w.ph, w.pw, 0.0);
  std::vector<const DLTensor*> taps;
  for (int64_t p = 0; p < kh; ++p) {
    for (int64_t q = 0; q < kw; ++q) taps.push_back(g.view(tap(g, xp, w, p, q), {n, c, 1, l}));
  }
  const DLTensor* cols =
      taps.size() == 1 ? taps[0] : g.call(concat, taps, {Attr("axis", int64_t(2))});
  cols = g.view(cols, {n, k, l});
  const DLTensor* w2d = g.view(weight, {o, k / groups});
  const DLTensor* y_out = g.view(g.out(0), {n, o, l});
  const bool has_bias = g.num_inputs() > 2;
  std::vector<const DLTensor*> parts;
  for (int64_t gi = 0; gi < groups; ++gi) {
    const DLTensor* cols_g = cols;
    const DLTensor* w_g = w2d;
    if (groups > 1) {
      const int64_t kg = k / groups, og = o / groups;
      cols_g =
          g.call(slice, {cols},
                 {Attr("axis", int64_t(1)), Attr("start", gi * kg), Attr("end", (gi + 1) * kg)});
      w_g = g.call(slice, {w2d},
                   {Attr("axis", int64_t(0)), Attr("start", gi * og), Attr("end", (gi + 1) * og)});
    }
    if (groups == 1 && !has_bias) {
      g.finish(matmul, {w_g, cols_g}, y_out);
      return;
    }
    parts.push_back(g.call(matmul, {w_g, cols_g}));
  }
  if (!has_bias) {
    g.finish(concat, parts, y_out, {Attr("axis", int64_t(1))});
    return;
  }
  const DLTensor* y = groups == 1 ? parts[0] : g.call(concat, parts, {Attr("axis", int64_t(1))});
  g.finish(add, {y, g.view(g.widen(g.in(2)), {o, 1})}, y_out);
}

Window pool_window(Graph& g) {
  std::array<int64_t, 2> kernel = g.attrs().get_pair("kernel_size", {});
  return window_of(g, kernel[0], kernel[1], g.attrs().get_pair("stride", {kernel[0], kernel[1]}),
                   g.attrs().get_pair("padding", {0, 0}), {1, 1});
}

// The maximum over the taps of the input padded with -inf: padding never
// wins (a window holds at least one element of x, and max(-inf, v) = v, even
// for v = -inf); NaN propagates through maximum. Exact: no widening.
void max_pool2d(Graph& g) {
  OAR_OP(maximum, "maximum");
  OAR_OP(copy, "copy");
  const Window w = pool_window(g);
  const DLTensor* xp = pad_hw(g, g.in(0), w.ph, w.pw, -std::numeric_limits<double>::infinity());
  const DLTensor* acc = tap(g, xp, w, 0, 0);
  if (w.kh * w.kw == 1) {
    g.call_into(copy, {acc}, g.out(0));
    return;
  }
  for (int64_t t = 1; t < w.kh * w.kw; ++t) {
    const DLTensor* next = tap(g, xp, w, t / w.kw, t % w.kw);
    if (t + 1 == w.kh * w.kw) {
      g.call_into(maximum, {acc, next}, g.out(0));
      return;
    }
    acc = g.call(maximum, {acc, next});
  }
}

// The sum of the taps of the zero-padded input over KH·KW, or over the count
// of positions inside x (the same taps of a padded tensor of ones).
void avg_pool2d(Graph& g) {
  OAR_OP(add, "add");
  OAR_OP(div, "div");
  const Window w = pool_window(g);
  const DLTensor* x = g.widen(g.in(0));
  auto window_sum = [&](const DLTensor* padded) {
    const DLTensor* acc = tap(g, padded, w, 0, 0);
    for (int64_t t = 1; t < w.kh * w.kw; ++t) {
      acc = g.call(add, {acc, tap(g, padded, w, t / w.kw, t % w.kw)});
    }
    return acc;
  };
  const DLTensor* sum = window_sum(pad_hw(g, x, w.ph, w.pw, 0.0));
  const DLTensor* divisor = nullptr;
  if (g.attrs().get_bool("count_include_pad") || (w.ph == 0 && w.pw == 0)) {
    divisor = g.scalar(double(w.kh * w.kw), x->dtype);
  } else {
    const DLTensor* ones = g.full({1, 1, x->shape[2], x->shape[3]}, 1.0, x->dtype);
    divisor = window_sum(pad_hw(g, ones, w.ph, w.pw, 0.0));
  }
  g.finish(div, {sum, divisor}, g.out(0));
}

#undef OAR_OP

}  // namespace

void add_window_decompositions(std::vector<Decomposition>& table) {
  table.push_back({"conv2d", conv2d});
  table.push_back({"max_pool2d", max_pool2d});
  table.push_back({"avg_pool2d", avg_pool2d});
}

}  // namespace oar::decompose
