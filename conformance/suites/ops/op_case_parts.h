// The case tables' building blocks, shared by op_cases.cc (operator set v1)
// and the cases_<part>.cc files of the later groups of operators (the groups
// of core/ops/schema_parts.h). Private to the operator suite.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "conformance/suites/ops/op_cases.h"

namespace oar::conformance::cases {

using Shape = std::vector<int64_t>;

inline constexpr int64_t kLargeElements = int64_t(1) << 20;  // "large" elementwise cases
inline const Shape kLarge1d = {kLargeElements};
inline const Shape kLargeRows = {1024, 1024};
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

bool in_set(const std::string& name, std::initializer_list<const char*> names);
// An input drawn from |domain| (|transposed|: a non-contiguous view).
InputSpec spec(Shape shape, DLDataType dtype, Domain domain, bool transposed = false);
// An input with the given values (rounded to |dtype|), or raw bit patterns.
InputSpec explicit_values(Shape shape, DLDataType dtype, std::vector<double> values);
InputSpec bit_values(DLDataType dtype, std::vector<uint64_t> bits);
OpCase make_case(std::string name, std::vector<InputSpec> inputs,
                 std::vector<AttrValue> attrs = {});
// The v1 binary and compare shape cases: scalars, empty, odd and prime
// sizes, broadcasting either way, non-contiguous operands, one large case.
struct BinaryShape {
  const char* name;
  Shape a;
  bool a_transposed;
  Shape b;
  bool b_transposed;
};
const std::vector<BinaryShape>& binary_shapes();
// The safe input domain of a v1 operator's data inputs.
Domain domain_for(const std::string& op, DLDataType dtype);

// Each group of operators after set v1 (cases_<part>.cc): the cases of
// |schema| for data dtype |dtype| (|claimed|: the device's dtype bits), or
// nullopt for an operator outside the group; likewise its comparison family.
using PartCases = std::optional<std::vector<OpCase>> (*)(const ops::OpSchema& schema,
                                                         DLDataType dtype, uint32_t claimed);
using PartFamily = std::optional<Family> (*)(const ops::OpSchema& schema);
std::optional<std::vector<OpCase>> grad_cases(const ops::OpSchema& schema, DLDataType dtype,
                                              uint32_t claimed);
std::optional<Family> grad_family(const ops::OpSchema& schema);
std::optional<std::vector<OpCase>> nn_grad_cases(const ops::OpSchema& schema, DLDataType dtype,
                                                 uint32_t claimed);
std::optional<Family> nn_grad_family(const ops::OpSchema& schema);
std::optional<std::vector<OpCase>> optimizer_cases(const ops::OpSchema& schema, DLDataType dtype,
                                                   uint32_t claimed);
std::optional<Family> optimizer_family(const ops::OpSchema& schema);
std::optional<std::vector<OpCase>> layout_v2_cases(const ops::OpSchema& schema, DLDataType dtype,
                                                   uint32_t claimed);
std::optional<Family> layout_v2_family(const ops::OpSchema& schema);
std::optional<std::vector<OpCase>> math_v2_cases(const ops::OpSchema& schema, DLDataType dtype,
                                                 uint32_t claimed);
std::optional<Family> math_v2_family(const ops::OpSchema& schema);

}  // namespace oar::conformance::cases
