// The kernels one plugin registered, looked up in O(1) by (operator, dtypes).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/util/status.h"
#include "oar/dtype.hpp"
#include "oar/kernel.h"

namespace oar::detail {

// Interned operator names: dispatch compares small integers, not strings.
uint32_t intern_op(std::string_view name);
const std::string& op_name(uint32_t op);

struct KernelEntry {
  uint32_t op = 0;
  std::vector<DLDataType> dtypes;  // inputs then outputs
  uint32_t num_inputs = 0;
  uint32_t num_outputs = 0;
  uint32_t flags = 0;
  oar_kernel_fn fn = nullptr;
  void* user_data = nullptr;
};

// Hashes an operator and the dtypes of its tensors into one lookup key.
class SignatureKey {
 public:
  explicit SignatureKey(uint32_t op) : hash_(0xcbf29ce484222325ull ^ op) {}
  void add(DLDataType dtype) {
    hash_ ^= (uint64_t(dtype.code) << 24) | (uint64_t(dtype.bits) << 8) | 0x5bu;
    hash_ *= 0x100000001b3ull;
  }
  void add_count(uint32_t inputs, uint32_t outputs) {
    hash_ ^= (uint64_t(inputs) << 32) | outputs;
    hash_ *= 0x100000001b3ull;
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_;
};

class KernelRegistry {
 public:
  Status add(const oar_kernel_def_t& def);
  // The kernel for exactly these dtypes, or nullptr.
  const KernelEntry* find(uint64_t key, uint32_t op, const DLTensor* inputs, size_t num_inputs,
                          const DLTensor* outputs, size_t num_outputs) const;
  // The kernel for |op| over |dtypes| (inputs then outputs), or nullptr.
  const KernelEntry* find(uint32_t op, const DLDataType* dtypes, size_t num_inputs,
                          size_t num_outputs) const;
  // Every signature registered for |op|, as "(f32, f32) -> (f32)", for messages.
  std::vector<std::string> signatures(uint32_t op) const;
  // The registered kernels of |op| (pointers into the registry).
  std::vector<const KernelEntry*> entries(uint32_t op) const;
  size_t size() const { return kernels_.size(); }

  // The C registrar that feeds add().
  oar_kernel_registrar_t registrar();

 private:
  std::unordered_map<uint64_t, KernelEntry> kernels_;
};

std::string signature_text(const DLDataType* dtypes, size_t num_inputs, size_t num_outputs);

}  // namespace oar::detail
