// Math and neural-network operators outside the primitive set: logsumexp,
// sort, topk, rotary_embedding, matmul_w8 (docs/ops.md, "Primitives and
// decompositions"). Float inputs are computed in f32 (f16/bf16) or their own
// type and rounded once more at the store.
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

#undef OAR_OP

}  // namespace

void add_math_decompositions(std::vector<Decomposition>& table) {
  table.push_back({"logsumexp", logsumexp});
  table.push_back({"sort", sort});
  table.push_back({"topk", topk});
  table.push_back({"rotary_embedding", rotary_embedding});
  table.push_back({"matmul_w8", matmul_w8});
}

}  // namespace oar::decompose
