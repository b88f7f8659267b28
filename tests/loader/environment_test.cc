// The core's environment parsers (issue 12): a value that means nothing is
// named in a warning, never taken silently as something else. OAR_DEVICES
// with a typo hid every device without a word; OAR_VALIDATE=false turned
// validation on. Also the text helpers every loader message goes through.
#include "core/loader/environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/loader/elf.h"
#include "core/loader/plugin.h"
#include "core/loader/text.h"
#include "core/util/status.h"
#include "loader_test_util.h"

namespace oar::loader_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::vector<std::string> problems_of(const std::string& text) {
  std::vector<std::string> problems;
  loader::DeviceFilter filter(text, "OAR_DEVICES", &problems);
  return problems;
}

TEST(LoaderEnvironment, DeviceFilterEntriesThatMeanNothingAreNamed) {
  EXPECT_THAT(problems_of("cpu:0 "),
              ElementsAre(HasSubstr("OAR_DEVICES entry 'cpu:0 ' has spaces")));
  EXPECT_THAT(problems_of("cpu:x"), ElementsAre(HasSubstr("'cpu:x' has an index that is not")));
  EXPECT_THAT(problems_of(":0"), ElementsAre(HasSubstr("':0' has no plugin name")));
  EXPECT_THAT(problems_of("cpu:99999999999"), ElementsAre(HasSubstr("beyond any device")));
  EXPECT_THAT(problems_of("cpu:\x01"), ElementsAre(HasSubstr("'cpu:\\x01' has control")));
  EXPECT_THAT(problems_of("cpu:0,,sim,"), IsEmpty());
  EXPECT_THAT(problems_of("cpu0"), IsEmpty()) << "well formed; it is matched against devices later";
}

TEST(LoaderEnvironment, DeviceFilterAdmitsPluginsAndDevicesItNames) {
  loader::DeviceFilter filter("cpu:1,sim", "OAR_DEVICES", nullptr);
  EXPECT_FALSE(filter.admits("cpu", 0));
  EXPECT_TRUE(filter.admits("cpu", 1));
  EXPECT_TRUE(filter.admits("sim", 0));
  EXPECT_TRUE(filter.admits("sim", 7));
  EXPECT_FALSE(filter.admits("simx", 0));
  EXPECT_THAT(filter.unmatched({"cpu:0", "cpu:1", "sim:0"}), IsEmpty());

  loader::DeviceFilter everything("", "OAR_DEVICES", nullptr);
  EXPECT_TRUE(everything.admits("cpu", 0));
  loader::DeviceFilter commas(",,", "OAR_DEVICES", nullptr);
  EXPECT_TRUE(commas.admits("cpu", 0));
}

TEST(LoaderEnvironment, DeviceFilterEntriesThatMatchNoDeviceAreListedWithTheDevices) {
  loader::DeviceFilter filter("cpu0,sim:0", "OAR_DEVICES", nullptr);
  EXPECT_FALSE(filter.admits("cpu", 0));
  EXPECT_TRUE(filter.admits("sim", 0));
  EXPECT_THAT(filter.unmatched({"cpu:0", "sim:0"}),
              ElementsAre("OAR_DEVICES entry 'cpu0' matches no device here (devices: cpu:0, "
                          "sim:0)"));
}

TEST(LoaderEnvironment, FlagsTakeTheUsualSpellingsAndNothingElse) {
  std::string problem;
  for (const char* yes : {"1", "true", "TRUE", "yes", "On"}) {
    EXPECT_EQ(loader::parse_flag("OAR_X", yes, &problem), true) << yes;
  }
  for (const char* no : {"0", "false", "False", "no", "OFF"}) {
    EXPECT_EQ(loader::parse_flag("OAR_X", no, &problem), false) << no;
  }
  EXPECT_EQ(loader::parse_flag("OAR_X", "maybe", &problem), std::nullopt);
  EXPECT_THAT(problem, HasSubstr("OAR_X=\"maybe\" is not a yes/no value"));
  EXPECT_EQ(loader::parse_flag("OAR_X", "2", &problem), std::nullopt);
}

// The runtime warns about the typo instead of hiding cpu:0 in silence.
TEST(LoaderEnvironment, OarDevicesTypoIsNamedInAWarning) {
  for (const std::string& typo : {std::string("cpu0"), std::string("cpu:0 ")}) {
    ScopedEnvironment environment;
    environment.set("OAR_DEVICES", typo);
    ::testing::internal::CaptureStderr();
    Runtime runtime(with_environment({kCpuManifest}));
    std::string log = ::testing::internal::GetCapturedStderr();

    EXPECT_TRUE(runtime.devices().empty());
    EXPECT_THAT(log, HasSubstr("warning: OAR_DEVICES entry '" + typo + "'")) << log;
  }
}

TEST(LoaderEnvironment, OarDevicesThatMatchesSaysNothing) {
  ScopedEnvironment environment;
  environment.set("OAR_DEVICES", "cpu:0");
  ::testing::internal::CaptureStderr();
  Runtime runtime(with_environment({kCpuManifest}));
  std::string log = ::testing::internal::GetCapturedStderr();

  EXPECT_EQ(runtime.devices().size(), 1u);
  EXPECT_THAT(log, Not(HasSubstr("OAR_DEVICES"))) << log;
}

bool validating(const Runtime& runtime) {
  return !runtime.devices().empty() && runtime.devices()[0]->plugin().validating();
}

TEST(LoaderEnvironment, OarValidateFalseLeavesValidationOff) {
  for (const char* off : {"false", "0", "no", "off"}) {
    ScopedEnvironment environment;
    environment.set("OAR_VALIDATE", off);
    Runtime runtime(with_environment({kCpuManifest}));
    EXPECT_FALSE(validating(runtime)) << "OAR_VALIDATE=" << off;
  }
}

TEST(LoaderEnvironment, OarValidateTrueTurnsValidationOn) {
  for (const char* on : {"1", "true", "yes", "on"}) {
    ScopedEnvironment environment;
    environment.set("OAR_VALIDATE", on);
    Runtime runtime(with_environment({kCpuManifest}));
    EXPECT_TRUE(validating(runtime)) << "OAR_VALIDATE=" << on;
  }
}

TEST(LoaderEnvironment, OarValidateNonsenseIsNamedAndLeavesItOff) {
  ScopedEnvironment environment;
  environment.set("OAR_VALIDATE", "please");
  ::testing::internal::CaptureStderr();
  Runtime runtime(with_environment({kCpuManifest}));
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(validating(runtime));
  EXPECT_THAT(log, HasSubstr("OAR_VALIDATE=\"please\" is not a yes/no value"));
}

TEST(LoaderText, PrintableEscapesWhatIsNotUtf8OrIsAControlCharacter) {
  EXPECT_EQ(loader::printable("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(loader::printable("caf\xE9"), "caf\\xE9");
  EXPECT_EQ(loader::printable("a\x1b[2Jb\tc\n"), "a\\x1B[2Jb\tc\\x0A");
  EXPECT_EQ(loader::printable("\xC0\xAF"), "\\xC0\\xAF");           // overlong '/'
  EXPECT_EQ(loader::printable("\xED\xA0\x80"), "\\xED\\xA0\\x80");  // a surrogate
  EXPECT_EQ(loader::printable("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(loader::printable(std::string("a\0b", 3)), "a\\x00b");
}

TEST(LoaderText, ClippedCutsLongTextAndSaysHowLong) {
  EXPECT_EQ(loader::clipped("short", 16), "short");
  std::string clipped = loader::clipped(std::string(1 << 20, 'n'), 8);
  EXPECT_EQ(clipped, "nnnnnnnn\xE2\x80\xA6(1048576 bytes)");
  // Never half a character, never half an escape.
  EXPECT_EQ(loader::clipped("\xC3\xA9\xC3\xA9\xC3\xA9", 3), "\xC3\xA9\xE2\x80\xA6(6 bytes)");
  EXPECT_EQ(loader::clipped("ab\xFFyz", 4), "ab\xE2\x80\xA6(5 bytes)");
}

TEST(LoaderText, StatusOutsideTheEnumKeepsItsNumber) {
  EXPECT_EQ(oar::status_text(OAR_STATUS_NOT_FOUND), "NOT_FOUND");
  EXPECT_EQ(oar::status_text(oar_status_t(1234)), "UNKNOWN_STATUS_CODE(1234)");
}

TEST(LoaderElf, HeaderOfABuiltPluginIsThisMachines) {
  std::ifstream in(built_plugin("c_good"), std::ios::binary);
  std::string head(64, '\0');
  in.read(head.data(), 64);
  auto header = loader::parse_elf_header(head);
  ASSERT_TRUE(header.has_value());
  EXPECT_EQ(loader::elf_mismatch(*header, loader::host_elf_header()), std::nullopt);
  EXPECT_THAT(loader::describe(*header), HasSubstr("ELF 64-bit LSB shared library for"));
}

TEST(LoaderElf, ShortOrForeignBytesAreNoHeader) {
  EXPECT_EQ(loader::parse_elf_header(""), std::nullopt);
  EXPECT_EQ(loader::parse_elf_header("\x7f"
                                     "ELF\x02\x01"),
            std::nullopt);
  EXPECT_EQ(loader::parse_elf_header(std::string(64, 'x')), std::nullopt);
  EXPECT_EQ(loader::describe_non_elf("#!/bin/sh\n"), "a script");
  EXPECT_EQ(loader::describe_non_elf("MZ\x90"), "a Windows (PE) file");
}

}  // namespace
}  // namespace oar::loader_test
