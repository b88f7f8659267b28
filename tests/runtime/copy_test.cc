// Copies in every direction, with offsets, on every memory kind.
#include <cstring>

#include "cpu_fixture.h"

namespace oar::testing {
namespace {

using CopyTest = CpuTest;

TEST_F(CopyTest, HostToDeviceToDeviceToHostRoundTripsWithOffsets) {
  const size_t n = 4099;  // odd, so no copy is accidentally aligned
  std::vector<uint8_t> source = pattern(n, 7);
  Stream stream = device().create_stream();
  Buffer a = device().allocate(n + 100, &stream);
  Buffer b = device().allocate(n + 300, &stream);
  stream.copy_from_host(a, 37, source.data(), n);
  stream.copy(b, 251, a, 37, n);
  std::vector<uint8_t> result(n, 0);
  stream.copy_to_host(result.data(), b, 251, n);
  stream.synchronize();
  EXPECT_EQ(result, source);
}

TEST_F(CopyTest, CopyWritesOnlyTheRequestedRange) {
  Buffer buffer = device().allocate(64);
  device().upload(buffer, 0, std::vector<uint8_t>(64, 0xAA).data(), 64);
  device().upload(buffer, 10, std::vector<uint8_t>(5, 0x11).data(), 5);
  std::vector<uint8_t> result(64);
  device().download(result.data(), buffer, 0, 64);
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(result[i], (i >= 10 && i < 15) ? 0x11 : 0xAA) << "byte " << i;
  }
}

TEST_F(CopyTest, FillSetsExactlyTheRange) {
  Buffer buffer = device().allocate(256);
  Stream& stream = device().default_stream();
  stream.fill(buffer, 0, 0x00, 256);
  stream.fill(buffer, 100, 0x5C, 50);
  std::vector<uint8_t> result(256);
  stream.copy_to_host(result.data(), buffer, 0, 256);
  stream.synchronize();
  for (size_t i = 0; i < 256; ++i) {
    EXPECT_EQ(result[i], (i >= 100 && i < 150) ? 0x5C : 0x00) << "byte " << i;
  }
}

TEST_F(CopyTest, EveryMemoryKindRoundTrips) {
  for (uint32_t kind :
       {OAR_MEMORY_KIND_DEVICE, OAR_MEMORY_KIND_HOST_PINNED, OAR_MEMORY_KIND_UNIFIED}) {
    ASSERT_TRUE(device().has_memory_kind(kind));
    Buffer buffer = device().allocate_uncached(1000, kind);
    std::vector<uint8_t> source = pattern(1000, uint8_t(kind));
    device().upload(buffer, 0, source.data(), 1000);
    std::vector<uint8_t> result(1000);
    device().download(result.data(), buffer, 0, 1000);
    EXPECT_EQ(result, source) << "memory kind " << kind;
  }
}

TEST_F(CopyTest, HostVisibleMemoryIsAddressableFromTheHost) {
  Buffer pinned = device().allocate_uncached(128, OAR_MEMORY_KIND_HOST_PINNED);
  auto* bytes = static_cast<uint8_t*>(pinned.host_address());
  for (int i = 0; i < 128; ++i) bytes[i] = uint8_t(3 * i);
  Buffer target = device().allocate(128);
  Stream& stream = device().default_stream();
  stream.copy(target, 0, pinned, 0, 128);
  std::vector<uint8_t> result(128);
  stream.copy_to_host(result.data(), target, 0, 128);
  stream.synchronize();
  for (int i = 0; i < 128; ++i) EXPECT_EQ(result[i], uint8_t(3 * i));
}

TEST_F(CopyTest, DeviceMemoryHasNoHostAddress) {
  Buffer buffer = device().allocate(16);
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { buffer.host_address(); });
  EXPECT_NE(message.find("HOST_PINNED"), std::string::npos) << message;
}

TEST_F(CopyTest, CopyPastTheBufferIsOutOfRange) {
  Buffer buffer = device().allocate(100);
  std::vector<uint8_t> host(200);
  Stream& stream = device().default_stream();
  error_of(OAR_STATUS_OUT_OF_RANGE, [&] { stream.copy_from_host(buffer, 50, host.data(), 51); });
  error_of(OAR_STATUS_OUT_OF_RANGE, [&] { stream.copy_to_host(host.data(), buffer, 101, 0); });
  error_of(OAR_STATUS_OUT_OF_RANGE, [&] { stream.fill(buffer, 0, 0, 101); });
  error_of(OAR_STATUS_OUT_OF_RANGE,
           [&] { stream.copy_from_host(buffer, UINT64_MAX - 1, host.data(), 4); });
  stream.synchronize();  // the stream is not harmed by refused calls
}

TEST_F(CopyTest, PluginRefusesARangeOutsideItsAllocation) {
  // Below the C++ API: the plugin itself checks (memory, offset) ranges.
  Buffer buffer = device().allocate_uncached(64);
  std::vector<uint8_t> host(128);
  const oar_plugin_api_t& api = device().api();
  EXPECT_EQ(
      api.memory_copy_h2d(device().default_stream().handle(), buffer.memory(), 32, host.data(), 64),
      OAR_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(api.memory_fill(device().default_stream().handle(), buffer.memory(), 65, 0, 0),
            OAR_STATUS_OUT_OF_RANGE);
}

TEST_F(CopyTest, ZeroByteCopiesAreAllowed) {
  Buffer buffer = device().allocate(0);
  uint8_t host[1] = {0};
  Stream& stream = device().default_stream();
  stream.copy_from_host(buffer, 0, host, 0);
  stream.copy_to_host(host, buffer, 0, 0);
  stream.synchronize();
}

TEST_F(CopyTest, LargeCopyRoundTrips) {
  const size_t n = 48u << 20;
  std::vector<uint8_t> source = pattern(n, 1);
  Buffer buffer = device().allocate(n);
  std::vector<uint8_t> result(n);
  Stream& stream = device().default_stream();
  stream.copy_from_host(buffer, 0, source.data(), n);
  stream.copy_to_host(result.data(), buffer, 0, n);
  stream.synchronize();
  EXPECT_EQ(std::memcmp(result.data(), source.data(), n), 0);
}

}  // namespace
}  // namespace oar::testing
