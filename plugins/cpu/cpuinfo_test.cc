// The cpu device's description of its processor, from /proc/cpuinfo texts of
// real machines (testdata/*.cpuinfo) and from aarch64 capability bits and
// MIDR values (the ones qemu-aarch64 reports for its CPU models).
#include "cpuinfo.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

namespace oar::cpu {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream file(std::string(OAR_CPUINFO_TESTDATA) + "/" + name + ".cpuinfo");
  EXPECT_TRUE(file.good()) << "no fixture " << name;
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

TEST(CpuInfoTest, NeoverseN1HasHalfPrecisionArithmeticButNoBf16NorSve) {
  CpuInfo info = parse_cpuinfo(fixture("neoverse-n1"));  // Graviton2, Ampere Altra
  EXPECT_EQ(info.vendor, "ARM");
  EXPECT_EQ(info.model, "ARM Neoverse-N1");
  EXPECT_EQ(info.implementer, 0x41);
  EXPECT_EQ(info.part, 0xd0c);
  EXPECT_EQ(info.features.count("fphp"), 1u);
  EXPECT_EQ(info.features.count("asimdhp"), 1u);
  EXPECT_EQ(info.features.count("bf16"), 0u);
  EXPECT_EQ(info.features.count("sve"), 0u);
  EXPECT_EQ(device_name(info, true), "CPU: ARM Neoverse-N1 (aarch64: asimd fphp asimdhp asimddp)");
}

TEST(CpuInfoTest, NeoverseV1HasBf16AndSve) {
  CpuInfo info = parse_cpuinfo(fixture("neoverse-v1"));  // Graviton3
  EXPECT_EQ(info.model, "ARM Neoverse-V1");
  EXPECT_EQ(info.features.count("bf16"), 1u);
  EXPECT_EQ(info.features.count("sve"), 1u);
  EXPECT_EQ(info.features.count("sve2"), 0u);
  EXPECT_EQ(device_name(info, true),
            "CPU: ARM Neoverse-V1 (aarch64: asimd fphp asimdhp asimddp i8mm bf16 sve)");
}

TEST(CpuInfoTest, Kunpeng920IsNamedByItsImplementer) {
  CpuInfo info = parse_cpuinfo(fixture("kunpeng-920"));
  EXPECT_EQ(info.vendor, "HiSilicon");
  EXPECT_EQ(info.model, "HiSilicon Kunpeng-920");
  EXPECT_EQ(device_name(info, true),
            "CPU: HiSilicon Kunpeng-920 (aarch64: asimd fphp asimdhp asimddp)");
}

TEST(CpuInfoTest, CortexA72HasOnlyNeon) {
  // A Raspberry Pi 4: the board's "Model" line comes last and does not
  // replace the core's name.
  CpuInfo info = parse_cpuinfo(fixture("raspberry-pi-4"));
  EXPECT_EQ(info.model, "ARM Cortex-A72");
  EXPECT_EQ(device_name(info, true), "CPU: ARM Cortex-A72 (aarch64: asimd)");
}

TEST(CpuInfoTest, UnknownPartIsNamedByNumberAndBoard) {
  CpuInfo info = parse_cpuinfo(
      "processor\t: 0\nFeatures\t: fp\nCPU implementer\t: 0x41\nCPU part\t: 0xd99\n\n"
      "Model\t\t: Some Board\n");
  EXPECT_EQ(info.model, "ARM part 0xd99 (Some Board)");
  EXPECT_EQ(device_name(info, true), "CPU: ARM part 0xd99 (Some Board) (aarch64: no NEON)");
}

TEST(CpuInfoTest, X86KeepsModelNameAndFlags) {
  CpuInfo info = parse_cpuinfo(fixture("xeon-x86-64"));
  EXPECT_EQ(info.vendor, "GenuineIntel");
  EXPECT_EQ(info.model, "Intel(R) Xeon(R) Processor");
  EXPECT_EQ(info.implementer, -1);
  EXPECT_EQ(info.features.count("avx2"), 1u);
  EXPECT_EQ(device_name(info, false), "CPU: Intel(R) Xeon(R) Processor");
}

TEST(CpuInfoTest, EmptyTextIsAnUnknownModel) {
  CpuInfo info = parse_cpuinfo("");
  EXPECT_TRUE(info.vendor.empty());
  EXPECT_TRUE(info.features.empty());
  EXPECT_EQ(device_name(info, false), "CPU: unknown model");
}

TEST(CpuInfoTest, HwcapNamesAreTheKernelsFeatureNames) {
  // Every feature a real machine prints is a name of one capability bit.
  const std::set<std::string> all = aarch64_hwcap_features(~uint64_t{0}, ~uint64_t{0});
  for (const char* machine : {"neoverse-n1", "neoverse-v1", "kunpeng-920", "raspberry-pi-4"}) {
    for (const std::string& feature : parse_cpuinfo(fixture(machine)).features) {
      EXPECT_EQ(all.count(feature), 1u) << machine << ": " << feature;
    }
  }
  EXPECT_EQ(aarch64_hwcap_features(0, 0).size(), 0u);
  EXPECT_EQ(aarch64_hwcap_features(uint64_t{1} << 22, uint64_t{1} << 14),
            (std::set<std::string>{"sve", "bf16"}));
}

TEST(CpuInfoTest, HwcapOfEmulatedNeoverseN1MatchesTheRealOnesFeatures) {
  // qemu-aarch64 -cpu neoverse-n1 reports AT_HWCAP 0x119ffb, AT_HWCAP2 0:
  // the real N1's features less the two an emulator has no use for.
  std::set<std::string> real = parse_cpuinfo(fixture("neoverse-n1")).features;
  real.erase("evtstrm");
  real.erase("ssbs");
  EXPECT_EQ(aarch64_hwcap_features(0x119ffb, 0), real);
}

TEST(CpuInfoTest, MidrNamesTheProcessorWhenCpuinfoDoesNot) {
  CpuInfo info;
  set_from_midr(info, 0x414fd0c1);  // qemu-aarch64 -cpu neoverse-n1
  EXPECT_EQ(info.vendor, "ARM");
  EXPECT_EQ(info.model, "ARM Neoverse-N1");
  set_from_midr(info, 0x481fd010);
  EXPECT_EQ(info.model, "HiSilicon Kunpeng-920");
  set_from_midr(info, 0x000f0510);  // qemu-aarch64 -cpu max
  EXPECT_EQ(info.vendor, "implementer 0x00");
  EXPECT_EQ(info.model, "implementer 0x00 part 0x051");
}

// native_dtypes follows the hardware's arithmetic, machine by machine.
constexpr uint32_t kF16 = OAR_DTYPE_SUPPORT_F16, kBf16 = OAR_DTYPE_SUPPORT_BF16,
                   kF64 = OAR_DTYPE_SUPPORT_F64, kInt8Dot = OAR_DTYPE_SUPPORT_INT8_DOT;

TEST(CpuInfoTest, NativeDtypesOfArmServersFollowFphpAsimdhpBf16AndAsimddp) {
  EXPECT_EQ(native_dtypes(parse_cpuinfo(fixture("neoverse-n1")), true), kF64 | kF16 | kInt8Dot);
  EXPECT_EQ(native_dtypes(parse_cpuinfo(fixture("kunpeng-920")), true), kF64 | kF16 | kInt8Dot);
  EXPECT_EQ(native_dtypes(parse_cpuinfo(fixture("neoverse-v1")), true),
            kF64 | kF16 | kBf16 | kInt8Dot);
}

TEST(CpuInfoTest, CortexA72HasNoNativeHalfPrecision) {
  // It converts f16 (fcvt, every aarch64 core) but has no f16 arithmetic.
  EXPECT_EQ(native_dtypes(parse_cpuinfo(fixture("raspberry-pi-4")), true), kF64);
}

TEST(CpuInfoTest, ScalarHalfPrecisionAloneIsNotNativeF16) {
  CpuInfo info = parse_cpuinfo(fixture("neoverse-n1"));
  info.features.erase("asimdhp");
  EXPECT_EQ(native_dtypes(info, true) & kF16, 0u);
}

TEST(CpuInfoTest, NativeDtypesOfX86FollowAvx512Fp16Bf16AndVnniNotF16c) {
  CpuInfo info = parse_cpuinfo(fixture("xeon-x86-64"));  // Sapphire Rapids
  EXPECT_EQ(native_dtypes(info, false), kF64 | kF16 | kBf16 | kInt8Dot);
  // The same machine's flags less those of Sapphire Rapids and Cooper Lake
  // read as an Ice Lake: f16c converts, but nothing computes in f16 or bf16.
  for (const char* flag : {"avx512_fp16", "avx512_bf16", "amx_bf16", "amx_tile"}) {
    info.features.erase(flag);
  }
  ASSERT_EQ(info.features.count("f16c"), 1u);
  EXPECT_EQ(native_dtypes(info, false), kF64 | kInt8Dot);
  for (const char* flag : {"avx512_vnni", "avx_vnni", "amx_int8"}) info.features.erase(flag);
  EXPECT_EQ(native_dtypes(info, false), kF64);
  // The same flag names mean nothing on aarch64, and aarch64's on x86.
  info.features = {"avx512_fp16", "fphp", "asimdhp", "bf16"};
  EXPECT_EQ(native_dtypes(info, true), kF64 | kF16 | kBf16);
  EXPECT_EQ(native_dtypes(info, false), kF64 | kF16);
}

TEST(CpuInfoTest, HostIsDescribed) {
  CpuInfo info = host_cpuinfo();
  EXPECT_FALSE(info.model.empty());
#if defined(__aarch64__)
  // Every aarch64 Linux machine (and qemu's CPU models) has NEON.
  EXPECT_EQ(info.features.count("asimd"), 1u);
  EXPECT_GE(info.implementer, 0);
#endif
}

}  // namespace
}  // namespace oar::cpu
