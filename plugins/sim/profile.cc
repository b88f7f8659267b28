#include "profile.h"

#include <thread>

#include "oar/sdk/plugin.hpp"

namespace oar::sim {
namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;
constexpr uint64_t kGiB = uint64_t(1) << 30;

oar_device_properties_t base(const char* name, int32_t kind) {
  oar_device_properties_t p{};
  p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
  oar::sdk::copy_text(p.name, name);
  oar::sdk::copy_text(p.vendor, "OAR project (simulated)");
  oar::sdk::copy_text(p.driver_version, "sim 0.1.0");
  p.kind = kind;
  // Not kDLCPU: a DLPack consumer must not dereference sim memory.
  p.dlpack_device_type = kDLExtDev;
  p.memory_kinds = OAR_MEMORY_KIND_DEVICE;
  p.features = OAR_DEVICE_FEATURE_TIMING_EVENTS | OAR_DEVICE_FEATURE_ASYNC_COPIES |
               OAR_DEVICE_FEATURE_HOST_CALLBACKS;
  unsigned threads = std::thread::hardware_concurrency();
  p.compute_units = threads == 0 ? 1 : threads;
  return p;
}

}  // namespace

const char* profile_names() { return "gpu, npu, tiny"; }

Profile make_profile(const std::string& name) {
  Profile profile;
  profile.name = name.empty() ? "gpu" : name;
  if (profile.name == "gpu") {
    // A large-memory discrete GPU; two of them, for peer copies.
    profile.devices = 2;
    profile.properties = base("OAR sim GPU-like device", OAR_DEVICE_KIND_GPU);
    profile.properties.total_memory = 16 * kGiB;
    profile.properties.max_allocation_size = 16 * kGiB;
    profile.properties.min_alignment = 256;
    profile.properties.dtypes =
        OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16 | OAR_DTYPE_SUPPORT_F64;
    profile.properties.features |= OAR_DEVICE_FEATURE_PEER_ACCESS;
  } else if (profile.name == "npu") {
    // An NPU: no f64, f16/bf16 as its fast types, small allocations.
    profile.devices = 1;
    profile.properties = base("OAR sim NPU-like device", OAR_DEVICE_KIND_NPU);
    profile.properties.total_memory = 4 * kGiB;
    profile.properties.max_allocation_size = 256 * kMiB;
    profile.properties.min_alignment = 64;
    profile.properties.dtypes = OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16;
  } else if (profile.name == "tiny") {
    // So little memory that the caching allocator's OOM path is easy to reach.
    profile.devices = 1;
    profile.properties = base("OAR sim tiny-memory device", OAR_DEVICE_KIND_ACCELERATOR);
    profile.properties.total_memory = 128 * kMiB;
    profile.properties.max_allocation_size = 128 * kMiB;
    profile.properties.min_alignment = 256;
    profile.properties.dtypes =
        OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16 | OAR_DTYPE_SUPPORT_F64;
  } else {
    throw oar::sdk::Error(
        OAR_STATUS_INVALID_ARGUMENT,
        "OAR_SIM_PROFILE=\"" + name + "\" is not a sim profile; valid: " + profile_names());
  }
  // The emulated hardware computes in every type its profile claims.
  profile.properties.native_dtypes = profile.properties.dtypes;
  return profile;
}

}  // namespace oar::sim
