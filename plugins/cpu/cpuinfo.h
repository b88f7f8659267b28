// What the host's processor is, for the cpu device's properties: parsed from
// the text of /proc/cpuinfo (x86-64 and aarch64 print different keys) and,
// on aarch64, from the kernel's hardware capability bits (AT_HWCAP,
// AT_HWCAP2), which are what /proc/cpuinfo's "Features" line prints. Pure
// functions of their inputs, so that tests feed them other machines' texts.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "oar/device.h"

namespace oar::cpu {

struct CpuInfo {
  std::string vendor;  // "GenuineIntel", "ARM", "HiSilicon", ... ("" if unknown)
  std::string model;   // "Intel(R) Xeon(R) ...", "Neoverse-N1", ... ("" if unknown)
  // aarch64 only: MIDR_EL1's implementer and part numbers (-1 if absent).
  int implementer = -1;
  int part = -1;
  // The feature names as the kernel prints them ("asimd", "fphp", "sve", or
  // x86's "avx2", "f16c"); empty if the text has none.
  std::set<std::string> features;
};

// The first processor's entry of a /proc/cpuinfo text. Keys it reads:
// x86-64 "vendor_id", "model name", "flags"; aarch64 "CPU implementer",
// "CPU part", "Features" (and a board's "Model", which names the machine
// when the part is unknown).
CpuInfo parse_cpuinfo(std::string_view text);

// The aarch64 names of the bits of AT_HWCAP and AT_HWCAP2 (Linux's
// arch/arm64 hwcap numbering), in the kernel's order.
std::set<std::string> aarch64_hwcap_features(uint64_t hwcap, uint64_t hwcap2);

// Fills vendor and model from a MIDR_EL1 value (implementer in bits 31:24,
// part in bits 15:4), for when /proc/cpuinfo does not describe the processor
// the program runs on (user-mode emulation shows the host's).
void set_from_midr(CpuInfo& info, uint64_t midr);

// The device name: "CPU: <model>", and on aarch64 the features that decide
// how kernels compute, e.g. "CPU: ARM Neoverse-V1 (aarch64: asimd fphp
// asimdhp asimddp i8mm bf16 sve)".
std::string device_name(const CpuInfo& info, bool aarch64);

// The oar_dtype_support_e bits of the arithmetic the processor executes
// itself (oar_device_properties_t.native_dtypes): f64 on every x86-64 and
// aarch64 core; f16 for aarch64's fphp and asimdhp (scalar and vector half
// precision) or x86's avx512_fp16 / amx_fp16; bf16 for aarch64's bf16 or
// x86's avx512_bf16 / amx_bf16; int8 dot products for aarch64's asimddp or
// x86's avx512_vnni / avx_vnni / amx_int8. Conversions alone (x86's f16c,
// aarch64's fcvt, which every core has) are not arithmetic.
uint32_t native_dtypes(const CpuInfo& info, bool aarch64);

// The host's CpuInfo: /proc/cpuinfo, and on aarch64 the hardware capability
// bits and MIDR_EL1 where the text does not describe an aarch64 processor.
CpuInfo host_cpuinfo();

}  // namespace oar::cpu
