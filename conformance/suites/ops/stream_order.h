// Execution order and concurrency of operator kernels (docs/conformance.md,
// "Execution order, concurrency and writes outside the outputs"): each
// operator x dtype runs behind work held on its stream, and on several
// streams at once.
#pragma once

#include <string>
#include <vector>

#include "conformance/harness/test.h"
#include "conformance/suites/ops/op_runner.h"

namespace oar::conformance {

// Registers "<prefix>behind_a_gate", "<prefix>behind_an_event" and
// "<prefix>concurrent_streams" in group |group| for |schema| at dtype |dtype|,
// run on one case picked from |cases| (generated, contiguous, non-empty
// inputs; at most 8192 input elements where possible). When no case
// qualifies they fail, naming the suite as the problem.
void register_execution_tests(Registry& registry, const ops::OpSchema& schema,
                              const std::string& dtype, const std::string& prefix,
                              const std::string& group, const std::vector<OpCase>& cases,
                              Family family);

}  // namespace oar::conformance
