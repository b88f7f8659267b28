// The schema table's building blocks, shared by schema.cc (operator set v1)
// and the schema_<part>.cc files that add operators in groups. Private to the
// build: plugins and frameworks see only include/oar/ops.hpp.
#pragma once

#include <string>
#include <vector>

#include "oar/ops.hpp"

namespace oar::ops::detail {

using Shape = std::vector<int64_t>;

constexpr int32_t kInt = OAR_ATTR_TYPE_INT;
constexpr int32_t kFloat = OAR_ATTR_TYPE_FLOAT;
constexpr int32_t kBoolAttr = OAR_ATTR_TYPE_BOOL;
constexpr int32_t kString = OAR_ATTR_TYPE_STRING;
constexpr int32_t kIntArray = OAR_ATTR_TYPE_INT_ARRAY;

inline AttrSpec required(const char* name, int32_t type) {
  AttrSpec spec{name, type};
  spec.required = true;
  return spec;
}
inline AttrSpec int_attr(const char* name, int64_t value) {
  AttrSpec spec{name, kInt};
  spec.default_int = value;
  return spec;
}
inline AttrSpec float_attr(const char* name, double value) {
  AttrSpec spec{name, kFloat};
  spec.default_float = value;
  return spec;
}
inline AttrSpec bool_attr(const char* name, bool value) {
  AttrSpec spec{name, kBoolAttr};
  spec.default_bool = value;
  return spec;
}
inline AttrSpec string_attr(const char* name, const char* value) {
  AttrSpec spec{name, kString};
  spec.default_string = value;
  return spec;
}
inline AttrSpec ints_attr(const char* name, std::vector<int64_t> value) {
  AttrSpec spec{name, kIntArray};
  spec.default_ints = std::move(value);
  return spec;
}

inline OpSchema unary(const char* name, uint32_t dtypes, const char* summary) {
  return OpSchema{name, "unary", {{"x"}}, {"y"}, {}, dtypes, DtypeRule::kSame, -1, summary};
}
inline OpSchema binary(const char* name, uint32_t dtypes, const char* summary) {
  return OpSchema{name, "binary", {{"a"}, {"b"}}, {"y"}, {}, dtypes, DtypeRule::kSame, -1, summary};
}
inline OpSchema compare(const char* name, uint32_t dtypes, const char* summary) {
  return OpSchema{name, "compare", {{"a"}, {"b"}}, {"y"}, {}, dtypes, DtypeRule::kCompare,
                  -1,   summary};
}
inline OpSchema reduction(const char* name, uint32_t dtypes, const char* summary) {
  return OpSchema{name,
                  "reduction",
                  {{"x"}},
                  {"y"},
                  {ints_attr("axes", {}), bool_attr("keepdim", false)},
                  dtypes,
                  DtypeRule::kSame,
                  -1,
                  summary};
}
inline OpSchema arg_reduction(const char* name, const char* summary) {
  return OpSchema{name,
                  "reduction",
                  {{"x"}},
                  {"index"},
                  {required("axis", kInt), bool_attr("keepdim", false)},
                  kNumbers,
                  DtypeRule::kArgReduce,
                  -1,
                  summary};
}

// Shape-rule helpers (schema.cc). Each throws oar::Error INVALID_ARGUMENT
// naming the operator.
[[noreturn]] void fail(const OpSchema& schema, const std::string& what);
std::string shape_text(const Shape& shape);
Shape shape_of(const DLTensor& t);
int64_t normalize_axis(const OpSchema& schema, int64_t axis, int64_t ndim);
Shape broadcast(const OpSchema& schema, const std::vector<Shape>& shapes);
Shape reduce_shape(const OpSchema& schema, const Shape& x, std::vector<int64_t> axes, bool keepdim);
void expect_rank(const OpSchema& schema, const Shape& s, size_t rank, const char* what);
int64_t pool_or_conv_extent(const OpSchema& schema, int64_t in, int64_t kernel, int64_t stride,
                            int64_t pad, int64_t dilation);

// The groups of operators added after operator set v1, one file each
// (schema_<part>.cc), appended to the table in this order. docs/ops.md has a
// section per group.
void add_grad_schemas(std::vector<OpSchema>& s);       // pointwise, row and index gradients
void add_nn_grad_schemas(std::vector<OpSchema>& s);    // norm, conv, pool, attention gradients
void add_optimizer_schemas(std::vector<OpSchema>& s);  // fused optimizer steps, norm clip
void add_layout_v2_schemas(std::vector<OpSchema>& s);  // pad, flip, tril/triu, arange, ...
void add_math_v2_schemas(std::vector<OpSchema>& s);    // sort/topk, scans, logical, bitwise, ...

}  // namespace oar::ops::detail
