// Execution order and concurrency of operator kernels (docs/conformance.md,
// "Execution order and concurrency"): each operator x dtype runs once behind
// work held on its stream, and on several streams at once.
#pragma once

#include <string>
#include <vector>

#include "conformance/harness/test.h"
#include "conformance/suites/ops/op_runner.h"

namespace oar::conformance {

// Registers "<prefix>behind_a_gate" and "<prefix>concurrent_streams" in group
// |group| for |schema| at dtype |dtype|, run on one case picked from |cases|
// (generated inputs, nothing empty, moderate size). Registers nothing when no
// case qualifies.
void register_execution_tests(Registry& registry, const ops::OpSchema& schema,
                              const std::string& dtype, const std::string& prefix,
                              const std::string& group, const std::vector<OpCase>& cases,
                              Family family);

}  // namespace oar::conformance
