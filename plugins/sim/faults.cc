#include "faults.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <set>

#include "oar/sdk/plugin.hpp"

namespace oar::sim {
namespace {

// At most 64 bytes of what the user wrote, for messages.
std::string clip(const std::string& text) {
  return text.size() <= 64 ? text : text.substr(0, 64) + "...";
}

[[noreturn]] void bad(const std::string& message) {
  throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                        "OAR_SIM_FAULTS: " + message +
                            " (expected comma-separated key:value with keys alloc, kernel, copy "
                            "(probabilities in [0, 1]), lost_after, seed, device (integers))");
}

double parse_probability(const std::string& key, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  double p = std::strtod(value.c_str(), &end);
  bool plain = value.find_first_not_of("0123456789.eE+-") == std::string::npos;
  if (value.empty() || !plain || errno != 0 || end != value.c_str() + value.size() ||
      !(p >= 0 && p <= 1))
    bad("\"" + clip(value) + "\" is not a probability for " + key);
  return p;
}

uint64_t parse_count(const std::string& key, const std::string& value) {
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
    bad("\"" + clip(value) + "\" is not a non-negative integer for " + key);
  errno = 0;
  unsigned long long n = std::strtoull(value.c_str(), nullptr, 10);
  if (errno != 0) bad("\"" + clip(value) + "\" is too large for " + key);
  return n;
}

// A device index: device:4294967296 once meant device 0 (its low 31 bits).
int64_t parse_device(const std::string& value) {
  uint64_t index = parse_count("device", value);
  if (index > uint64_t(INT32_MAX)) bad("\"" + clip(value) + "\" is not a device index");
  return int64_t(index);
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

FaultConfig parse_faults(const std::string& text) {
  FaultConfig config;
  if (text.empty()) return config;
  std::set<std::string> seen;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t colon = item.find(':');
    if (colon == std::string::npos) bad("\"" + clip(item) + "\" has no ':'");
    std::string key = item.substr(0, colon);
    std::string value = item.substr(colon + 1);
    // A key given twice is a mistake whichever value was meant.
    if (!seen.insert(key).second) bad("\"" + clip(key) + "\" is given twice");
    if (key == "alloc")
      config.alloc = parse_probability(key, value);
    else if (key == "kernel")
      config.kernel = parse_probability(key, value);
    else if (key == "copy")
      config.copy = parse_probability(key, value);
    else if (key == "lost_after")
      config.lost_after = parse_count(key, value);
    else if (key == "seed")
      config.seed = parse_count(key, value);
    else if (key == "device")
      config.device = parse_device(value);
    else
      bad("unknown key \"" + clip(key) + "\"");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return config;
}

FaultInjector::FaultInjector(const FaultConfig& config, int32_t device_index)
    : config_(config),
      device_index_(device_index),
      state_(config.seed ^ (0xd1b54a32d192ed03ull * uint64_t(device_index + 1))) {
  if (config_.device >= 0 && config_.device != device_index) config_ = FaultConfig{};
}

bool FaultInjector::draw(double probability) {
  if (probability <= 0) return false;
  if (probability >= 1) return true;
  double u = double(splitmix64(state_) >> 11) * (1.0 / 9007199254740992.0);
  return u < probability;
}

void FaultInjector::on_allocate() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (lost_) {
    throw oar::sdk::Error(OAR_STATUS_UNAVAILABLE,
                          "sim device " + std::to_string(device_index_) + ": device lost");
  }
  if (draw(config_.alloc)) {
    throw oar::sdk::Error(OAR_STATUS_RESOURCE_EXHAUSTED,
                          "sim device " + std::to_string(device_index_) +
                              ": injected allocation failure (OAR_SIM_FAULTS alloc)");
  }
}

void FaultInjector::check_not_lost() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (lost_) {
    throw oar::sdk::Error(OAR_STATUS_UNAVAILABLE, "sim device " + std::to_string(device_index_) +
                                                      ": device lost (OAR_SIM_FAULTS lost_after:" +
                                                      std::to_string(config_.lost_after) + ")");
  }
}

void FaultInjector::on_operation(bool is_kernel, bool is_copy) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++operations_;
  if (config_.lost_after != 0 && operations_ > config_.lost_after) lost_ = true;
  if (lost_) {
    throw oar::sdk::Error(OAR_STATUS_UNAVAILABLE, "sim device " + std::to_string(device_index_) +
                                                      ": device lost (OAR_SIM_FAULTS lost_after:" +
                                                      std::to_string(config_.lost_after) + ")");
  }
  if (is_kernel && draw(config_.kernel)) {
    throw oar::sdk::Error(OAR_STATUS_INTERNAL,
                          "sim device " + std::to_string(device_index_) +
                              ": injected kernel failure (OAR_SIM_FAULTS kernel)");
  }
  if (is_copy && draw(config_.copy)) {
    throw oar::sdk::Error(OAR_STATUS_DATA_LOSS,
                          "sim device " + std::to_string(device_index_) +
                              ": injected copy failure (OAR_SIM_FAULTS copy)");
  }
}

}  // namespace oar::sim
