// Elementwise activations from primitives: sigmoid, silu, gelu, relu.
// Float inputs are computed in f32 (f16/bf16) or their own type and rounded
// once more at the store (docs/ops.md, "Primitives and decompositions").
#include <cmath>
#include <string>

#include "core/ops/decompositions/decompose.h"
#include "oar/error.hpp"

namespace oar::decompose {
namespace {

#define OAR_OP(var, name) static const OpId var(name)

// 1 + exp(-x). sigmoid(x) = 1 / that: exp(-x) = inf gives 1 / inf = 0 and
// exp(-x) = 0 gives 1, so both tails are exact (no inf / inf).
const DLTensor* one_plus_exp_neg(Graph& g, const DLTensor* x) {
  OAR_OP(neg, "neg");
  OAR_OP(exp, "exp");
  OAR_OP(add, "add");
  const DLTensor* e = g.call(exp, {g.call(neg, {x})});
  return g.call(add, {e, g.scalar(1.0, x->dtype)});
}

void sigmoid(Graph& g) {
  OAR_OP(reciprocal, "reciprocal");
  const DLTensor* x = g.widen(g.in(0));
  g.finish(reciprocal, {one_plus_exp_neg(g, x)}, g.out(0));
}

// silu(x) = x / (1 + exp(-x)): silu(-inf) = -inf / inf = NaN as documented.
void silu(Graph& g) {
  OAR_OP(div, "div");
  const DLTensor* x = g.widen(g.in(0));
  g.finish(div, {x, one_plus_exp_neg(g, x)}, g.out(0));
}

// gelu "none": 0.5 x (1 + erf(x / sqrt 2)). gelu "tanh": 0.5 x (1 + tanh(u)),
// u = sqrt(2/pi) (x + 0.044715 x^3), written as x / (1 + exp(-2u)): the same
// value, but exactly -0 where tanh(u) would be -1 and NaN at -inf, even on a
// device whose tanh stops an ulp short of -1 (PoCL's does, and 1 + tanh(u)
// then leaves -3e-6 for -0 and -inf for NaN).
void gelu(Graph& g) {
  OAR_OP(mul, "mul");
  OAR_OP(add, "add");
  OAR_OP(div, "div");
  OAR_OP(erf, "erf");
  const DLTensor* x = g.widen(g.in(0));
  const DLDataType t = x->dtype;
  std::string approximate = g.attrs().get_string("approximate");
  if (approximate == "tanh") {
    const DLTensor* x3 = g.call(mul, {g.call(mul, {x, x}), x});
    const DLTensor* poly = g.call(add, {x, g.call(mul, {x3, g.scalar(0.044715, t)})});
    const DLTensor* two_u = g.call(mul, {poly, g.scalar(2.0 * std::sqrt(2.0 / M_PI), t)});
    g.finish(div, {x, one_plus_exp_neg(g, two_u)}, g.out(0));
  } else if (approximate == "none") {
    const DLTensor* half_x = g.call(mul, {x, g.scalar(0.5, t)});
    const DLTensor* inner = g.call(erf, {g.call(mul, {x, g.scalar(M_SQRT1_2, t)})});
    g.finish(mul, {half_x, g.call(add, {inner, g.scalar(1.0, t)})}, g.out(0));
  } else {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "gelu: approximate must be \"none\" or \"tanh\", not \"" + approximate + "\"");
  }
}

// relu(x) = maximum(x, 0): NaN stays NaN (maximum propagates it); ints too.
void relu(Graph& g) {
  OAR_OP(maximum, "maximum");
  const DLTensor* x = g.in(0);
  g.call_into(maximum, {x, g.scalar(0.0, x->dtype)}, g.out(0));
}

#undef OAR_OP

}  // namespace

void add_activation_decompositions(std::vector<Decomposition>& table) {
  table.push_back({"sigmoid", sigmoid});
  table.push_back({"silu", silu});
  table.push_back({"gelu", gelu});
  table.push_back({"relu", relu});
}

}  // namespace oar::decompose
