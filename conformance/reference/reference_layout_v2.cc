// The reference implementation of the operators of core/ops/schema_layout_v2.cc:
// plain loops in double (int64 for integers), written from docs/ops.md.
#include <cmath>
#include <string>

#include "conformance/reference/reference_parts.h"

namespace oar::conformance::ref {
namespace {

// Steps |at| to the next row-major position of |shape| (an odometer).
void next_position(const Shape& shape, Shape& at) {
  for (size_t d = shape.size(); d-- > 0;) {
    if (++at[d] < shape[d]) return;
    at[d] = 0;
  }
}

int64_t linear(const Shape& shape, const Shape& at) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + at[d];
  return i;
}

// y[p] = x[p with p[a] replaced by n_a - 1 - p[a] for every flipped axis a].
void flip(Ctx& c) {
  const HostTensor& x = c.x();
  const Shape& shape = x.shape;
  std::vector<bool> flipped(shape.size(), false);
  std::vector<int64_t> axes = c.attrs.get_ints("axes");
  if (axes.empty()) flipped.assign(shape.size(), true);
  for (int64_t a : axes) {
    if (!shape.empty()) flipped[size_t(a < 0 ? a + int64_t(shape.size()) : a)] = true;
  }
  Shape at(shape.size(), 0), q(shape.size());
  for (int64_t i = 0; i < x.numel(); ++i, next_position(shape, at)) {
    for (size_t d = 0; d < shape.size(); ++d) q[d] = flipped[d] ? shape[d] - 1 - at[d] : at[d];
    copy_element(c.y(), i, x, linear(shape, q));
  }
}

// Keeps x[..., i, j] where j - i is on the kept side of |diagonal|; the
// rest of y stays zero (HostTensor::zeros: +0, 0 or false).
void triangle(Ctx& c, bool lower) {
  const HostTensor& x = c.x();
  const int64_t diagonal = c.attrs.get_int("diagonal");
  const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t row = i / cols % rows, col = i % cols;
    // col - row cannot wrap: both lie in [0, 2^63).
    const bool keep = lower ? col - row <= diagonal : col - row >= diagonal;
    if (keep) copy_element(c.y(), i, x, i);
  }
}

// y[p] = x[p aligned at the last dimension, size-1 dimensions of x at 0].
void expand(Ctx& c) {
  const HostTensor& x = c.x();
  HostTensor& y = c.y();
  const size_t lead = y.shape.size() - x.shape.size();
  Shape at(y.shape.size(), 0), from(x.shape.size());
  for (int64_t i = 0; i < y.numel(); ++i, next_position(y.shape, at)) {
    for (size_t d = 0; d < from.size(); ++d) from[d] = x.shape[d] == 1 ? 0 : at[lead + d];
    copy_element(y, i, x, linear(x.shape, from));
  }
}

// Each coordinate of y minus the begin pad, then mapped into x: reflected
// about the first and last element (reflect), clamped to them (replicate),
// or, outside x, the value (constant).
void pad(Ctx& c) {
  const HostTensor& x = c.x();
  HostTensor& y = c.y();
  const std::vector<int64_t> pads = c.attrs.get_ints("pads");
  const std::string mode = c.attrs.get_string("mode");
  const double value = c.attrs.get_float("value");
  const size_t rank = x.shape.size();
  Shape position(rank, 0), at(rank);
  for (int64_t i = 0; i < y.numel(); ++i, next_position(y.shape, position)) {
    at = position;
    bool outside = false;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t n = x.shape[d];
      int64_t q = at[d] - pads[d];
      if (q >= 0 && q < n) {
        at[d] = q;
        continue;
      }
      if (mode == "constant") {
        outside = true;
      } else if (mode == "reflect") {
        at[d] = q < 0 ? -q : 2 * (n - 1) - q;
      } else {
        at[d] = q < 0 ? 0 : n - 1;
      }
    }
    if (outside) {
      y.set(i, value);
    } else {
      copy_element(y, i, x, linear(x.shape, at));
    }
  }
}

// y[p, c] = 1 where c == index[p], else 0; every index checked first.
void one_hot(Ctx& c) {
  const HostTensor& index = c.x();
  HostTensor& y = c.y();
  const int64_t classes = c.attrs.get_int("num_classes");
  for (int64_t i = 0; i < index.numel(); ++i) {
    const int64_t k = checked_index(index, i, classes, "one_hot");
    y.set(i * classes + k, 1.0);
  }
}

// y = x; then, for every position p of index in row-major order, the
// element q = p with q[axis] = index[p] gets src[p] (scatter) or y[q] +
// src[p] rounded to y's dtype (scatter_add). Row-major order visits the
// positions of one line along the axis in index order.
void scatter(Ctx& c, bool add) {
  const HostTensor &x = c.x(), &index = c.in[1], &src = c.in[2];
  HostTensor& y = c.y();
  y.bytes = x.bytes;
  const size_t axis = size_t(c.layout_axis());
  const bool integer = !is_float(y.dtype);
  Shape position(index.shape.size(), 0), at(index.shape.size());
  for (int64_t i = 0; i < index.numel(); ++i, next_position(index.shape, position)) {
    at = position;
    at[axis] = checked_index(index, i, x.shape[axis], c.schema.name);
    const int64_t q = linear(x.shape, at);
    if (!add) {
      copy_element(y, q, src, i);
    } else if (integer) {
      y.set_int(q, add_wrap(y.get_int(q), src.get_int(i)));
    } else {
      y.set(q, y.get(q) + src.get(i));
    }
  }
}

// y[i] = start + i * step: in f64 for floats (rounded once when stored);
// exactly, wrapping, for integers, whose start and step must be integers.
void arange(Ctx& c) {
  HostTensor& y = c.y();
  const double start = c.attrs.get_float("start"), step = c.attrs.get_float("step");
  if (is_float(y.dtype)) {
    for (int64_t i = 0; i < y.numel(); ++i) y.set(i, start + double(i) * step);
    return;
  }
  if (std::trunc(start) != start || std::trunc(step) != step || std::fabs(start) >= 0x1p63 ||
      std::fabs(step) >= 0x1p63) {
    fail(OAR_STATUS_INVALID_ARGUMENT,
         "arange: an integer dtype needs integer start and step within int64");
  }
  for (int64_t i = 0; i < y.numel(); ++i) {
    y.set_int(i, add_wrap(int64_t(start), mul_wrap(i, int64_t(step))));
  }
}

}  // namespace

void add_layout_v2_references(ReferenceTable& table) {
  table["flip"] = flip;
  table["tril"] = [](Ctx& c) { triangle(c, true); };
  table["triu"] = [](Ctx& c) { triangle(c, false); };
  table["expand"] = expand;
  table["pad"] = pad;
  table["one_hot"] = one_hot;
  table["scatter"] = [](Ctx& c) { scatter(c, false); };
  table["scatter_add"] = [](Ctx& c) { scatter(c, true); };
  table["arange"] = arange;
}

}  // namespace oar::conformance::ref
