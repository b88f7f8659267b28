// What `oar info`, `oar list --json` and certification reports say of a
// device's native arithmetic (oar_device_properties_t.native_dtypes, ABI 1.1).
#include "cli/describe.h"

#include <gtest/gtest.h>

namespace oar::cli {
namespace {

oar_device_properties_t with_native(uint32_t bits) {
  oar_device_properties_t p{};
  p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
  p.dtypes = OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16 | OAR_DTYPE_SUPPORT_F64;
  p.native_dtypes = bits;
  return p;
}

TEST(CliDescribeTest, NativeDtypesAreNamedApartFromTheClaims) {
  const auto p = with_native(OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_F64);
  EXPECT_EQ(native_dtypes_text(p, 1), "f16, f64");
  EXPECT_EQ(native_dtypes_json(p, 1), nlohmann::json({"f16", "f64"}));
  const nlohmann::json json = properties_json(p, 1);
  EXPECT_EQ(json["native_dtypes"], nlohmann::json({"f16", "f64"}));
  EXPECT_EQ(json["dtypes"], nlohmann::json({"f16", "bf16", "f64"}));
}

TEST(CliDescribeTest, NoNativeDtypeIsSaidSoFromAnAbi11Plugin) {
  EXPECT_EQ(native_dtypes_text(with_native(0), 1), "none beyond f32/int");
  EXPECT_EQ(native_dtypes_json(with_native(0), 1), nlohmann::json::array());
}

TEST(CliDescribeTest, NativeDtypesOfAnAbi10PluginAreNotReported) {
  // A 1.0 plugin leaves the field as the core zeroed it: not "none".
  EXPECT_EQ(native_dtypes_text(with_native(0), 0), "not reported (plugin of ABI 1.0)");
  EXPECT_TRUE(native_dtypes_json(with_native(0), 0).is_null());
  EXPECT_TRUE(properties_json(with_native(0), 0)["native_dtypes"].is_null());
}

}  // namespace
}  // namespace oar::cli
