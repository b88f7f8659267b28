// Elementwise and indexing operators outside the primitive set: reciprocal,
// rsqrt, gt, ge, ne, embedding, index_select, the logical operators,
// bitwise_not, clip (docs/ops.md, "Primitives and decompositions").
#include <vector>

#include "core/ops/decompositions/decompose.h"

namespace oar::decompose {
namespace {

#define OAR_OP(var, name) static const OpId var(name)

// 1 / x: IEEE's division, so the same correctly rounded result.
void reciprocal(Graph& g) {
  OAR_OP(div, "div");
  const DLTensor* x = g.widen(g.in(0));
  g.finish(div, {g.scalar(1.0, x->dtype), x}, g.out(0));
}

// 1 / sqrt(x) in the compute type (f16/bf16 in f32, rounded once at the
// store): rsqrt(+0) = inf, rsqrt(-0) = 1 / -0 = -inf, rsqrt(inf) = 0.
void rsqrt(Graph& g) {
  OAR_OP(div, "div");
  OAR_OP(sqrt, "sqrt");
  const DLTensor* x = g.widen(g.in(0));
  g.finish(div, {g.scalar(1.0, x->dtype), g.call(sqrt, {x})}, g.out(0));
}

// a > b is b < a; a >= b is b <= a (NaN false either way).
void gt(Graph& g) {
  OAR_OP(lt, "lt");
  g.call_into(lt, {g.in(1), g.in(0)}, g.out(0));
}

void ge(Graph& g) {
  OAR_OP(le, "le");
  g.call_into(le, {g.in(1), g.in(0)}, g.out(0));
}

// a != b is (a == b) == false (NaN: true).
void ne(Graph& g) {
  OAR_OP(eq, "eq");
  const DLTensor* equal = g.call(eq, {g.in(0), g.in(1)});
  g.call_into(eq, {equal, g.scalar(0.0, dtype::boolean)}, g.out(0));
}

// |index| broadcast to |shape| (index's own extent on |axis|, 1 elsewhere
// before the broadcast): an index tensor for gather along |axis|.
const DLTensor* spread_index(Graph& g, const DLTensor* index, std::vector<int64_t> index_shape,
                             std::vector<int64_t> zeros_shape) {
  OAR_OP(add, "add");
  const DLTensor* zeros = g.full(std::move(zeros_shape), 0.0, index->dtype);
  return g.call(add, {g.view(index, std::move(index_shape)), zeros});
}

// y[p, :] = weight[index[p], :] is gather(weight, index spread over D,
// axis 0); an index out of [0, V) fails the stream (OUT_OF_RANGE).
void embedding(Graph& g) {
  OAR_OP(gather, "gather");
  const DLTensor* weight = g.in(0);
  const DLTensor* index = g.in(1);
  int64_t m = 1;
  for (int d = 0; d < index->ndim; ++d) m *= index->shape[d];
  const int64_t dim = weight->shape[1];
  const DLTensor* spread = spread_index(g, index, {m, 1}, {1, dim});
  g.call_into(gather, {weight, spread}, g.view(g.out(0), {m, dim}), {Attr("axis", int64_t(0))});
}

// index_select along |axis| is gather with the index spread over the other
// dimensions.
void index_select(Graph& g) {
  OAR_OP(gather, "gather");
  const DLTensor* x = g.in(0);
  const DLTensor* index = g.in(1);
  int64_t axis = g.attrs().get_int("axis");
  if (axis < 0) axis += x->ndim;
  std::vector<int64_t> index_shape(size_t(x->ndim), 1);
  std::vector<int64_t> zeros_shape(x->shape, x->shape + x->ndim);
  index_shape[size_t(axis)] = index->shape[0];
  zeros_shape[size_t(axis)] = 1;
  const DLTensor* spread = spread_index(g, index, index_shape, zeros_shape);
  g.call_into(gather, {x, spread}, g.out(0), {Attr("axis", axis)});
}

// Truth values as the bytes 0 and 1 (any nonzero byte is true): !x.
const DLTensor* is_false(Graph& g, const DLTensor* x) {
  OAR_OP(eq, "eq");
  return g.call(eq, {x, g.scalar(0.0, dtype::boolean)});
}

void logical_not(Graph& g) {
  OAR_OP(eq, "eq");
  g.call_into(eq, {g.in(0), g.scalar(0.0, dtype::boolean)}, g.out(0));
}

// a && b = !a ? false : !!b; a || b = !a ? !!b : true (results 0 or 1).
void logical_and(Graph& g) {
  OAR_OP(where, "where");
  const DLTensor* b = is_false(g, is_false(g, g.in(1)));
  g.call_into(where, {is_false(g, g.in(0)), g.scalar(0.0, dtype::boolean), b}, g.out(0));
}

void logical_or(Graph& g) {
  OAR_OP(where, "where");
  const DLTensor* b = is_false(g, is_false(g, g.in(1)));
  g.call_into(where, {is_false(g, g.in(0)), b, g.scalar(1.0, dtype::boolean)}, g.out(0));
}

// a xor b = (!a) != (!b), on normalized bytes.
void logical_xor(Graph& g) {
  OAR_OP(eq, "eq");
  const DLTensor* same = g.call(eq, {is_false(g, g.in(0)), is_false(g, g.in(1))});
  g.call_into(eq, {same, g.scalar(0.0, dtype::boolean)}, g.out(0));
}

// ~x = -x - 1 in two's complement (wrapping: ~INT_MIN = INT_MAX); on bool,
// logical_not.
void bitwise_not(Graph& g) {
  OAR_OP(neg, "neg");
  OAR_OP(sub, "sub");
  const DLTensor* x = g.in(0);
  if (x->dtype == dtype::boolean) {
    logical_not(g);
    return;
  }
  g.call_into(sub, {g.call(neg, {x}), g.scalar(1.0, x->dtype)}, g.out(0));
}

// minimum(maximum(x, min), max): NaN anywhere gives NaN, min > max gives max.
void clip(Graph& g) {
  OAR_OP(maximum, "maximum");
  OAR_OP(minimum, "minimum");
  g.call_into(minimum, {g.call(maximum, {g.in(0), g.in(1)}), g.in(2)}, g.out(0));
}

#undef OAR_OP

}  // namespace

void add_elementwise_decompositions(std::vector<Decomposition>& table) {
  table.push_back({"reciprocal", reciprocal});
  table.push_back({"rsqrt", rsqrt});
  table.push_back({"gt", gt});
  table.push_back({"ge", ge});
  table.push_back({"ne", ne});
  table.push_back({"embedding", embedding});
  table.push_back({"index_select", index_select});
  table.push_back({"logical_not", logical_not});
  table.push_back({"logical_and", logical_and});
  table.push_back({"logical_or", logical_or});
  table.push_back({"logical_xor", logical_xor});
  table.push_back({"bitwise_not", bitwise_not});
  table.push_back({"clip", clip});
}

}  // namespace oar::decompose
