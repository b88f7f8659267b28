// Helpers of the ABI suite: registration, capability checks, a gate that holds
// a stream's work back, status checks that also demand the plugin's message,
// and byte patterns.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "conformance/harness/test.h"

namespace oar::conformance::abi {

// Adds "abi/<topic>/<name>" to group "abi/<topic>".
void add(Registry& registry, const std::string& topic, const std::string& name,
         std::function<void(TestContext&)> body);

// Skips unless the device lists |feature| (an oar_device_feature_e bit).
void require_feature(const Device& device, uint32_t feature);
const char* feature_name(uint32_t feature);
// "device", "host_pinned", "unified".
const char* kind_name(uint32_t kind);
// Every memory kind the device lists, one bit each.
std::vector<uint32_t> listed_kinds(const oar_device_properties_t& properties);

// Holds |stream|'s later work behind a host callback until release() (or
// destruction). Requires OAR_DEVICE_FEATURE_HOST_CALLBACKS.
class Gate {
 public:
  explicit Gate(Stream& stream);
  ~Gate() { release(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void release();

 private:
  std::promise<void> promise_;
  bool released_ = false;
};

// Fails unless |got| is |want|. For a failure code it also demands the
// message the plugin must report with it (policy P8) and returns it.
std::string expect_status(Device& device, oar_status_t got, oar_status_t want,
                          const std::string& call);

// Bytes (i + seed) % 251, so that offsets show in the values.
std::vector<uint8_t> pattern(size_t n, uint8_t seed);
// Fails naming the first differing byte.
void expect_bytes(const std::string& what, const std::vector<uint8_t>& got,
                  const std::vector<uint8_t>& want);

// A handle value no plugin returns, to check that out-params stay unchanged.
template <typename Handle>
Handle sentinel() {
  return reinterpret_cast<Handle>(uintptr_t(0x5A5A5A50));
}

// Registration of each part of the suite.
void register_lifecycle_tests(Registry& registry, const oar_device_properties_t& properties);
void register_memory_tests(Registry& registry, const oar_device_properties_t& properties);
void register_ordering_tests(Registry& registry, const oar_device_properties_t& properties);
void register_error_tests(Registry& registry, const oar_device_properties_t& properties);

}  // namespace oar::conformance::abi
