// Creation and layout operators of set v2 from primitives: flip, pad
// (constant, reflect, replicate), tril, triu, expand, one_hot
// (docs/ops.md, "Primitives and decompositions"). Every element is moved by
// gather, concat, where or copy, so values (NaN payloads, signed zeros) move
// bit for bit; index grids come from arange.
#include <algorithm>
#include <string>
#include <vector>

#include "core/ops/decompositions/decompose.h"

namespace oar::decompose {
namespace {

#define OAR_OP(var, name) static const OpId var(name)

std::vector<int64_t> shape_of(const DLTensor* t) { return {t->shape, t->shape + t->ndim}; }

// [start, end) in steps of |step| as i64 (arange).
const DLTensor* range(Graph& g, int64_t start, int64_t end, int64_t step = 1) {
  OAR_OP(arange, "arange");
  const int64_t n =
      step > 0 ? std::max<int64_t>(end - start, 0) : std::max<int64_t>(start - end, 0);
  const DLTensor* t = g.empty({n}, dtype::i64);
  g.call_into(arange, {}, t,
              {Attr("start", double(start)), Attr("end", double(end)), Attr("step", double(step))});
  return t;
}

// x[..., index[j], ...] along |axis|, into |out| when given.
const DLTensor* select(Graph& g, const DLTensor* x, const DLTensor* index, int64_t axis,
                       const DLTensor* out) {
  OAR_OP(index_select, "index_select");
  if (out == nullptr) return g.call(index_select, {x, index}, {Attr("axis", axis)});
  g.call_into(index_select, {x, index}, out, {Attr("axis", axis)});
  return out;
}

// |x| moved into the output (the last step when nothing else wrote it).
void copy_out(Graph& g, const DLTensor* x) {
  OAR_OP(copy, "copy");
  g.call_into(copy, {x}, g.out(0));
}

// flip: index_select by [n-1, ..., 0] along each flipped axis of size > 1.
void flip(Graph& g) {
  const DLTensor* x = g.in(0);
  std::vector<int64_t> axes = g.attrs().get_ints("axes");
  if (axes.empty()) {
    for (int d = 0; d < x->ndim; ++d) axes.push_back(d);
  }
  std::vector<int64_t> moving;
  for (int64_t a : axes) {
    if (x->ndim == 0) continue;
    const int64_t axis = a < 0 ? a + x->ndim : a;
    if (x->shape[axis] > 1) moving.push_back(axis);
  }
  if (moving.empty()) return copy_out(g, x);
  for (size_t i = 0; i < moving.size(); ++i) {
    const int64_t n = x->shape[moving[i]];
    x = select(g, x, range(g, n - 1, -1, -1), moving[i],
               i + 1 == moving.size() ? g.out(0) : nullptr);
  }
}

// pad: constant by concat with fill of the value (fill converts it as pad
// must); reflect and replicate by index_select with an index grid made from
// arange: reflect (n-1) - |(n-1) - |q||, replicate min(max(q, 0), n-1), with q
// = p - begin. One dimension at a time, so corners take the element reflected
// or clamped in every dimension.
void pad(Graph& g) {
  OAR_OP(concat, "concat");
  OAR_OP(abs, "abs");
  OAR_OP(sub, "sub");
  OAR_OP(maximum, "maximum");
  OAR_OP(minimum, "minimum");
  const DLTensor* x = g.in(0);
  const std::vector<int64_t> pads = g.attrs().get_ints("pads");
  const std::string mode = g.attrs().get_string("mode");
  const double value = g.attrs().get_float("value");
  const int r = x->ndim;
  std::vector<int> padded;
  for (int d = 0; d < r; ++d) {
    if (pads[size_t(d)] > 0 || pads[size_t(d + r)] > 0) padded.push_back(d);
  }
  if (padded.empty()) return copy_out(g, x);
  for (size_t i = 0; i < padded.size(); ++i) {
    const int d = padded[i];
    const int64_t begin = pads[size_t(d)], end = pads[size_t(d + r)], n = x->shape[d];
    const DLTensor* out = i + 1 == padded.size() ? g.out(0) : nullptr;
    if (mode == "constant") {
      std::vector<const DLTensor*> parts;
      std::vector<int64_t> shape = shape_of(x);
      if (begin > 0) {
        shape[size_t(d)] = begin;
        parts.push_back(g.full(shape, value, x->dtype));
      }
      parts.push_back(x);
      if (end > 0) {
        shape[size_t(d)] = end;
        parts.push_back(g.full(shape, value, x->dtype));
      }
      if (out == nullptr) {
        x = g.call(concat, parts, {Attr("axis", int64_t(d))});
      } else {
        g.call_into(concat, parts, out, {Attr("axis", int64_t(d))});
      }
      continue;
    }
    const DLTensor* q = range(g, -begin, n + end);
    const DLTensor* last = g.scalar(double(n - 1), dtype::i64);
    const DLTensor* index = nullptr;
    if (mode == "reflect") {
      index = g.call(sub, {last, g.call(abs, {g.call(sub, {last, g.call(abs, {q})})})});
    } else {  // replicate
      index = g.call(minimum, {g.call(maximum, {q, g.scalar(0.0, dtype::i64)}), last});
    }
    x = select(g, x, index, d, out);
  }
}

// tril / triu: where(j - i <= diagonal, x, 0) (or >=) over the last two
// dimensions; a dropped element is written as zero, never multiplied.
template <bool kLower>
void triangle(Graph& g) {
  OAR_OP(sub, "sub");
  OAR_OP(le, "le");
  OAR_OP(where, "where");
  const DLTensor* x = g.in(0);
  const int64_t rows = x->shape[x->ndim - 2], cols = x->shape[x->ndim - 1];
  // Clamped, so that the value is exact in the fill (any int64 is valid).
  const int64_t diagonal = std::clamp(g.attrs().get_int("diagonal"), -rows, cols);
  const DLTensor* i = g.view(range(g, 0, rows), {rows, 1});
  const DLTensor* j = g.view(range(g, 0, cols), {1, cols});
  const DLTensor* offset = g.call(sub, {j, i});
  const DLTensor* d = g.scalar(double(diagonal), dtype::i64);
  const DLTensor* keep = kLower ? g.call(le, {offset, d}) : g.call(le, {d, offset});
  g.call_into(where, {keep, x, g.scalar(0.0, x->dtype)}, g.out(0));
}

// expand: where(true, x, zeros) with the zeros only as large as the
// stretched dimensions need: where moves x's bits, the broadcast does the rest.
void expand(Graph& g) {
  OAR_OP(where, "where");
  const DLTensor* x = g.in(0);
  const std::vector<int64_t> out = shape_of(g.out(0));
  const size_t lead = out.size() - size_t(x->ndim);
  std::vector<int64_t> stretch(out.size(), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    if (i < lead || x->shape[i - lead] == 1) stretch[i] = out[i];
  }
  g.call_into(where, {g.scalar(1.0, dtype::boolean), x, g.full(stretch, 0.0, x->dtype)}, g.out(0));
}

// one_hot: eq(index[..., None], arange(C)) cast to y's dtype. The indices are
// first read by a gather from [0, C), which fails the stream with
// OUT_OF_RANGE for an index outside it (the message names gather).
void one_hot(Graph& g) {
  OAR_OP(arange, "arange");
  OAR_OP(gather, "gather");
  OAR_OP(eq, "eq");
  OAR_OP(cast, "cast");
  const DLTensor* index = g.in(0);
  const int64_t classes = g.attrs().get_int("num_classes");
  int64_t count = 1;
  for (int d = 0; d < index->ndim; ++d) count *= index->shape[d];
  const DLTensor* c = g.empty({classes}, index->dtype);
  g.call_into(arange, {}, c, {Attr("end", double(classes))});
  g.call(gather, {c, g.view(index, {count})}, {Attr("axis", int64_t(0))});
  std::vector<int64_t> column = shape_of(index);
  column.push_back(1);
  const DLTensor* hit = g.call(eq, {g.view(index, column), c});
  g.call_into(cast, {hit}, g.out(0));
}

#undef OAR_OP

}  // namespace

void add_layout_decompositions(std::vector<Decomposition>& table) {
  table.push_back({"flip", flip});
  table.push_back({"pad", pad});
  table.push_back({"tril", triangle<true>});
  table.push_back({"triu", triangle<false>});
  table.push_back({"expand", expand});
  table.push_back({"one_hot", one_hot});
}

}  // namespace oar::decompose
