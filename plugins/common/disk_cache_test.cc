#include "oar/sdk/disk_cache.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace oar::sdk {
namespace {

namespace fs = std::filesystem;

// Each test gets a private folder and a known environment.
class SdkDiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("oar-disk-cache-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    ::unsetenv("OAR_KERNEL_CACHE");
    ::unsetenv("OAR_KERNEL_CACHE_DIR");
    ::setenv("XDG_CACHE_HOME", (root_ / "xdg").c_str(), 1);
    ::setenv("HOME", (root_ / "home").c_str(), 1);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(SdkDiskCacheTest, StoredBytesComeBackUnderTheSameKey) {
  DiskCache cache("opencl");
  ASSERT_TRUE(cache.enabled());
  const std::vector<uint8_t> bytes = {0, 1, 2, 255, 0, 7};
  ASSERT_TRUE(cache.store("device=a;source=1", bytes.data(), bytes.size()));
  auto loaded = DiskCache("opencl").load("device=a;source=1");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, bytes);
  EXPECT_FALSE(cache.load("device=a;source=2").has_value());
}

TEST_F(SdkDiskCacheTest, FollowsXdgCacheHomeThenHome) {
  EXPECT_EQ(DiskCache("vulkan").directory(), (root_ / "xdg" / "oar" / "vulkan").string());
  ::setenv("XDG_CACHE_HOME", "relative/ignored", 1);
  EXPECT_EQ(DiskCache("vulkan").directory(),
            (root_ / "home" / ".cache" / "oar" / "vulkan").string());
}

TEST_F(SdkDiskCacheTest, ExplicitFolderWinsAndZeroTurnsTheCacheOff) {
  ::setenv("OAR_KERNEL_CACHE_DIR", (root_ / "mine").c_str(), 1);
  EXPECT_EQ(DiskCache("opencl").directory(), (root_ / "mine").string());
  ::setenv("OAR_KERNEL_CACHE", "0", 1);
  DiskCache off("opencl");
  EXPECT_FALSE(off.enabled());
  const uint8_t byte = 1;
  EXPECT_FALSE(off.store("k", &byte, 1));
  EXPECT_FALSE(off.load("k").has_value());
}

TEST_F(SdkDiskCacheTest, AnUnwritableLocationMeansNoCacheNotAnError) {
  ::setenv("OAR_KERNEL_CACHE_DIR", "/proc/oar-cannot-exist/here", 1);
  EXPECT_FALSE(DiskCache("opencl").enabled());
}

TEST_F(SdkDiskCacheTest, AFileWrittenForAnotherKeyIsAMiss) {
  DiskCache cache("opencl");
  const uint8_t byte = 42;
  ASSERT_TRUE(cache.store("key-one", &byte, 1));
  // Overwrite the entry's file with one that claims a different key.
  fs::path file;
  for (const auto& entry : fs::directory_iterator(cache.directory())) file = entry.path();
  std::ofstream(file, std::ios::binary | std::ios::trunc) << "OARKC1\nkey-two" << '\0' << "x";
  EXPECT_FALSE(cache.load("key-one").has_value());
}

TEST_F(SdkDiskCacheTest, DigestIsStableAndDistinguishesTexts) {
  EXPECT_EQ(DiskCache::digest(""), "cbf29ce484222325");  // the FNV-1a 64 offset basis
  EXPECT_NE(DiskCache::digest("a"), DiskCache::digest("b"));
}

}  // namespace
}  // namespace oar::sdk
