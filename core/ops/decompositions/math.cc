// Math and neural-network operators outside the primitive set: logsumexp,
// sort, topk, rotary_embedding, matmul_w8 (docs/ops.md, "Primitives and
// decompositions"). Float inputs are computed in f32 (f16/bf16) or their own
// type and rounded once more at the store.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/ops/decompositions/decompose.h"

namespace oar::decompose {
namespace {

#define OAR_OP(var, name) static const OpId var(name)

constexpr double kInf = std::numeric_limits<double>::infinity();

// logsumexp = m + log(sum(exp(x - m))), m the maximum, replaced by 0 where it
// is infinite: a row of only -inf gives log 0 = -inf, a +inf gives +inf, and
// NaN (the maximum of a row holding one) stays NaN. An empty reduced axis
// gives -inf (max has no value there).
void logsumexp(Graph& g) {
  OAR_OP(max, "max");
  OAR_OP(abs, "abs");
  OAR_OP(eq, "eq");
  OAR_OP(where, "where");
  OAR_OP(sub, "sub");
  OAR_OP(exp, "exp");
  OAR_OP(sum, "sum");
  OAR_OP(log, "log");
  OAR_OP(add, "add");
  OAR_OP(fill, "fill");
  const DLTensor* x = g.widen(g.in(0));
  const std::vector<int64_t> axes = g.attrs().get_ints("axes");
  const bool keepdim = g.attrs().get_bool("keepdim");
  std::vector<bool> reduced(size_t(x->ndim), axes.empty());
  for (int64_t axis : axes) reduced[size_t(axis < 0 ? axis + x->ndim : axis)] = true;
  for (int d = 0; d < x->ndim; ++d) {
    if (reduced[size_t(d)] && x->shape[d] == 0) {
      g.call_into(fill, {}, g.out(0), {Attr("value", -kInf)});
      return;
    }
  }
  const DLTensor* m = g.call(max, {x}, {Attr("axes", axes), Attr("keepdim", true)});
  const DLTensor* infinite = g.call(eq, {g.call(abs, {m}), g.scalar(kInf, x->dtype)});
  m = g.call(where, {infinite, g.scalar(0.0, x->dtype), m});
  const DLTensor* s = g.call(sum, {g.call(exp, {g.call(sub, {x, m})})},
                             {Attr("axes", axes), Attr("keepdim", keepdim)});
  const DLTensor* shift = g.view(m, std::vector<int64_t>(s->shape, s->shape + s->ndim));
  g.finish(add, {g.call(log, {s}), shift}, g.out(0));
}

// sort: indices = argsort (stable, NaN above everything), values = gather(x,
// indices): values move bit for bit.
void sort(Graph& g) {
  OAR_OP(argsort, "argsort");
  OAR_OP(gather, "gather");
  OAR_OP(copy, "copy");
  OAR_OP(fill, "fill");
  const DLTensor* x = g.in(0);
  if (x->ndim == 0) {  // one element: itself, at index 0
    g.call_into(copy, {x}, g.out(0));
    g.call_into(fill, {}, g.out(1), {Attr("value", 0.0)});
    return;
  }
  const int64_t axis = g.attrs().get_int("axis");
  g.call_into(argsort, {x}, g.out(1),
              {Attr("axis", axis), Attr("descending", g.attrs().get_bool("descending"))});
  g.call_into(gather, {x, g.out(1)}, g.out(0), {Attr("axis", axis)});
}

// topk: the first k of the stable argsort (descending for largest), then
// gather: ties at the boundary keep the lowest indices.
void topk(Graph& g) {
  OAR_OP(argsort, "argsort");
  OAR_OP(slice, "slice");
  OAR_OP(gather, "gather");
  const DLTensor* x = g.in(0);
  const int64_t axis = g.attrs().get_int("axis");
  const DLTensor* order =
      g.call(argsort, {x}, {Attr("axis", axis), Attr("descending", g.attrs().get_bool("largest"))});
  g.call_into(slice, {order}, g.out(1),
              {Attr("axis", axis), Attr("start", int64_t(0)), Attr("end", g.attrs().get_int("k"))});
  g.call_into(gather, {x, g.out(1)}, g.out(0), {Attr("axis", axis)});
}

// rotary_embedding: the pairs (x1, x2) as two slices of the last dimension
// (half layout) or of a trailing [D/2, 2] view (interleaved);
// y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin, joined by concat.
void rotary_embedding(Graph& g) {
  OAR_OP(slice, "slice");
  OAR_OP(mul, "mul");
  OAR_OP(sub, "sub");
  OAR_OP(add, "add");
  OAR_OP(concat, "concat");
  const DLTensor* x = g.widen(g.in(0));
  const DLTensor* cos = g.widen(g.in(1));
  const DLTensor* sin = g.widen(g.in(2));
  const int r = x->ndim;
  const int64_t seq = x->shape[r - 2], d = x->shape[r - 1], half = d / 2;
  std::vector<int64_t> shape(x->shape, x->shape + r);
  int64_t axis = r - 1;
  if (g.attrs().get_bool("interleaved")) {
    shape.back() = half;
    shape.push_back(2);
    x = g.view(x, shape);
    cos = g.view(cos, {seq, half, 1});
    sin = g.view(sin, {seq, half, 1});
    axis = r;
  }
  const int64_t width = g.attrs().get_bool("interleaved") ? 1 : half;
  auto part = [&](int64_t start) {
    return g.call(slice, {x},
                  {Attr("axis", axis), Attr("start", start), Attr("end", start + width)});
  };
  const DLTensor* x1 = part(0);
  const DLTensor* x2 = part(width);
  const DLTensor* y1 = g.call(sub, {g.call(mul, {x1, cos}), g.call(mul, {x2, sin})});
  const DLTensor* y2 = g.call(add, {g.call(mul, {x2, cos}), g.call(mul, {x1, sin})});
  g.finish(concat, {y1, y2}, g.view(g.out(0), shape), {Attr("axis", axis)});
}

// matmul_w8: x [M, K] (leading dimensions flattened) times the weight cast to
// the compute type and transposed, then times scale [N].
void matmul_w8(Graph& g) {
  OAR_OP(cast, "cast");
  OAR_OP(matmul, "matmul");
  OAR_OP(mul, "mul");
  const DLTensor* x = g.widen(g.in(0));
  const DLTensor* weight = g.in(1);
  const DLTensor* scale = g.widen(g.in(2));
  const int64_t k = x->shape[x->ndim - 1], n = weight->shape[0];
  int64_t m = 1;
  for (int i = 0; i + 1 < x->ndim; ++i) m *= x->shape[i];
  const DLTensor* w = g.call(cast, {weight}, {}, x->dtype);
  const DLTensor* y = g.call(matmul, {g.view(x, {m, k}), w}, {Attr("transpose_b", true)});
  g.finish(mul, {y, scale}, g.view(g.out(0), {m, n}));
}

// fmod by restoring division, exact at every step: with r = |a| and B = |b|,
// for k from K down to 0, r -= B·2^k where B·2^k <= r (Sterbenz: r < 2·B·2^k
// there, so the subtraction is exact); K covers the whole exponent range of
// the dtype (a finite |a| < B·2^(K+1) for every B > 0). Floats are computed
// in f32 for f16/bf16 (their fmod is exact there too), B·2^k by exact
// multiplications by powers of two. Integers run on -|a| and -|b| (so that
// INT_MIN has a magnitude), K = bits - 1, a step taken only where B·2^k does
// not overflow. Returns fmod(a, b) in the compute type with C's special
// values (b = 0: NaN for floats, 0 for integers).
const DLTensor* fmod_of(Graph& g) {
  OAR_OP(abs, "abs");
  OAR_OP(neg, "neg");
  OAR_OP(mul, "mul");
  OAR_OP(sub, "sub");
  OAR_OP(le, "le");
  OAR_OP(lt, "lt");
  OAR_OP(eq, "eq");
  OAR_OP(where, "where");
  OAR_OP(bitwise_and, "bitwise_and");
  const DLTensor* a = g.widen(g.in(0));
  const DLTensor* b = g.widen(g.in(1));
  const DLDataType t = a->dtype;
  const std::vector<int64_t> out(g.out(0)->shape, g.out(0)->shape + g.out(0)->ndim);
  const std::vector<int64_t> b_shape(b->shape, b->shape + b->ndim);
  const bool integer = t.code == kDLInt;
  const DLTensor* zero = g.scalar(0.0, t);
  const DLTensor* r = nullptr;
  if (integer) {
    const DLTensor* cond = g.empty(out, dtype::boolean);
    const DLTensor* diff = g.empty(out, t);
    const DLTensor* rs[2] = {g.empty(out, t), g.empty(out, t)};
    const DLTensor* ts[2] = {g.empty(b_shape, t), g.empty(b_shape, t)};
    int steps = 0;
    // r = where(cond, r - tk, r), into the other of two buffers.
    auto step = [&](const DLTensor* tk, const DLTensor* take) {
      g.call_into(sub, {r, tk}, diff);
      const DLTensor* next = rs[steps++ & 1];
      g.call_into(where, {take, diff, r}, next);
      r = next;
    };
    const int bits = t.bits;
    auto negative_magnitude = [&](const DLTensor* x) {
      return g.call(where, {g.call(lt, {x, zero}), x, g.call(neg, {x})});
    };
    r = negative_magnitude(a);
    const DLTensor* big = negative_magnitude(b);  // -|b|
    const DLTensor* valid = g.empty(b_shape, dtype::boolean);
    const DLTensor* closer = g.empty(out, dtype::boolean);
    for (int k = bits - 1; k >= 0; --k) {
      // -|b|·2^k >= INT_MIN exactly when -|b| >= -2^(bits-1-k) (always at
      // k = 0); at k = bits - 1, -|b|·(-2^(bits-2))·2 gives -|b|·2^k for -|b|
      // in {0, -1} (wrapping). No constant is INT_MIN itself: a device's fill
      // may not reach it (lavapipe's fills 0).
      if (k == bits - 1) {
        g.call_into(mul, {big, g.scalar(-std::ldexp(1.0, k - 1), t)}, ts[1]);
        g.call_into(mul, {ts[1], g.scalar(2.0, t)}, ts[0]);
      } else {
        g.call_into(mul, {big, g.scalar(std::ldexp(1.0, k), t)}, ts[0]);
      }
      g.call_into(le, {r, ts[0]}, closer);  // r <= -|b|·2^k <= 0
      if (k > 0) {
        g.call_into(le, {g.scalar(-std::ldexp(1.0, bits - 1 - k), t), big}, valid);
        g.call_into(bitwise_and, {closer, valid}, cond);
      }
      step(ts[0], k > 0 ? cond : closer);
    }
    // -(|a| mod |b|) with a's sign restored; b = 0 gives 0.
    const DLTensor* y = g.call(where, {g.call(lt, {a, zero}), r, g.call(neg, {r})});
    return g.call(where, {g.call(eq, {b, zero}), zero, y});
  }
  // Floats: |a| = ma·2^(Ea−bias−M), |b| = mb·2^(Eb−bias−M) from a bit view
  // (M the significand's bits, E = max(exponent field, 1), ma and mb
  // integers below 2^(M+1)). For d = Ea − Eb < 0, |a| < |b| and the result is
  // |a|; else it is (ma·2^d mod mb)·2^(Eb−bias−M), computed exactly in
  // integers: r = ma, then r = r·2^c − q·mb with c = min(d left, C), the
  // quotient q = floor(r·2^c / mb) estimated in the float type (off by at
  // most one: |r·2^c / mb| < 2^(M−1) with C = M − 2, r kept in [−mb, 2·mb)
  // between rounds, its float value and the division each rounded once),
  // the products wrapping in the integer type of the same width (the exact
  // remainder is small, so its low bits are all of it), and the last
  // remainder brought into [0, mb). f32: 13 rounds (d <= 253), f64: 41
  // (d <= 2,045), f16 in f32: 2 (d <= 39).
  const bool f64 = t.bits == 64;
  const DLDataType it = f64 ? dtype::i64 : dtype::i32;
  const int m_bits = f64 ? 52 : 23;
  const int bias = f64 ? 1023 : 127;
  const int max_d = f64 ? 2045 : g.in(0)->dtype == dtype::f16 ? 39 : 253;
  const int chunk = m_bits - 2;
  const double one_e = std::ldexp(1.0, m_bits);  // exponent 1 in the bit view
  OAR_OP(cast, "cast");
  OAR_OP(add, "add");
  OAR_OP(div, "div");
  OAR_OP(floor, "floor");
  OAR_OP(maximum, "maximum");
  OAR_OP(minimum, "minimum");
  const DLTensor* abs_a = g.call(abs, {a});
  const DLTensor* abs_b = g.call(abs, {b});
  const DLTensor* mask = g.scalar(one_e - 1, it);
  const DLTensor* one_e_t = g.scalar(one_e, it);
  // E·2^M and the significand of a non-negative float.
  struct Parts {
    const DLTensor* e_scaled;
    const DLTensor* m;
  };
  auto decode = [&](const DLTensor* x) {
    const DLTensor* bits = bit_view(g, x, it);
    const DLTensor* fraction = g.call(bitwise_and, {bits, mask});
    const DLTensor* e_scaled =
        g.call(maximum, {g.call(sub, {bits, fraction}), one_e_t});  // max(field, 1)·2^M
    return Parts{e_scaled, g.call(add, {g.call(sub, {bits, e_scaled}), one_e_t})};
  };
  const Parts pa = decode(abs_a), pb = decode(abs_b);
  const DLTensor* d_scaled = g.call(sub, {pa.e_scaled, pb.e_scaled});  // d·2^M
  const DLTensor* smaller = g.call(lt, {d_scaled, g.scalar(0.0, it)});
  const DLTensor* left = g.call(maximum, {d_scaled, g.scalar(0.0, it)});
  // mb = 0 (b = ±0, its result replaced below) is taken as 1: no inf quotient.
  const DLTensor* mb = g.call(maximum, {pb.m, g.scalar(1.0, it)});
  const DLTensor* mb_f = g.call(cast, {mb}, {}, t);
  // r = x − floor(x_f / mb)·mb, x_f the float value of x (exact).
  auto reduce = [&](const DLTensor* x, const DLTensor* x_f) {
    const DLTensor* q = g.call(cast, {g.call(floor, {g.call(div, {x_f, mb_f})})}, {}, it);
    return g.call(sub, {x, g.call(mul, {q, mb})});
  };
  r = reduce(pa.m, g.call(cast, {pa.m}, {}, t));
  const DLTensor* chunk_scaled = g.scalar(std::ldexp(double(chunk), m_bits), it);
  const DLTensor* bias_scaled = g.scalar(std::ldexp(double(bias), m_bits), it);
  // The rounds reuse ten scratch tensors (2^20 elements of f64: 80 MB).
  const DLTensor* c_scaled = g.empty(out, it);
  const DLTensor* ti[3] = {g.empty(out, it), g.empty(out, it), g.empty(out, it)};
  const DLTensor* tf[2] = {g.empty(out, t), g.empty(out, t)};
  const DLTensor* lefts[2] = {g.empty(out, it), g.empty(out, it)};
  const DLTensor* remainders[2] = {g.empty(out, it), g.empty(out, it)};
  for (int done = 0, k = 0; done < max_d; done += chunk, k ^= 1) {
    g.call_into(minimum, {left, chunk_scaled}, c_scaled);
    g.call_into(sub, {left, c_scaled}, lefts[k]);
    left = lefts[k];
    g.call_into(add, {c_scaled, bias_scaled}, ti[0]);
    const DLTensor* p_f = bit_view(g, ti[0], t);  // 2^c
    g.call_into(cast, {r}, tf[0]);
    g.call_into(mul, {tf[0], p_f}, tf[1]);  // r·2^c, exact
    g.call_into(cast, {p_f}, ti[1]);
    g.call_into(mul, {r, ti[1]}, ti[2]);  // its low bits
    g.call_into(div, {tf[1], mb_f}, tf[0]);
    g.call_into(floor, {tf[0]}, tf[1]);
    g.call_into(cast, {tf[1]}, ti[0]);
    g.call_into(mul, {ti[0], mb}, ti[1]);
    g.call_into(sub, {ti[2], ti[1]}, remainders[k]);
    r = remainders[k];
  }
  r = g.call(where, {g.call(lt, {r, g.scalar(0.0, it)}), g.call(add, {r, mb}), r});
  r = g.call(where, {g.call(le, {mb, r}), g.call(sub, {r, mb}), r});
  // r·2^−M·2^(Eb−bias): both products exact (the result is a multiple of
  // 2^(Eb−bias−M) below |b|).
  const DLTensor* scale = bit_view(g, pb.e_scaled, t);
  r = g.call(
      mul, {g.call(mul, {g.call(cast, {r}, {}, t), g.scalar(std::ldexp(1.0, -m_bits), t)}), scale});
  r = g.call(where, {smaller, abs_a, r});
  const DLTensor* big = abs_b;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // a's sign back (a zero of a's sign for a = ±0), then C's special values.
  const DLTensor* y = g.call(where, {g.call(lt, {a, zero}), g.call(neg, {r}), r});
  y = g.call(where, {g.call(eq, {a, zero}), a, y});
  y = g.call(where, {g.call(eq, {b, b}), y, b});
  y = g.call(where, {g.call(eq, {a, a}), y, a});
  y = g.call(where, {g.call(eq, {big, zero}), g.scalar(nan, t), y});
  return g.call(where, {g.call(eq, {g.call(abs, {a}), g.scalar(kInf, t)}), g.scalar(nan, t), y});
}

void fmod(Graph& g) {
  OAR_OP(copy, "copy");
  OAR_OP(cast, "cast");
  const DLTensor* y = fmod_of(g);
  g.call_into(y->dtype == g.out(0)->dtype ? copy : cast, {y}, g.out(0));
}

// remainder = fmod, plus b where it is nonzero and its sign differs from
// b's; a zero result takes b's sign.
void remainder(Graph& g) {
  OAR_OP(lt, "lt");
  OAR_OP(eq, "eq");
  OAR_OP(add, "add");
  OAR_OP(where, "where");
  const DLTensor* r = fmod_of(g);
  const DLTensor* b = g.widen(g.in(1));
  const DLTensor* zero = g.scalar(0.0, r->dtype);
  const DLTensor* b_negative = g.call(lt, {b, zero});
  const DLTensor* same = g.call(eq, {g.call(lt, {r, zero}), b_negative});
  const DLTensor* y = g.call(where, {same, r, g.call(add, {r, b})});
  const DLTensor* signed_zero =
      r->dtype.code == kDLInt ? zero : g.call(where, {b_negative, g.scalar(-0.0, r->dtype), zero});
  g.finish(where, {g.call(eq, {r, zero}), signed_zero, y}, g.out(0));
}

#undef OAR_OP

}  // namespace

void add_math_decompositions(std::vector<Decomposition>& table) {
  table.push_back({"logsumexp", logsumexp});
  table.push_back({"sort", sort});
  table.push_back({"topk", topk});
  table.push_back({"rotary_embedding", rotary_embedding});
  table.push_back({"matmul_w8", matmul_w8});
  table.push_back({"fmod", fmod});
  table.push_back({"remainder", remainder});
}

}  // namespace oar::decompose
