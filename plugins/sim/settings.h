// The sim plugin's environment: its variables are read with secure_getenv
// (ignored in setuid processes, as the core does), and the modelled timing is
// parsed strictly, so that no value reaches an undefined conversion.
#pragma once

#include <cstdint>
#include <string>

namespace oar::sim {

// The longest one copy or launch is modelled to take: one minute.
inline constexpr uint64_t kMaxModelledNs = uint64_t(60) * 1000 * 1000 * 1000;

// The value of |name|, or "" when unset or the process is setuid.
std::string environment(const char* name);

// What OAR_SIM_COPY_GBPS and OAR_SIM_LAUNCH_US model.
struct Timing {
  double copy_bytes_per_ns = 0;  // 1 GB/s is 1 byte per ns; 0: copies take no modelled time
  uint64_t launch_ns = 0;        // every kernel launch

  // The modelled time of a |bytes| copy, at most kMaxModelledNs.
  uint64_t copy_ns(uint64_t bytes) const;
};

// Parses the two variables' values ("" is 0). Throws oar::sdk::Error
// (INVALID_ARGUMENT, naming the variable) for anything else than a plain
// decimal number: OAR_SIM_COPY_GBPS 0 or in [1e-6, 1e6], OAR_SIM_LAUNCH_US in
// [0, 6e7] (a minute).
Timing parse_timing(const std::string& copy_gbps, const std::string& launch_us);

}  // namespace oar::sim
