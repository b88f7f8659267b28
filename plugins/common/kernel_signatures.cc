#include "kernel_signatures.h"

#include <string>

namespace oar::plugin {

const ops::OpSchema& schema_of(const char* op, const char* plugin) {
  const ops::OpSchema* schema = ops::find_schema(op);
  oar::sdk::require(schema != nullptr, OAR_STATUS_INTERNAL,
                    std::string(plugin) + " kernel for unknown operator " + op);
  return *schema;
}

void register_signatures(const oar::sdk::KernelRegistrar& registrar, const ops::OpSchema& schema,
                         const std::vector<Signature>& signatures, oar_kernel_fn fn, uint32_t flags,
                         void* user_data) {
  const size_t outputs = schema.outputs.size();
  for (const Signature& signature : signatures) {
    registrar.add_signature(schema.name, signature.data(), signature.size() - outputs, outputs, fn,
                            flags, user_data);
  }
}

std::vector<Signature> same_signatures(uint32_t bits, size_t inputs, size_t outputs) {
  std::vector<Signature> result;
  for (DLDataType t : ops::dtypes_in(bits)) result.emplace_back(inputs + outputs, t);
  return result;
}

}  // namespace oar::plugin
