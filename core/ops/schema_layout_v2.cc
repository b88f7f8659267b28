// Schema entries and shape rules of the operator set v2 creation and layout: pad, flip, tril/triu,
// arange, one_hot, expand, scatter (issue 14). docs/ops.md states their semantics.
#include <cmath>
#include <string>

#include "core/ops/schema_parts.h"
#include "core/util/checked_math.h"
#include "oar/dtype.hpp"

namespace oar::ops::detail {
namespace {

using Shapes = std::vector<Shape>;

// flip: y has x's shape; every axis named at most once.
Shapes flip_shape(const OpSchema& schema, const Shapes& in, const Attrs& attrs) {
  const int64_t ndim = int64_t(in[0].size());
  std::vector<bool> seen(in[0].size() + 1, false);
  for (int64_t axis : attrs.get_ints("axes")) {
    int64_t a = normalize_axis(schema, axis, ndim);
    if (seen[size_t(a)]) fail(schema, "axis " + std::to_string(axis) + " is named twice");
    seen[size_t(a)] = true;
  }
  return {in[0]};
}

// tril/triu: the last two dimensions are the matrix.
Shapes triangle_shape(const OpSchema& schema, const Shapes& in, const Attrs& attrs) {
  (void)attrs.get_int("diagonal");
  if (in[0].size() < 2) {
    fail(schema, "x must have at least 2 dimensions, not " + shape_text(in[0]));
  }
  return {in[0]};
}

// expand: NumPy's broadcast_to, with PyTorch's -1 for "x's size".
Shapes expand_shape(const OpSchema& schema, const Shapes& in, const Attrs& attrs) {
  const Shape& x = in[0];
  Shape out = attrs.get_ints("shape");
  if (out.size() < x.size()) {
    fail(schema, "shape " + shape_text(out) + " has fewer dimensions than x " + shape_text(x));
  }
  const size_t lead = out.size() - x.size();
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (i < lead) fail(schema, "-1 in shape " + shape_text(out) + " names no dimension of x");
      out[i] = x[i - lead];
    }
    if (out[i] < 0) fail(schema, "shape " + shape_text(out) + " has a negative dimension");
    if (i >= lead && x[i - lead] != out[i] && x[i - lead] != 1) {
      fail(schema, "x " + shape_text(x) + " does not broadcast to " + shape_text(out));
    }
  }
  int64_t count = 0;
  if (!util::element_count(out.data(), int(out.size()), &count)) {
    fail(schema, "shape " + shape_text(out) + " overflows 64-bit sizes");
  }
  return {out};
}

// pad: pads = [begin_0, ..., begin_{r-1}, end_0, ..., end_{r-1}] (ONNX's order).
Shapes pad_shape(const OpSchema& schema, const Shapes& in, const Attrs& attrs) {
  const Shape& x = in[0];
  const std::vector<int64_t> pads = attrs.get_ints("pads");
  const std::string mode = attrs.get_string("mode");
  (void)attrs.get_float("value");
  if (mode != "constant" && mode != "reflect" && mode != "replicate") {
    fail(schema, "mode must be constant, reflect or replicate, not " + mode);
  }
  if (pads.size() != 2 * x.size()) {
    fail(schema, "pads must have 2 entries per dimension of x " + shape_text(x) +
                     " (begins, then ends), not " + std::to_string(pads.size()));
  }
  Shape out = x;
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t begin = pads[d], end = pads[d + x.size()];
    if (begin < 0 || end < 0) fail(schema, "pads must be >= 0, not " + shape_text(pads));
    if (mode == "reflect" && (begin >= x[d] || end >= x[d]) && (begin > 0 || end > 0)) {
      fail(schema, "reflect padding of dimension " + std::to_string(d) + " (size " +
                       std::to_string(x[d]) + ") needs pads < size, got " + std::to_string(begin) +
                       " and " + std::to_string(end));
    }
    if (mode == "replicate" && x[d] == 0 && (begin > 0 || end > 0)) {
      fail(schema, "replicate padding of dimension " + std::to_string(d) +
                       " needs at least one element to repeat");
    }
    if (!util::checked_add(out[d], begin, &out[d]) || !util::checked_add(out[d], end, &out[d])) {
      fail(schema, "pads " + shape_text(pads) + " overflow 64-bit sizes");
    }
  }
  int64_t count = 0;
  if (!util::element_count(out.data(), int(out.size()), &count)) {
    fail(schema, "the padded shape " + shape_text(out) + " overflows 64-bit sizes");
  }
  return {out};
}

// one_hot: index.shape + [num_classes].
Shapes one_hot_shape(const OpSchema& schema, const Shapes& in, const Attrs& attrs) {
  const int64_t classes = attrs.get_int("num_classes");
  if (classes < 0) fail(schema, "num_classes must be >= 0, not " + std::to_string(classes));
  if (in[0].size() + 1 > size_t(kMaxDims)) {
    fail(schema, "index may have at most " + std::to_string(kMaxDims - 1) + " dimensions");
  }
  Shape out = in[0];
  int64_t indices = 0;
  if (classes == 0 && util::element_count(out.data(), int(out.size()), &indices) && indices > 0) {
    fail(schema, "num_classes 0 leaves no valid index for " + std::to_string(indices) + " indices");
  }
  out.push_back(classes);
  int64_t count = 0;
  if (!util::element_count(out.data(), int(out.size()), &count)) {
    fail(schema, "the shape " + shape_text(out) + " overflows 64-bit sizes");
  }
  return {out};
}

// one_hot: index i32/i64, y any dtype of the operator set (the caller's).
void one_hot_dtypes(const OpSchema& schema, const DLTensor* inputs, size_t num_inputs,
                    const DLTensor* outputs, size_t num_outputs) {
  (void)num_inputs, (void)num_outputs;  // the dispatcher checked the arity
  if ((dtype_bit(inputs[0].dtype) & schema.dtypes) == 0) {
    fail(schema, "index must be i32 or i64, not " + dtype_name(inputs[0].dtype));
  }
  if ((dtype_bit(outputs[0].dtype) & kAll) == 0) {
    fail(schema, "does not produce " + dtype_name(outputs[0].dtype));
  }
}

std::vector<DLDataType> one_hot_outputs(const OpSchema& schema, DLDataType input) {
  (void)schema, (void)input;
  return {dtype::i64};
}

// scatter/scatter_add: x [..], index and src of one shape and x's rank, no
// larger than x off the axis; y has x's shape.
Shapes scatter_shape(const OpSchema& schema, const Shapes& in, const Attrs& attrs) {
  const Shape &x = in[0], &index = in[1], &src = in[2];
  if (x.empty()) fail(schema, "x must have at least 1 dimension");
  const int64_t axis = normalize_axis(schema, attrs.get_int("axis"), int64_t(x.size()));
  if (index.size() != x.size()) fail(schema, "index must have x's rank");
  if (src != index) {
    fail(schema, "src " + shape_text(src) + " must have index's shape " + shape_text(index));
  }
  for (size_t d = 0; d < x.size(); ++d) {
    if (int64_t(d) != axis && index[d] > x[d]) {
      fail(schema,
           "index " + shape_text(index) + " is larger than x " + shape_text(x) + " off the axis");
    }
  }
  return {x};
}

// arange: no inputs; the length ceil((end - start) / step) from the
// attributes, computed in f64 (0 when it is not positive).
Shapes arange_shape(const OpSchema& schema, const Shapes& in, const Attrs& attrs) {
  (void)in;
  const double start = attrs.get_float("start"), end = attrs.get_float("end"),
               step = attrs.get_float("step");
  if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step)) {
    fail(schema, "start, end and step must be finite");
  }
  if (step == 0) fail(schema, "step must not be 0");
  const double length = std::ceil((end - start) / step);
  if (!(length <= 0x1p62)) {
    fail(schema, "the length of [" + std::to_string(start) + ", " + std::to_string(end) +
                     ") in steps of " + std::to_string(step) + " overflows 64-bit sizes");
  }
  return {{length > 0 ? int64_t(length) : 0}};
}

}  // namespace

void add_layout_v2_schemas(std::vector<OpSchema>& s) {
  OpSchema flip{"flip",
                "layout",
                {{"x"}},
                {"y"},
                {ints_attr("axes", {})},
                kAll,
                DtypeRule::kSame,
                -1,
                "y = x reversed along axes (none given: every axis)"};
  flip.shape_fn = flip_shape;
  s.push_back(flip);
  OpSchema tril{"tril",
                "layout",
                {{"x"}},
                {"y"},
                {int_attr("diagonal", 0)},
                kAll,
                DtypeRule::kSame,
                -1,
                "y[..., i, j] = j - i <= diagonal ? x[..., i, j] : 0"};
  tril.shape_fn = triangle_shape;
  s.push_back(tril);
  OpSchema triu = tril;
  triu.name = "triu";
  triu.summary = "y[..., i, j] = j - i >= diagonal ? x[..., i, j] : 0";
  s.push_back(triu);
  OpSchema expand{"expand",
                  "layout",
                  {{"x"}},
                  {"y"},
                  {required("shape", kIntArray)},
                  kAll,
                  DtypeRule::kSame,
                  -1,
                  "y = x broadcast to shape (-1 keeps x's size), materialized"};
  expand.shape_fn = expand_shape;
  s.push_back(expand);
  OpSchema pad{
      "pad",
      "layout",
      {{"x"}},
      {"y"},
      {required("pads", kIntArray), string_attr("mode", "constant"), float_attr("value", 0.0)},
      kAll,
      DtypeRule::kSame,
      -1,
      "y = x padded by pads (begins, then ends) with value, a reflection or the edge"};
  pad.shape_fn = pad_shape;
  s.push_back(pad);
  OpSchema one_hot{
      "one_hot",
      "creation",
      {{"index"}},
      {"y"},
      {required("num_classes", kInt)},
      kInts,
      DtypeRule::kCustom,
      0,  // index_input: the input is an index, not data
      "y[..., c] = index[...] == c (1 or 0 in y's dtype; i64 unless the caller picks)"};
  one_hot.shape_fn = one_hot_shape;
  one_hot.check_dtypes_fn = one_hot_dtypes;
  one_hot.output_dtypes_fn = one_hot_outputs;
  s.push_back(one_hot);
  OpSchema scatter{"scatter",
                   "layout",
                   {{"x"}, {"index"}, {"src"}},
                   {"y"},
                   {required("axis", kInt)},
                   kAll,
                   DtypeRule::kIndexed,
                   1,
                   "y = x, then y[p with p[axis] = index[p]] = src[p] (the last along axis wins)"};
  scatter.shape_fn = scatter_shape;
  s.push_back(scatter);
  OpSchema scatter_add = scatter;
  scatter_add.name = "scatter_add";
  scatter_add.dtypes = kNumbers;
  scatter_add.summary = "y = x, then y[p with p[axis] = index[p]] += src[p], in index order";
  s.push_back(scatter_add);
  OpSchema arange{"arange",
                  "creation",
                  {},
                  {"y"},
                  {float_attr("start", 0.0), required("end", kFloat), float_attr("step", 1.0)},
                  kNumbers,
                  DtypeRule::kSame,
                  -1,
                  "y[i] = start + i * step for i < ceil((end - start) / step); y's dtype is the "
                  "caller's"};
  arange.shape_fn = arange_shape;
  s.push_back(arange);
}

}  // namespace oar::ops::detail
