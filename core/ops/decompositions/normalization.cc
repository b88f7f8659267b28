// Reductions that normalize, from primitives: mean, softmax, log_softmax,
// layer_norm, rms_norm, batch_norm, cross_entropy, scaled_dot_product_attention.
// Float inputs are computed in f32 (f16/bf16) or their own type and rounded
// once more at the store (docs/ops.md, "Primitives and decompositions").
#include <string>
#include <vector>

#include "core/ops/decompositions/decompose.h"
#include "oar/error.hpp"

namespace oar::decompose {
namespace {

#define OAR_OP(var, name) static const OpId var(name)

// mean = sum / count, count the number of reduced elements (NaN for 0).
void mean(Graph& g) {
  OAR_OP(sum, "sum");
  OAR_OP(div, "div");
  const DLTensor* x = g.widen(g.in(0));
  std::vector<int64_t> axes = g.attrs().get_ints("axes");
  const bool keepdim = g.attrs().get_bool("keepdim");
  std::vector<bool> reduced(size_t(x->ndim), axes.empty());
  for (int64_t axis : axes) {
    if (x->ndim > 0) reduced[size_t(axis < 0 ? axis + x->ndim : axis)] = true;
  }
  double count = 1;
  for (int d = 0; d < x->ndim; ++d) {
    if (reduced[size_t(d)]) count *= double(x->shape[d]);
  }
  const DLTensor* s = g.call(sum, {x}, {Attr("axes", axes), Attr("keepdim", keepdim)});
  g.finish(div, {s, g.scalar(count, s->dtype)}, g.out(0));
}

// x - max(x) along |axis| (kept), in the compute type.
const DLTensor* shifted(Graph& g, const DLTensor* x, int64_t axis) {
  OAR_OP(max, "max");
  OAR_OP(sub, "sub");
  std::vector<int64_t> axes{axis};
  const DLTensor* m = g.call(max, {x}, {Attr("axes", axes), Attr("keepdim", true)});
  return g.call(sub, {x, m});
}

// softmax = exp(x - m) / sum exp(x - m). A row of NaN, +inf or only -inf
// gets NaN from x - m; a -inf element of a finite row exp(-inf) = 0.
void softmax(Graph& g) {
  OAR_OP(exp, "exp");
  OAR_OP(div, "div");
  const int64_t axis = g.attrs().get_int("axis");
  const DLTensor* e = g.call(exp, {shifted(g, g.widen(g.in(0)), axis)});
  g.finish(div, {e, row_sum(g, e, axis)}, g.out(0));
}

// log_softmax = (x - m) - log sum exp(x - m): the maximum is subtracted from x
// first, as docs/ops.md requires.
void log_softmax(Graph& g) {
  OAR_OP(exp, "exp");
  OAR_OP(log, "log");
  OAR_OP(sub, "sub");
  const int64_t axis = g.attrs().get_int("axis");
  const DLTensor* d = shifted(g, g.widen(g.in(0)), axis);
  const DLTensor* s = row_sum(g, g.call(exp, {d}), axis);
  g.finish(sub, {d, g.call(log, {s})}, g.out(0));
}

// Two passes: the variance is the mean of the centred squares (row_stats).
void layer_norm(Graph& g) {
  OAR_OP(mul, "mul");
  OAR_OP(add, "add");
  const DLTensor* x = g.widen(g.in(0));
  const DLTensor* weight = g.widen(g.in(1));
  const DLTensor* bias = g.widen(g.in(2));
  const RowStats st = row_stats(g, x, g.attrs().get_float("eps"), true);
  const DLTensor* scaled = g.call(mul, {g.call(mul, {st.centred, st.rstd}), weight});
  g.finish(add, {scaled, bias}, g.out(0));
}

void rms_norm(Graph& g) {
  OAR_OP(mul, "mul");
  const DLTensor* x = g.widen(g.in(0));
  const DLTensor* weight = g.widen(g.in(1));
  const RowStats st = row_stats(g, x, g.attrs().get_float("eps"), false);
  g.finish(mul, {g.call(mul, {x, st.rstd}), weight}, g.out(0));
}

// Per channel (dimension 1): (x - mean) * (rsqrt(var + eps) * weight) + bias.
void batch_norm(Graph& g) {
  OAR_OP(sub, "sub");
  OAR_OP(mul, "mul");
  OAR_OP(add, "add");
  OAR_OP(rsqrt, "rsqrt");
  const DLTensor* x = g.widen(g.in(0));
  std::vector<int64_t> channel(size_t(x->ndim - 1), 1);
  channel[0] = x->shape[1];
  auto per_channel = [&](size_t i) { return g.view(g.widen(g.in(i)), channel); };
  const double eps = g.attrs().get_float("eps");
  const DLTensor* inv = g.call(rsqrt, {g.call(add, {per_channel(2), g.scalar(eps, x->dtype)})});
  const DLTensor* scale = g.call(mul, {inv, per_channel(3)});
  const DLTensor* centred = g.call(sub, {x, per_channel(1)});
  g.finish(add, {g.call(mul, {centred, scale}), per_channel(4)}, g.out(0));
}

// loss_n = -log_softmax(logits)[n, target[n]]: log_softmax (native or
// decomposed), a gather of each row's target (OUT_OF_RANGE for a bad index),
// then the reduction.
void cross_entropy(Graph& g) {
  OAR_OP(log_softmax_op, "log_softmax");
  OAR_OP(gather, "gather");
  OAR_OP(neg, "neg");
  OAR_OP(sum, "sum");
  OAR_OP(div, "div");
  const std::string reduction = g.attrs().get_string("reduction");
  if (reduction != "mean" && reduction != "sum" && reduction != "none") {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "cross_entropy: reduction must be mean, sum or none, not \"" + reduction + "\"");
  }
  const DLTensor* x = g.widen(g.in(0));
  const int64_t n = x->shape[0];
  const DLTensor* lsm = g.call(log_softmax_op, {x}, {Attr("axis", int64_t(1))});
  const DLTensor* target = g.view(g.in(1), {n, 1});
  const DLTensor* picked = g.call(gather, {lsm, target}, {Attr("axis", int64_t(1))});
  if (reduction == "none") {
    g.finish(neg, {picked}, g.view(g.out(0), {n, 1}));
    return;
  }
  const DLTensor* loss = g.call(neg, {picked});
  std::vector<int64_t> all;
  if (reduction == "sum") {
    g.finish(sum, {loss}, g.out(0), {Attr("axes", all), Attr("keepdim", false)});
    return;
  }
  const DLTensor* total = g.call(sum, {loss}, {Attr("axes", all), Attr("keepdim", false)});
  g.finish(div, {total, g.scalar(double(n), total->dtype)}, g.out(0));
}

// softmax(scale * q k^T, masked) v. Masked keys get -inf before the softmax;
// a query that sees no key (bottom-right alignment with Lq > Lk) gets 0.
void attention(Graph& g) {
  OAR_OP(matmul, "matmul");
  OAR_OP(where, "where");
  OAR_OP(softmax_op, "softmax");
  const DLTensor* q = g.widen(g.in(0));
  const DLTensor* k = g.widen(g.in(1));
  const DLTensor* v = g.widen(g.in(2));
  const AttentionScores a = attention_scores(g, q, k);
  const DLTensor* p = g.call(softmax_op, {a.scores}, {Attr("axis", int64_t(-1))});
  if (a.row_visible == nullptr) {
    g.finish(matmul, {p, v}, g.out(0));
    return;
  }
  const DLTensor* y = g.call(matmul, {p, v});
  g.finish(where, {a.row_visible, y, g.scalar(0, q->dtype)}, g.out(0));
}

#undef OAR_OP

}  // namespace

void add_normalization_decompositions(std::vector<Decomposition>& table) {
  table.push_back({"mean", mean});
  table.push_back({"softmax", softmax});
  table.push_back({"log_softmax", log_softmax});
  table.push_back({"layer_norm", layer_norm});
  table.push_back({"rms_norm", rms_norm});
  table.push_back({"batch_norm", batch_norm});
  table.push_back({"cross_entropy", cross_entropy});
  table.push_back({"scaled_dot_product_attention", attention});
}

}  // namespace oar::decompose
