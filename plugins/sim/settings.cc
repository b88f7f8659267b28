#include "settings.h"

#include <stdlib.h>

#include <cerrno>
#include <cmath>
#include <cstdio>

#include "oar/sdk/plugin.hpp"

namespace oar::sim {
namespace {

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

// A plain decimal number ("2", "0.5", "1e3") in [low, high]; not "inf",
// "nan", hex or a number with spaces around it.
double parse_number(const char* name, const std::string& text, double low, double high) {
  if (text.empty()) return 0;
  bool plain = text.find_first_not_of("0123456789.eE+-") == std::string::npos;
  errno = 0;
  char* end = nullptr;
  double value = plain ? std::strtod(text.c_str(), &end) : 0;
  oar::sdk::require(plain && errno == 0 && end == text.c_str() + text.size() &&
                        std::isfinite(value) && value >= low && value <= high,
                    OAR_STATUS_INVALID_ARGUMENT,
                    std::string(name) + "=\"" + text.substr(0, 64) + "\" is not a number in [" +
                        number_text(low) + ", " + number_text(high) + "]");
  return value;
}

}  // namespace

std::string environment(const char* name) {
  const char* value = secure_getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

uint64_t Timing::copy_ns(uint64_t bytes) const {
  if (copy_bytes_per_ns <= 0) return 0;
  double ns = double(bytes) / copy_bytes_per_ns;
  return ns >= double(kMaxModelledNs) ? kMaxModelledNs : static_cast<uint64_t>(ns);
}

Timing parse_timing(const std::string& copy_gbps, const std::string& launch_us) {
  Timing timing;
  double gbps = parse_number("OAR_SIM_COPY_GBPS", copy_gbps, 0, 1e6);
  // A rate so small that every copy takes the longest modelled time means a
  // typo more likely than a wish; 0 is "no model".
  oar::sdk::require(gbps == 0 || gbps >= 1e-6, OAR_STATUS_INVALID_ARGUMENT,
                    "OAR_SIM_COPY_GBPS=\"" + copy_gbps.substr(0, 64) +
                        "\" is below 1e-6 GB/s (0 turns the copy model off)");
  timing.copy_bytes_per_ns = gbps;
  double us = parse_number("OAR_SIM_LAUNCH_US", launch_us, 0, double(kMaxModelledNs) / 1000);
  timing.launch_ns = static_cast<uint64_t>(std::llround(us * 1000));
  return timing;
}

}  // namespace oar::sim
