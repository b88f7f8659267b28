// The operator suite's case tables: for each schema operator and dtype, the
// shape cases (scalar, empty, broadcast, non-contiguous, odd and prime sizes,
// large), attribute variants and special values, with inputs in the
// operator's safe domain.
#pragma once

#include <vector>

#include "conformance/harness/test.h"
#include "conformance/suites/ops/op_runner.h"

namespace oar::conformance {

// How |schema|'s results are compared (see compare.h).
Family op_family(const ops::OpSchema& schema);

// Every case of |schema| for data dtype |dtype|; |claimed| are the dtype bits
// the device claims (cast targets).
std::vector<OpCase> op_cases(const ops::OpSchema& schema, DLDataType dtype, uint32_t claimed);

// The out-of-range index cases of the indexing operators (index_errors.cc).
void register_index_error_tests(Registry& registry, const oar_device_properties_t& properties);

// The numerics a tolerance cannot see (numerics.cc): correctly rounded
// results, rounding bias, the ends of the range, large common offsets.
void register_numerics_tests(Registry& registry, const oar_device_properties_t& properties);

}  // namespace oar::conformance
