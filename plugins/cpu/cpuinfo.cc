// The host's processor from /proc/cpuinfo and, on aarch64, its hardware
// capability bits. See cpuinfo.h.
#include "cpuinfo.h"

#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <sstream>
#include <utility>

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace oar::cpu {
namespace {

std::string_view trim(std::string_view s) {
  size_t start = s.find_first_not_of(" \t\r");
  if (start == std::string_view::npos) return {};
  size_t end = s.find_last_not_of(" \t\r");
  return s.substr(start, end - start + 1);
}

int parse_number(std::string_view text) {
  std::string s(trim(text));
  if (s.empty()) return -1;
  try {
    size_t used = 0;
    int value = std::stoi(s, &used, 0);  // "0x41", "0xd0c"
    return used == s.size() ? value : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

std::set<std::string> split_words(std::string_view text) {
  std::istringstream words{std::string(text)};
  return {std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
}

// MIDR_EL1 implementer codes (Arm ARM, "MIDR_EL1, Main ID Register").
const char* implementer_name(int implementer) {
  switch (implementer) {
    case 0x41:
      return "ARM";
    case 0x42:
      return "Broadcom";
    case 0x43:
      return "Cavium";
    case 0x46:
      return "Fujitsu";
    case 0x48:
      return "HiSilicon";
    case 0x4e:
      return "NVIDIA";
    case 0x50:
      return "APM";
    case 0x51:
      return "Qualcomm";
    case 0x61:
      return "Apple";
    case 0x6d:
      return "Microsoft";
    case 0x70:
      return "Phytium";
    case 0xc0:
      return "Ampere";
    default:
      return nullptr;
  }
}

// The cores of the aarch64 servers and boards OAR names (Kunpeng, Phytium,
// Graviton, Ampere, Raspberry Pi); others are named by their numbers.
const char* part_name(int implementer, int part) {
  static const struct {
    int implementer, part;
    const char* name;
  } kParts[] = {
      {0x41, 0xd03, "Cortex-A53"},  {0x41, 0xd07, "Cortex-A57"},  {0x41, 0xd08, "Cortex-A72"},
      {0x41, 0xd0b, "Cortex-A76"},  {0x41, 0xd0c, "Neoverse-N1"}, {0x41, 0xd40, "Neoverse-V1"},
      {0x41, 0xd49, "Neoverse-N2"}, {0x41, 0xd4f, "Neoverse-V2"}, {0x48, 0xd01, "Kunpeng-920"},
      {0x46, 0x001, "A64FX"},       {0x70, 0x662, "FTC662"},      {0x70, 0x663, "FTC663"},
      {0xc0, 0xac3, "Ampere-1"},    {0xc0, 0xac4, "Ampere-1a"},
  };
  for (const auto& p : kParts) {
    if (p.implementer == implementer && p.part == part) return p.name;
  }
  return nullptr;
}

std::string hex(int value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%0*x", digits, value);
  return buffer;
}

void name_from_ids(CpuInfo& info) {
  const char* vendor = implementer_name(info.implementer);
  info.vendor = vendor != nullptr ? vendor : "implementer " + hex(info.implementer, 2);
  const char* part = part_name(info.implementer, info.part);
  info.model = info.vendor + " " + (part != nullptr ? part : "part " + hex(info.part, 3));
}

}  // namespace

CpuInfo parse_cpuinfo(std::string_view text) {
  CpuInfo info;
  std::string board;  // a board's "Model" line (Raspberry Pi), at the end of the text
  bool first_processor = true;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = trim(line.substr(0, colon));
    std::string_view value = trim(line.substr(colon + 1));
    if (key == "processor") {
      // Keys of later processors repeat the first's (big.LITTLE parts differ:
      // the first is the one named).
      if (!first_processor && (info.implementer >= 0 || !info.model.empty())) break;
      first_processor = false;
    } else if (key == "vendor_id" && info.vendor.empty()) {
      info.vendor = value;
    } else if ((key == "model name" || key == "cpu model") && info.model.empty()) {
      info.model = value;
    } else if ((key == "flags" || key == "Features") && info.features.empty()) {
      info.features = split_words(value);
    } else if (key == "CPU implementer" && info.implementer < 0) {
      info.implementer = parse_number(value);
    } else if (key == "CPU part" && info.part < 0) {
      info.part = parse_number(value);
    } else if (key == "Model") {
      board = value;
    }
  }
  if (info.implementer >= 0) {
    name_from_ids(info);
    if (part_name(info.implementer, info.part) == nullptr && !board.empty()) {
      info.model += " (" + board + ")";
    }
  } else if (info.model.empty()) {
    info.model = board;
  }
  return info;
}

std::set<std::string> aarch64_hwcap_features(uint64_t hwcap, uint64_t hwcap2) {
  // The order of Linux's uapi/asm/hwcap.h; the names its /proc/cpuinfo prints.
  static const char* const kHwcap[] = {
      "fp",      "asimd", "evtstrm", "aes",   "pmull",    "sha1",   "sha2", "crc32",
      "atomics", "fphp",  "asimdhp", "cpuid", "asimdrdm", "jscvt",  "fcma", "lrcpc",
      "dcpop",   "sha3",  "sm3",     "sm4",   "asimddp",  "sha512", "sve",  "asimdfhm",
      "dit",     "uscat", "ilrcpc",  "flagm", "ssbs",     "sb",     "paca", "pacg"};
  static const char* const kHwcap2[] = {
      "dcpodp",    "sve2",      "sveaes",  "svepmull",  "svebitperm", "svesha3",  "svesm4",
      "flagm2",    "frint",     "svei8mm", "svef32mm",  "svef64mm",   "svebf16",  "i8mm",
      "bf16",      "dgh",       "rng",     "bti",       "mte",        "ecv",      "afp",
      "rpres",     "mte3",      "sme",     "smei16i64", "smef64f64",  "smei8i32", "smef16f32",
      "smeb16f32", "smef32f32", "smefa64", "wfxt",      "ebf16",      "sveebf16"};
  std::set<std::string> features;
  for (size_t bit = 0; bit < std::size(kHwcap); ++bit) {
    if (hwcap & (uint64_t{1} << bit)) features.insert(kHwcap[bit]);
  }
  for (size_t bit = 0; bit < std::size(kHwcap2); ++bit) {
    if (hwcap2 & (uint64_t{1} << bit)) features.insert(kHwcap2[bit]);
  }
  return features;
}

void set_from_midr(CpuInfo& info, uint64_t midr) {
  info.implementer = static_cast<int>((midr >> 24) & 0xff);
  info.part = static_cast<int>((midr >> 4) & 0xfff);
  name_from_ids(info);
}

std::string device_name(const CpuInfo& info, bool aarch64) {
  std::string name = "CPU: " + (info.model.empty() ? std::string("unknown model") : info.model);
  if (!aarch64) return name;
  // What decides how the kernels compute: NEON (asimd), half-precision
  // arithmetic (fphp, asimdhp), dot products (asimddp, i8mm), bf16, SVE.
  std::string shown;
  for (const char* feature :
       {"asimd", "fphp", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2"}) {
    if (info.features.count(feature) != 0) shown += std::string(shown.empty() ? "" : " ") + feature;
  }
  return name + " (aarch64: " + (shown.empty() ? "no NEON" : shown) + ")";
}

uint32_t native_dtypes(const CpuInfo& info, bool aarch64) {
  auto any = [&](std::initializer_list<const char*> names) {
    for (const char* name : names) {
      if (info.features.count(name) != 0) return true;
    }
    return false;
  };
  uint32_t bits = OAR_DTYPE_SUPPORT_F64;
  if (aarch64) {
    // fphp alone is scalar only; kernels that gain from f16 are vector loops.
    if (any({"fphp"}) && any({"asimdhp"})) bits |= OAR_DTYPE_SUPPORT_F16;
    if (any({"bf16"})) bits |= OAR_DTYPE_SUPPORT_BF16;
    if (any({"asimddp"})) bits |= OAR_DTYPE_SUPPORT_INT8_DOT;
    return bits;
  }
  if (any({"avx512_fp16", "amx_fp16"})) bits |= OAR_DTYPE_SUPPORT_F16;
  if (any({"avx512_bf16", "amx_bf16"})) bits |= OAR_DTYPE_SUPPORT_BF16;
  if (any({"avx512_vnni", "avx_vnni", "amx_int8"})) bits |= OAR_DTYPE_SUPPORT_INT8_DOT;
  return bits;
}

CpuInfo host_cpuinfo() {
  std::ifstream file("/proc/cpuinfo");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  CpuInfo info = parse_cpuinfo(text);
#if defined(__aarch64__)
  // The capability bits are what the kernel prints as "Features"; they are
  // also right where /proc/cpuinfo is not this processor's (qemu-aarch64 in
  // user mode shows the host's).
  info.features = aarch64_hwcap_features(getauxval(AT_HWCAP), getauxval(AT_HWCAP2));
  if (info.implementer < 0) {
    info.vendor.clear();
    info.model.clear();
    if ((getauxval(AT_HWCAP) & HWCAP_CPUID) != 0) {
      // The kernel (or the emulator) emulates EL0 reads of the ID registers.
      uint64_t midr = 0;
      __asm__ volatile("mrs %0, MIDR_EL1" : "=r"(midr));
      set_from_midr(info, midr);
    }
  }
#endif
  return info;
}

}  // namespace oar::cpu
