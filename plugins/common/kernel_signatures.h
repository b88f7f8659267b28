// Kernel registration as every plugin does it: one kernel entry point per
// operator, registered once for each dtype signature it serves.
#pragma once

#include <cstdint>
#include <vector>

#include "oar/ops.hpp"
#include "oar/sdk/plugin.hpp"

namespace oar::plugin {

// Input dtypes then output dtypes, as the schema orders the tensors.
using Signature = std::vector<DLDataType>;

// The schema of |op|; throws INTERNAL naming |plugin| for an operator outside
// the set (a plugin built against another operator set).
const ops::OpSchema& schema_of(const char* op, const char* plugin);

// Registers |fn| (with |flags| and |user_data|) for |schema|'s operator once
// per signature; the schema says how many of its tensors are outputs.
void register_signatures(const oar::sdk::KernelRegistrar& registrar, const ops::OpSchema& schema,
                         const std::vector<Signature>& signatures, oar_kernel_fn fn, uint32_t flags,
                         void* user_data);

// One signature per dtype in |bits|, that dtype for all |inputs| + |outputs|
// tensors (the schema's kSame rule).
std::vector<Signature> same_signatures(uint32_t bits, size_t inputs, size_t outputs);

}  // namespace oar::plugin
