// The backward operators from primitives (docs/ops.md, "Gradients" and
// "Gradients of the neural-network operators"): the pointwise gradients,
// softmax_grad, log_softmax_grad, embedding_grad and cross_entropy_grad
// (scatter_add), rotary_embedding_grad, the norms' gradients, the pools'
// gradients and conv2d_grad_input (col2im: one scatter_add of every window
// tap into the padded input), conv2d_grad_weight (im2col and one matmul) and
// scaled_dot_product_attention_grad. Float inputs are computed in f32
// (f16/bf16) or their own type and rounded once more at the store
// (docs/ops.md, "Primitives and decompositions").
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/ops/decompositions/decompose.h"

namespace oar::decompose {
namespace {

#define OAR_OP(var, name) static const OpId var(name)

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- Pointwise gradients ----

// dx = dy where x > 0, else 0; x NaN gives NaN (a select: dy NaN or inf is
// masked where x <= 0). Exact: no widening.
void relu_grad(Graph& g) {
  OAR_OP(le, "le");
  OAR_OP(eq, "eq");
  OAR_OP(where, "where");
  const DLTensor* dy = g.in(0);
  const DLTensor* x = g.in(1);
  const DLTensor* zero = g.scalar(0.0, x->dtype);
  // x > 0: dy; x NaN: x itself (NaN).
  const DLTensor* kept = g.call(where, {g.call(eq, {x, x}), dy, x});
  g.call_into(where, {g.call(le, {x, zero}), zero, kept}, g.out(0));
}

// dy · y · (1 − y)
void sigmoid_grad(Graph& g) {
  OAR_OP(mul, "mul");
  OAR_OP(sub, "sub");
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* y = g.widen(g.in(1));
  const DLTensor* one_minus = g.call(sub, {g.scalar(1.0, y->dtype), y});
  g.finish(mul, {g.call(mul, {dy, y}), one_minus}, g.out(0));
}

// dy · (1 − y) · (1 + y): the product form keeps 1 − y² precise near |y| = 1.
void tanh_grad(Graph& g) {
  OAR_OP(mul, "mul");
  OAR_OP(sub, "sub");
  OAR_OP(add, "add");
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* y = g.widen(g.in(1));
  const DLTensor* one = g.scalar(1.0, y->dtype);
  const DLTensor* a = g.call(mul, {dy, g.call(sub, {one, y})});
  g.finish(mul, {a, g.call(add, {one, y})}, g.out(0));
}

// dy · s · (1 + x · sigmoid(−x)), s = sigmoid(x): 1 − s as sigmoid(−x), so a
// large |x| never divides inf by inf; x = ±inf gives NaN (inf · 0).
void silu_grad(Graph& g) {
  OAR_OP(sigmoid, "sigmoid");
  OAR_OP(neg, "neg");
  OAR_OP(mul, "mul");
  OAR_OP(add, "add");
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* x = g.widen(g.in(1));
  const DLTensor* s = g.call(sigmoid, {x});
  const DLTensor* s_neg = g.call(sigmoid, {g.call(neg, {x})});
  const DLTensor* inner = g.call(add, {g.scalar(1.0, x->dtype), g.call(mul, {x, s_neg})});
  g.finish(mul, {g.call(mul, {dy, s}), inner}, g.out(0));
}

// "none": dy · (Φ(x) + x · φ(x)), Φ(x) = (1 + erf(x/√2)) / 2,
// φ(x) = exp(−x²/2) / √(2π). "tanh": dy · (s + 2x · s · (1 − s) · u'), with
// s = sigmoid(2u), 1 − s = sigmoid(−2u); where s · (1 − s) is 0 the term is
// x · 0 (0 for finite x, NaN for ±inf) so that an overflowing u' (x³ beyond
// the compute type) does not make 0 · inf.
void gelu_grad(Graph& g) {
  OAR_OP(mul, "mul");
  OAR_OP(add, "add");
  OAR_OP(exp, "exp");
  OAR_OP(erf, "erf");
  OAR_OP(eq, "eq");
  OAR_OP(where, "where");
  OAR_OP(sigmoid, "sigmoid");
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* x = g.widen(g.in(1));
  const DLDataType t = x->dtype;
  const DLTensor* xx = g.call(mul, {x, x});
  const DLTensor* derivative = nullptr;
  if (g.attrs().get_string("approximate") == "tanh") {
    const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    const DLTensor* x3 = g.call(mul, {xx, x});
    const DLTensor* u =
        g.call(mul, {g.call(add, {x, g.call(mul, {x3, g.scalar(c, t)})}), g.scalar(k, t)});
    const DLTensor* du = g.call(
        mul,
        {g.call(add, {g.call(mul, {xx, g.scalar(3 * c, t)}), g.scalar(1.0, t)}), g.scalar(k, t)});
    const DLTensor* s = g.call(sigmoid, {g.call(mul, {u, g.scalar(2.0, t)})});
    const DLTensor* s_neg = g.call(sigmoid, {g.call(mul, {u, g.scalar(-2.0, t)})});
    const DLTensor* ss = g.call(mul, {s, s_neg});
    const DLTensor* term = g.call(mul, {g.call(mul, {g.call(mul, {x, g.scalar(2.0, t)}), ss}), du});
    term = g.call(where,
                  {g.call(eq, {ss, g.scalar(0.0, t)}), g.call(mul, {x, g.scalar(0.0, t)}), term});
    derivative = g.call(add, {s, term});
  } else {
    const DLTensor* cdf = g.call(
        mul,
        {g.call(add, {g.call(erf, {g.call(mul, {x, g.scalar(M_SQRT1_2, t)})}), g.scalar(1.0, t)}),
         g.scalar(0.5, t)});
    const DLTensor* pdf = g.call(mul, {g.call(exp, {g.call(mul, {xx, g.scalar(-0.5, t)})}),
                                       g.scalar(0.5 * M_2_SQRTPI * M_SQRT1_2, t)});
    derivative = g.call(add, {cdf, g.call(mul, {x, pdf})});
  }
  g.finish(mul, {dy, derivative}, g.out(0));
}

// ---- Row gradients ----

// dx = y · (dy − Σ dy · y) along axis.
void softmax_grad(Graph& g) {
  OAR_OP(mul, "mul");
  OAR_OP(sub, "sub");
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* y = g.widen(g.in(1));
  const DLTensor* s = row_sum(g, g.call(mul, {dy, y}), g.attrs().get_int("axis"));
  g.finish(mul, {y, g.call(sub, {dy, s})}, g.out(0));
}

// dx = dy − exp(y) · Σ dy along axis.
void log_softmax_grad(Graph& g) {
  OAR_OP(mul, "mul");
  OAR_OP(sub, "sub");
  OAR_OP(exp, "exp");
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* y = g.widen(g.in(1));
  const DLTensor* s = row_sum(g, dy, g.attrs().get_int("axis"));
  g.finish(sub, {dy, g.call(mul, {g.call(exp, {y}), s})}, g.out(0));
}

// ---- Index gradients ----

// dweight = scatter_add(zeros [V, D], index spread over D, dy as [M, D],
// axis 0): repeated indices add in index order; an index out of [0, V) fails
// the stream (OUT_OF_RANGE, named by scatter_add).
void embedding_grad(Graph& g) {
  OAR_OP(add, "add");
  OAR_OP(scatter_add, "scatter_add");
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* index = g.in(1);
  const int64_t rows = g.out(0)->shape[0], dim = g.out(0)->shape[1];
  int64_t m = 1;
  for (int d = 0; d < index->ndim; ++d) m *= index->shape[d];
  const DLTensor* spread =
      g.call(add, {g.view(index, {m, 1}), g.full({1, dim}, 0.0, index->dtype)});
  const DLTensor* zeros = g.full({rows, dim}, 0.0, dy->dtype);
  const DLTensor* sum =
      g.call(scatter_add, {zeros, spread, g.view(dy, {m, dim})}, {Attr("axis", int64_t(0))});
  store(g, sum, g.out(0));
}

// dlogits = g_n · (softmax(logits) − onehot(target)): the one-hot part is a
// scatter_add of −1 at each row's target (OUT_OF_RANGE for a bad target),
// g_n = dloss / N, dloss, or dloss[n].
void cross_entropy_grad(Graph& g) {
  OAR_OP(softmax, "softmax");
  OAR_OP(scatter_add, "scatter_add");
  OAR_OP(mul, "mul");
  OAR_OP(div, "div");
  const DLTensor* dloss = g.widen(g.in(0));
  const DLTensor* logits = g.widen(g.in(1));
  const int64_t n = logits->shape[0];
  const DLTensor* p = g.call(softmax, {logits}, {Attr("axis", int64_t(1))});
  const DLTensor* minus_one = g.full({n, 1}, -1.0, p->dtype);
  const DLTensor* diff =
      g.call(scatter_add, {p, g.view(g.in(2), {n, 1}), minus_one}, {Attr("axis", int64_t(1))});
  const std::string reduction = g.attrs().get_string("reduction");
  const DLTensor* scale = dloss;
  if (reduction == "none") {
    scale = g.view(dloss, {n, 1});
  } else if (reduction == "mean") {
    scale = g.call(div, {dloss, g.scalar(double(n), dloss->dtype)});
  }
  g.finish(mul, {diff, scale}, g.out(0));
}

// dx1 = dy1 · cos + dy2 · sin, dx2 = dy2 · cos − dy1 · sin per pair; pairs
// are the halves of the last dimension, or adjacent elements (interleaved:
// the last dimension seen as [D/2, 2]).
void rotary_embedding_grad(Graph& g) {
  OAR_OP(slice, "slice");
  OAR_OP(mul, "mul");
  OAR_OP(add, "add");
  OAR_OP(sub, "sub");
  OAR_OP(concat, "concat");
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* cos = g.widen(g.in(1));
  const DLTensor* sin = g.widen(g.in(2));
  const int r = dy->ndim;
  const int64_t s = dy->shape[r - 2], half = dy->shape[r - 1] / 2;
  std::vector<int64_t> shape(dy->shape, dy->shape + r);
  int64_t axis = r - 1;
  if (g.attrs().get_bool("interleaved")) {
    shape.back() = half;
    shape.push_back(2);
    dy = g.view(dy, shape);
    cos = g.view(cos, {s, half, 1});
    sin = g.view(sin, {s, half, 1});
    axis = r;
  }
  const int64_t width = g.attrs().get_bool("interleaved") ? 1 : half;
  const DLTensor* dy1 =
      g.call(slice, {dy}, {Attr("axis", axis), Attr("start", int64_t(0)), Attr("end", width)});
  const DLTensor* dy2 =
      g.call(slice, {dy}, {Attr("axis", axis), Attr("start", width), Attr("end", 2 * width)});
  const DLTensor* dx1 = g.call(add, {g.call(mul, {dy1, cos}), g.call(mul, {dy2, sin})});
  const DLTensor* dx2 = g.call(sub, {g.call(mul, {dy2, cos}), g.call(mul, {dy1, sin})});
  g.finish(concat, {dx1, dx2}, g.view(g.out(0), shape), {Attr("axis", axis)});
}

// ---- Norm gradients ----

// Σ over every row of |t| ([..., D] -> [D]), as a tree like row_sum.
const DLTensor* column_sum(Graph& g, const DLTensor* t) {
  const int64_t d = t->shape[t->ndim - 1];
  int64_t rows = 1;
  for (int i = 0; i + 1 < t->ndim; ++i) rows *= t->shape[i];
  return g.view(row_sum(g, g.view(t, {rows, d}), 0), {d});
}

// mean and rstd recomputed as the forward defines them (layer_norm: the
// variance of the centred values; rms_norm: mean 0), xhat = (x − mean) · rstd,
// gw = dy · weight:
//   dx = rstd · (gw − mean_j(gw) − xhat · mean_j(gw · xhat))  (rms_norm: no mean_j(gw))
//   dweight = Σ_rows dy · xhat, dbias = Σ_rows dy.
void norm_grad(Graph& g, bool centred) {
  OAR_OP(sub, "sub");
  OAR_OP(mul, "mul");
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* x = g.widen(g.in(1));
  const DLTensor* weight = g.widen(g.in(2));
  const RowStats st = row_stats(g, x, g.attrs().get_float("eps"), centred);
  const DLTensor* rstd = st.rstd;
  const DLTensor* xhat = g.call(mul, {st.centred, rstd});
  const DLTensor* gw = g.call(mul, {dy, weight});
  const DLTensor* inner = g.call(mul, {xhat, row_mean(g, g.call(mul, {gw, xhat}))});
  const DLTensor* d = centred ? g.call(sub, {gw, row_mean(g, gw)}) : gw;
  const DLTensor* dx = g.call(mul, {g.call(sub, {d, inner}), rstd});
  const DLTensor* dweight = column_sum(g, g.call(mul, {dy, xhat}));
  const DLTensor* dbias = centred ? column_sum(g, dy) : nullptr;
  store(g, dx, g.out(0));
  store(g, dweight, g.out(1));
  if (dbias != nullptr) store(g, dbias, g.out(2));
}

void layer_norm_grad(Graph& g) { norm_grad(g, true); }
void rms_norm_grad(Graph& g) { norm_grad(g, false); }

// ---- Window gradients ----

struct Window {
  int64_t n, c, h, w;  // x
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t oh, ow;  // dy
  int64_t hp() const { return h + 2 * ph; }
  int64_t wp() const { return w + 2 * pw; }
  int64_t taps() const { return kh * kw; }
  int64_t positions() const { return oh * ow; }
};

// Tap (p, q) of every window: [A, B, OH, OW], element (i, j) =
// padded[..., i·sh + p·dh, j·sw + q·dw].
const DLTensor* tap(Graph& g, const DLTensor* padded, const Window& w, int64_t t) {
  return window_tap(g, padded, (t / w.kw) * w.dh, (t % w.kw) * w.dw, w.oh, w.ow, w.sh, w.sw);
}

// The flat position in the padded image [HP·WP] of every element: [1, 1, HP, WP] (i64).
const DLTensor* position_grid(Graph& g, const Window& w) {
  OAR_OP(arange, "arange");
  const DLTensor* grid = g.empty({w.hp() * w.wp()}, dtype::i64);
  g.call_into(arange, {}, grid, {Attr("end", double(w.hp() * w.wp()))});
  return g.view(grid, {1, 1, w.hp(), w.wp()});
}

// col2im: |src| [N·C, K] adds into the padded image at |index| [N·C or 1, K]
// (flat padded positions, applied in order), then the image without its
// padding: [N, C, H, W].
const DLTensor* scatter_into_image(Graph& g, const DLTensor* src, const DLTensor* index,
                                   const Window& w) {
  OAR_OP(add, "add");
  OAR_OP(scatter_add, "scatter_add");
  OAR_OP(slice, "slice");
  const int64_t rows = w.n * w.c;
  if (index->shape[0] != rows) {
    index = g.call(add, {index, g.full({rows, 1}, 0.0, dtype::i64)});
  }
  const DLTensor* image = g.full({rows, w.hp() * w.wp()}, 0.0, src->dtype);
  image = g.call(scatter_add, {image, index, src}, {Attr("axis", int64_t(1))});
  image = g.view(image, {w.n, w.c, w.hp(), w.wp()});
  if (w.ph > 0) {
    image = g.call(slice, {image},
                   {Attr("axis", int64_t(2)), Attr("start", w.ph), Attr("end", w.ph + w.h)});
  }
  if (w.pw > 0) {
    image = g.call(slice, {image},
                   {Attr("axis", int64_t(3)), Attr("start", w.pw), Attr("end", w.pw + w.w)});
  }
  return image;
}

// The padded positions of every tap of every window, tap by tap: [1, T·OH·OW].
const DLTensor* tap_positions(Graph& g, const Window& w) {
  OAR_OP(concat, "concat");
  const DLTensor* grid = position_grid(g, w);
  std::vector<const DLTensor*> taps;
  for (int64_t t = 0; t < w.taps(); ++t) {
    taps.push_back(g.view(tap(g, grid, w, t), {1, w.positions()}));
  }
  return taps.size() == 1 ? taps[0] : g.call(concat, taps, {Attr("axis", int64_t(1))});
}

Window pool_window(Graph& g) {
  const DLTensor* x = g.in(1);
  const DLTensor* dy = g.in(0);
  std::array<int64_t, 2> k = g.attrs().get_pair("kernel_size", {});
  std::array<int64_t, 2> s = g.attrs().get_pair("stride", {k[0], k[1]});
  std::array<int64_t, 2> p = g.attrs().get_pair("padding", {0, 0});
  return Window{x->shape[0], x->shape[1], x->shape[2],  x->shape[3], k[0],
                k[1],        s[0],        s[1],         p[0],        p[1],
                1,           1,           dy->shape[2], dy->shape[3]};
}

// Each window's gradient goes to its first maximum in row-major order among
// its positions inside x: m = the maximum over the taps of x padded with
// −inf (NaN propagates); a tap is a candidate where it lies inside x and
// equals m or is NaN; the first candidate wins (taps visited backwards,
// where(candidate, position, winner)); a window of −inf hands its gradient to
// its first element inside x. Then one scatter_add of dy at the winners.
void max_pool2d_grad(Graph& g) {
  OAR_OP(maximum, "maximum");
  OAR_OP(eq, "eq");
  OAR_OP(ne, "ne");
  OAR_OP(where, "where");
  OAR_OP(logical_or, "logical_or");
  OAR_OP(logical_and, "logical_and");
  const Window w = pool_window(g);
  const DLTensor* x = g.in(1);
  const DLTensor* xp = pad_hw(g, x, w.ph, w.pw, -kInf);
  std::vector<const DLTensor*> taps;
  for (int64_t t = 0; t < w.taps(); ++t) taps.push_back(tap(g, xp, w, t));
  const DLTensor* m = taps[0];
  for (size_t t = 1; t < taps.size(); ++t) m = g.call(maximum, {m, taps[t]});
  const DLTensor* inside = nullptr;
  if (w.ph > 0 || w.pw > 0) {
    inside = pad_hw(g, g.full({1, 1, w.h, w.w}, 1.0, dtype::boolean), w.ph, w.pw, 0.0);
  }
  const DLTensor* grid = position_grid(g, w);
  const DLTensor* winner = g.full({w.n, w.c, w.oh, w.ow}, 0.0, dtype::i64);
  for (int64_t t = w.taps(); t-- > 0;) {
    const DLTensor* v = taps[size_t(t)];
    const DLTensor* candidate = g.call(logical_or, {g.call(eq, {v, m}), g.call(ne, {v, v})});
    if (inside != nullptr) candidate = g.call(logical_and, {candidate, tap(g, inside, w, t)});
    winner = g.call(where, {candidate, tap(g, grid, w, t), winner});
  }
  const int64_t rows = w.n * w.c, l = w.positions();
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* dx = scatter_into_image(g, g.view(dy, {rows, l}), g.view(winner, {rows, l}), w);
  store(g, dx, g.out(0));
}

// Each window hands dy / divisor to each of its positions inside x (the
// forward divisor: KH·KW, or the count of positions inside x).
void avg_pool2d_grad(Graph& g) {
  OAR_OP(add, "add");
  OAR_OP(div, "div");
  const Window w = pool_window(g);
  const DLTensor* dy = g.widen(g.in(0));
  const DLDataType t = dy->dtype;
  const DLTensor* divisor = nullptr;
  if (g.attrs().get_bool("count_include_pad") || (w.ph == 0 && w.pw == 0)) {
    divisor = g.scalar(double(w.taps()), t);
  } else {
    const DLTensor* ones = pad_hw(g, g.full({1, 1, w.h, w.w}, 1.0, t), w.ph, w.pw, 0.0);
    divisor = tap(g, ones, w, 0);
    for (int64_t k = 1; k < w.taps(); ++k) divisor = g.call(add, {divisor, tap(g, ones, w, k)});
  }
  const int64_t rows = w.n * w.c, l = w.positions();
  const DLTensor* share = g.view(g.call(div, {dy, divisor}), {rows, 1, l});
  // The share repeated for every tap: [N·C, T, L] as [N·C, T·L].
  const DLTensor* src = g.call(add, {share, g.full({1, w.taps(), 1}, 0.0, t)});
  const DLTensor* dx =
      scatter_into_image(g, g.view(src, {rows, w.taps() * l}), tap_positions(g, w), w);
  store(g, dx, g.out(0));
}

Window conv_window(Graph& g, int64_t n, int64_t c, int64_t h, int64_t wd, int64_t kh, int64_t kw) {
  const DLTensor* dy = g.in(0);
  std::array<int64_t, 2> s = g.attrs().get_pair("stride", {1, 1});
  std::array<int64_t, 2> p = g.attrs().get_pair("padding", {0, 0});
  std::array<int64_t, 2> d = g.attrs().get_pair("dilation", {1, 1});
  return Window{n,    c,    h,    wd,   kh,   kw,           s[0],
                s[1], p[0], p[1], d[0], d[1], dy->shape[2], dy->shape[3]};
}

// dcols [N, C·KH·KW, L] = weightᵀ · dy per group (one matmul each), then
// col2im: each column entry adds into the padded input at its tap's position.
void conv2d_grad_input(Graph& g) {
  OAR_OP(matmul, "matmul");
  OAR_OP(slice, "slice");
  OAR_OP(concat, "concat");
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* weight = g.widen(g.in(1));
  const DLTensor* out = g.out(0);
  const int64_t groups = g.attrs().get_int("groups");
  const int64_t o = weight->shape[0], kh = weight->shape[2], kw = weight->shape[3];
  const Window w =
      conv_window(g, out->shape[0], out->shape[1], out->shape[2], out->shape[3], kh, kw);
  const int64_t l = w.positions(), k = w.c * w.taps();
  const DLTensor* dy3 = g.view(dy, {w.n, o, l});
  const DLTensor* w2d = g.view(weight, {o, k / groups});
  std::vector<const DLTensor*> parts;
  for (int64_t gi = 0; gi < groups; ++gi) {
    const DLTensor* dy_g = dy3;
    const DLTensor* w_g = w2d;
    if (groups > 1) {
      const int64_t og = o / groups;
      dy_g = g.call(slice, {dy3},
                    {Attr("axis", int64_t(1)), Attr("start", gi * og), Attr("end", (gi + 1) * og)});
      w_g = g.call(slice, {w2d},
                   {Attr("axis", int64_t(0)), Attr("start", gi * og), Attr("end", (gi + 1) * og)});
    }
    parts.push_back(g.call(matmul, {w_g, dy_g}, {Attr("transpose_a", true)}));
  }
  const DLTensor* cols =
      parts.size() == 1 ? parts[0] : g.call(concat, parts, {Attr("axis", int64_t(1))});
  const DLTensor* dx =
      scatter_into_image(g, g.view(cols, {w.n * w.c, w.taps() * l}), tap_positions(g, w), w);
  store(g, dx, g.out(0));
}

// im2col of x as the forward builds it ([N, C·KH·KW, L]), then per group
// dweight = dy [O/groups, N·L] · colsᵀ: one matmul over the batch and the
// positions together.
void conv2d_grad_weight(Graph& g) {
  OAR_OP(matmul, "matmul");
  OAR_OP(slice, "slice");
  OAR_OP(concat, "concat");
  OAR_OP(transpose, "transpose");
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* x = g.widen(g.in(1));
  const DLTensor* out = g.out(0);
  const int64_t groups = g.attrs().get_int("groups");
  const int64_t o = out->shape[0];
  const Window w = conv_window(g, x->shape[0], x->shape[1], x->shape[2], x->shape[3], out->shape[2],
                               out->shape[3]);
  const int64_t l = w.positions(), k = w.c * w.taps();
  const DLTensor* xp = pad_hw(g, x, w.ph, w.pw, 0.0);
  std::vector<const DLTensor*> taps;
  for (int64_t t = 0; t < w.taps(); ++t) {
    taps.push_back(g.view(tap(g, xp, w, t), {w.n, w.c, 1, l}));
  }
  const DLTensor* cols =
      taps.size() == 1 ? taps[0] : g.call(concat, taps, {Attr("axis", int64_t(2))});
  std::vector<int64_t> perm{1, 0, 2};
  // [K, N, L] and [O, N, L], each as a matrix over N·L.
  cols = g.view(g.call(transpose, {g.view(cols, {w.n, k, l})}, {Attr("perm", perm)}), {k, w.n * l});
  const DLTensor* dy2 =
      g.view(g.call(transpose, {g.view(dy, {w.n, o, l})}, {Attr("perm", perm)}), {o, w.n * l});
  std::vector<const DLTensor*> parts;
  for (int64_t gi = 0; gi < groups; ++gi) {
    const DLTensor* dy_g = dy2;
    const DLTensor* cols_g = cols;
    if (groups > 1) {
      const int64_t og = o / groups, kg = k / groups;
      dy_g = g.call(slice, {dy2},
                    {Attr("axis", int64_t(0)), Attr("start", gi * og), Attr("end", (gi + 1) * og)});
      cols_g =
          g.call(slice, {cols},
                 {Attr("axis", int64_t(0)), Attr("start", gi * kg), Attr("end", (gi + 1) * kg)});
    }
    parts.push_back(g.call(matmul, {dy_g, cols_g}, {Attr("transpose_b", true)}));
  }
  const DLTensor* dweight =
      parts.size() == 1 ? parts[0] : g.call(concat, parts, {Attr("axis", int64_t(0))});
  store(g, dweight, g.view(out, {o, k / groups}));
}

// ---- Attention ----

// p = softmax(scale · q kᵀ, masked) recomputed as the forward does (a query
// that sees no key gets a row of zeros), then
//   dv = pᵀ dy, dp = dy vᵀ, ds = p · (dp − Σ_j p · dp), dq = scale · ds k,
//   dk = scale · dsᵀ q.
void attention_grad(Graph& g) {
  OAR_OP(matmul, "matmul");
  OAR_OP(mul, "mul");
  OAR_OP(sub, "sub");
  OAR_OP(where, "where");
  OAR_OP(softmax, "softmax");
  const DLTensor* dy = g.widen(g.in(0));
  const DLTensor* q = g.widen(g.in(1));
  const DLTensor* k = g.widen(g.in(2));
  const DLTensor* v = g.widen(g.in(3));
  const AttentionScores a = attention_scores(g, q, k);
  const DLTensor* p = g.call(softmax, {a.scores}, {Attr("axis", int64_t(-1))});
  if (a.row_visible != nullptr) p = g.call(where, {a.row_visible, p, g.scalar(0, q->dtype)});
  const DLTensor* dv = g.call(matmul, {p, dy}, {Attr("transpose_a", true)});
  const DLTensor* dp = g.call(matmul, {dy, v}, {Attr("transpose_b", true)});
  const DLTensor* ds = g.call(mul, {p, g.call(sub, {dp, row_sum(g, g.call(mul, {p, dp}), -1)})});
  ds = g.call(mul, {ds, a.scale});
  const DLTensor* dq = g.call(matmul, {ds, k});
  const DLTensor* dk = g.call(matmul, {ds, q}, {Attr("transpose_a", true)});
  store(g, dq, g.out(0));
  store(g, dk, g.out(1));
  store(g, dv, g.out(2));
}

#undef OAR_OP

}  // namespace

void add_gradient_decompositions(std::vector<Decomposition>& table) {
  table.push_back({"relu_grad", relu_grad});
  table.push_back({"sigmoid_grad", sigmoid_grad});
  table.push_back({"tanh_grad", tanh_grad});
  table.push_back({"silu_grad", silu_grad});
  table.push_back({"gelu_grad", gelu_grad});
  table.push_back({"softmax_grad", softmax_grad});
  table.push_back({"log_softmax_grad", log_softmax_grad});
  table.push_back({"embedding_grad", embedding_grad});
  table.push_back({"cross_entropy_grad", cross_entropy_grad});
  table.push_back({"rotary_embedding_grad", rotary_embedding_grad});
  table.push_back({"layer_norm_grad", layer_norm_grad});
  table.push_back({"rms_norm_grad", rms_norm_grad});
  table.push_back({"max_pool2d_grad", max_pool2d_grad});
  table.push_back({"avg_pool2d_grad", avg_pool2d_grad});
  table.push_back({"conv2d_grad_input", conv2d_grad_input});
  table.push_back({"conv2d_grad_weight", conv2d_grad_weight});
  table.push_back({"scaled_dot_product_attention_grad", attention_grad});
}

}  // namespace oar::decompose
