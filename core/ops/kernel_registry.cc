#include "core/ops/kernel_registry.h"

#include <mutex>
#include <unordered_map>

namespace oar {

namespace detail {
namespace {

struct OpTable {
  std::mutex mutex;
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<const std::string*> names;
};

OpTable& op_table() {
  static OpTable* table = new OpTable();  // never destroyed: ids outlive static teardown
  return *table;
}

bool same_dtypes(const KernelEntry& entry, const DLTensor* inputs, size_t num_inputs,
                 const DLTensor* outputs, size_t num_outputs) {
  if (entry.num_inputs != num_inputs || entry.num_outputs != num_outputs) return false;
  for (size_t i = 0; i < num_inputs; ++i) {
    if (entry.dtypes[i] != inputs[i].dtype) return false;
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    if (entry.dtypes[num_inputs + i] != outputs[i].dtype) return false;
  }
  return true;
}

oar_status_t register_from_plugin(void* context, const oar_kernel_def_t* def) {
  auto* registry = static_cast<KernelRegistry*>(context);
  if (def == nullptr || def->struct_size < OAR_KERNEL_DEF_STRUCT_SIZE) {
    return OAR_STATUS_INVALID_ARGUMENT;
  }
  return registry->add(*def).code();
}

}  // namespace

uint32_t intern_op(std::string_view name) {
  OpTable& table = op_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto [it, inserted] = table.ids.emplace(std::string(name), uint32_t(table.names.size()));
  if (inserted) table.names.push_back(&it->first);
  return it->second;
}

const std::string& op_name(uint32_t op) {
  OpTable& table = op_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  return *table.names.at(op);
}

std::string signature_text(const DLDataType* dtypes, size_t num_inputs, size_t num_outputs) {
  std::string text = "(";
  for (size_t i = 0; i < num_inputs + num_outputs; ++i) {
    if (i == num_inputs)
      text += ") -> (";
    else if (i > 0)
      text += ", ";
    text += dtype_name(dtypes[i]);
  }
  if (num_inputs + num_outputs == num_inputs) text += ") -> (";
  return text + ")";
}

Status KernelRegistry::add(const oar_kernel_def_t& def) {
  if (def.op_name == nullptr || def.fn == nullptr) {
    return Status(OAR_STATUS_INVALID_ARGUMENT, "a kernel needs an op_name and a fn");
  }
  if (def.num_inputs + def.num_outputs > 0 && def.dtypes == nullptr) {
    return Status(OAR_STATUS_INVALID_ARGUMENT,
                  std::string("kernel for ") + def.op_name + " has tensors but no dtypes");
  }
  KernelEntry entry;
  entry.op = intern_op(def.op_name);
  entry.dtypes.assign(def.dtypes, def.dtypes + def.num_inputs + def.num_outputs);
  entry.num_inputs = uint32_t(def.num_inputs);
  entry.num_outputs = uint32_t(def.num_outputs);
  entry.flags = def.flags;
  entry.fn = def.fn;
  entry.user_data = def.user_data;

  SignatureKey key(entry.op);
  key.add_count(entry.num_inputs, entry.num_outputs);
  for (DLDataType t : entry.dtypes) key.add(t);
  auto [it, inserted] = kernels_.emplace(key.value(), entry);
  if (!inserted) {
    std::string what = std::string(def.op_name) + " " +
                       signature_text(entry.dtypes.data(), entry.num_inputs, entry.num_outputs);
    if (it->second.op == entry.op && it->second.dtypes.size() == entry.dtypes.size()) {
      return Status(OAR_STATUS_ALREADY_EXISTS, "a kernel for " + what + " is already registered");
    }
    return Status(OAR_STATUS_INTERNAL, "kernel key collision registering " + what);
  }
  return Status();
}

const KernelEntry* KernelRegistry::find(uint64_t key, uint32_t op, const DLTensor* inputs,
                                        size_t num_inputs, const DLTensor* outputs,
                                        size_t num_outputs) const {
  auto it = kernels_.find(key);
  if (it == kernels_.end()) return nullptr;
  const KernelEntry& entry = it->second;
  if (entry.op != op || !same_dtypes(entry, inputs, num_inputs, outputs, num_outputs)) {
    return nullptr;
  }
  return &entry;
}

const KernelEntry* KernelRegistry::find(uint32_t op, const DLDataType* dtypes, size_t num_inputs,
                                        size_t num_outputs) const {
  SignatureKey key(op);
  key.add_count(uint32_t(num_inputs), uint32_t(num_outputs));
  for (size_t i = 0; i < num_inputs + num_outputs; ++i) key.add(dtypes[i]);
  auto it = kernels_.find(key.value());
  if (it == kernels_.end()) return nullptr;
  const KernelEntry& entry = it->second;
  if (entry.op != op || entry.num_inputs != num_inputs || entry.num_outputs != num_outputs) {
    return nullptr;
  }
  for (size_t i = 0; i < num_inputs + num_outputs; ++i) {
    if (entry.dtypes[i] != dtypes[i]) return nullptr;
  }
  return &entry;
}

std::vector<std::string> KernelRegistry::signatures(uint32_t op) const {
  std::vector<std::string> result;
  for (const auto& [key, entry] : kernels_) {
    if (entry.op == op) {
      result.push_back(signature_text(entry.dtypes.data(), entry.num_inputs, entry.num_outputs));
    }
  }
  return result;
}

std::vector<const KernelEntry*> KernelRegistry::entries(uint32_t op) const {
  std::vector<const KernelEntry*> result;
  for (const auto& [key, entry] : kernels_) {
    if (entry.op == op) result.push_back(&entry);
  }
  return result;
}

oar_kernel_registrar_t KernelRegistry::registrar() {
  oar_kernel_registrar_t registrar{};
  registrar.struct_size = OAR_KERNEL_REGISTRAR_STRUCT_SIZE;
  registrar.context = this;
  registrar.register_kernel = &register_from_plugin;
  return registrar;
}

}  // namespace detail
}  // namespace oar
