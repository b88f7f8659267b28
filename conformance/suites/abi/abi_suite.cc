// The ABI suite: lifecycle, memory in every kind and copy direction, stream
// and event ordering, host callbacks, timing, and every documented error code
// (docs/abi.md), selected by the device's capabilities.
#include "conformance/suites/abi/abi_util.h"
#include "core/loader/plugin.h"

namespace oar::conformance {
namespace abi {

void add(Registry& registry, const std::string& topic, const std::string& name,
         std::function<void(TestContext&)> body) {
  registry.add({"abi/" + topic + "/" + name, "abi", "", "", "abi/" + topic, std::move(body)});
}

const char* feature_name(uint32_t feature) {
  switch (feature) {
    case OAR_DEVICE_FEATURE_TIMING_EVENTS:
      return "OAR_DEVICE_FEATURE_TIMING_EVENTS";
    case OAR_DEVICE_FEATURE_PEER_ACCESS:
      return "OAR_DEVICE_FEATURE_PEER_ACCESS";
    case OAR_DEVICE_FEATURE_COLLECTIVES:
      return "OAR_DEVICE_FEATURE_COLLECTIVES";
    case OAR_DEVICE_FEATURE_ASYNC_COPIES:
      return "OAR_DEVICE_FEATURE_ASYNC_COPIES";
    case OAR_DEVICE_FEATURE_HOST_CALLBACKS:
      return "OAR_DEVICE_FEATURE_HOST_CALLBACKS";
    default:
      return "an unknown feature";
  }
}

void require_feature(const Device& device, uint32_t feature) {
  if (!device.has_feature(feature)) {
    skip(std::string("the device does not list ") + feature_name(feature));
  }
}

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case OAR_MEMORY_KIND_DEVICE:
      return "device";
    case OAR_MEMORY_KIND_HOST_PINNED:
      return "host_pinned";
    case OAR_MEMORY_KIND_UNIFIED:
      return "unified";
    default:
      return "unknown";
  }
}

std::vector<uint32_t> listed_kinds(const oar_device_properties_t& properties) {
  std::vector<uint32_t> kinds;
  for (uint32_t kind :
       {OAR_MEMORY_KIND_DEVICE, OAR_MEMORY_KIND_HOST_PINNED, OAR_MEMORY_KIND_UNIFIED}) {
    if (properties.memory_kinds & kind) kinds.push_back(kind);
  }
  return kinds;
}

Gate::Gate(Stream& stream) {
  require_feature(stream.device(), OAR_DEVICE_FEATURE_HOST_CALLBACKS);
  auto released = std::make_shared<std::shared_future<void>>(promise_.get_future().share());
  stream.add_callback([released](oar_status_t) { released->wait(); });
}

void Gate::release() {
  if (released_) return;
  released_ = true;
  promise_.set_value();
}

std::string expect_status(Device& device, oar_status_t got, oar_status_t want,
                          const std::string& call) {
  if (got != want) {
    std::string message;
    if (got != OAR_STATUS_OK) message = expect_status(device, got, got, call);
    fail(call + " returned " + status_name(got) + (message.empty() ? "" : " (" + message + ")") +
         "; docs/abi.md documents " + status_name(want));
  }
  if (want == OAR_STATUS_OK) return {};
  std::string message;
  try {
    device.plugin().fail(got, call.c_str());
  } catch (const Error& e) {
    message = e.message();
  }
  if (message.find("(the plugin reported no message)") != std::string::npos) {
    fail(call + " failed with " + status_name(got) +
         " but reported no message through report_error (policy P8)");
  }
  return message;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = uint8_t((i + seed) % 251);
  return bytes;
}

void expect_bytes(const std::string& what, const std::vector<uint8_t>& got,
                  const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) {
    fail(what + ": " + std::to_string(got.size()) + " bytes, expected " +
         std::to_string(want.size()));
  }
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && wrong++ == 0) first = i;
  }
  if (wrong == 0) return;
  fail(what + ": " + std::to_string(wrong) + " of " + std::to_string(got.size()) +
       " bytes differ; first at byte " + std::to_string(first) + ": got " +
       std::to_string(got[first]) + ", expected " + std::to_string(want[first]));
}

}  // namespace abi

void register_abi_suite(Registry& registry, const oar_device_properties_t& properties) {
  abi::register_lifecycle_tests(registry, properties);
  abi::register_memory_tests(registry, properties);
  abi::register_ordering_tests(registry, properties);
  abi::register_error_tests(registry, properties);
}

}  // namespace oar::conformance
