// Memory: every listed kind x every copy direction with odd offsets and sizes,
// guards around every destination (the rest of the allocation; guard bytes
// around host destinations), fills, zero sizes, host addresses, peer copies.
// Large sizes, limits and leaks: memory_large.cc.
#include <cstring>

#include "conformance/suites/abi/abi_util.h"

namespace oar::conformance::abi {
namespace {

constexpr uint64_t kBufferBytes = 4099;  // odd, one past a page
constexpr uint8_t kBackground = 0xA5;

struct Range {
  uint64_t offset;
  uint64_t size;
};
// Whole, single bytes at both ends, odd offsets and sizes, empty at both ends.
const Range kRanges[] = {{0, kBufferBytes}, {1, 1}, {3, 1000},         {kBufferBytes - 1, 1},
                         {7, 4092},         {0, 0}, {kBufferBytes, 0}, {2048, 2051}};

std::string range_text(const Range& r) {
  return "[" + std::to_string(r.offset) + ", +" + std::to_string(r.size) + ")";
}

std::vector<uint8_t> read_all(Stream& stream, const Buffer& buffer) {
  GuardedHost bytes(buffer.size());
  stream.copy_to_host(bytes.data(), buffer, 0, buffer.size());
  stream.synchronize();
  bytes.expect_guards("a d2h copy of a whole " + std::to_string(buffer.size()) + "-byte buffer");
  return bytes.contents();
}

void h2d_d2h_offsets(TestContext& context, uint32_t kind) {
  Device& device = context.device;
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate_uncached(kBufferBytes, kind);
  for (const Range& r : kRanges) {
    stream.fill(buffer, 0, kBackground, kBufferBytes);
    std::vector<uint8_t> data = pattern(r.size, uint8_t(r.offset));
    stream.copy_from_host(buffer, r.offset, data.data(), r.size);
    GuardedHost back(r.size, 0);
    stream.copy_to_host(back.data(), buffer, r.offset, r.size);
    stream.synchronize();
    back.expect_guards("a d2h copy of " + range_text(r));
    expect_bytes("d2h of the h2d range " + range_text(r), back.contents(), data);
    std::vector<uint8_t> want(kBufferBytes, kBackground);
    std::copy(data.begin(), data.end(), want.begin() + long(r.offset));
    expect_bytes("whole buffer after h2d to " + range_text(r) + " (bytes outside must stay)",
                 read_all(stream, buffer), want);
  }
}

void fill_offsets(TestContext& context, uint32_t kind) {
  Device& device = context.device;
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate_uncached(kBufferBytes, kind);
  for (const Range& r : kRanges) {
    stream.fill(buffer, 0, kBackground, kBufferBytes);
    uint8_t value = uint8_t(r.offset * 7 + r.size);
    stream.fill(buffer, r.offset, value, r.size);
    std::vector<uint8_t> want(kBufferBytes, kBackground);
    std::fill(want.begin() + long(r.offset), want.begin() + long(r.offset + r.size), value);
    expect_bytes("whole buffer after fill of " + range_text(r), read_all(stream, buffer), want);
  }
}

void d2d_offsets(TestContext& context, uint32_t src_kind, uint32_t dst_kind) {
  Device& device = context.device;
  Stream stream = device.create_stream();
  Buffer src = device.allocate_uncached(kBufferBytes, src_kind);
  Buffer dst = device.allocate_uncached(kBufferBytes, dst_kind);
  std::vector<uint8_t> source = pattern(kBufferBytes, 11);
  stream.copy_from_host(src, 0, source.data(), kBufferBytes);
  struct Copy {
    uint64_t src_offset, dst_offset, size;
  };
  const Copy copies[] = {{0, 0, kBufferBytes}, {1, 3, 1000}, {7, 0, 1},
                         {13, 17, 4000},       {0, 0, 0},    {kBufferBytes, kBufferBytes, 0},
                         {4098, 4098, 1}};
  for (const Copy& c : copies) {
    stream.fill(dst, 0, kBackground, kBufferBytes);
    stream.copy(dst, c.dst_offset, src, c.src_offset, c.size);
    std::vector<uint8_t> want(kBufferBytes, kBackground);
    std::copy(source.begin() + long(c.src_offset), source.begin() + long(c.src_offset + c.size),
              want.begin() + long(c.dst_offset));
    expect_bytes("d2d " + std::to_string(c.size) + " bytes from offset " +
                     std::to_string(c.src_offset) + " to offset " + std::to_string(c.dst_offset),
                 read_all(stream, dst), want);
  }
}

// Non-overlapping ranges of one allocation, at odd offsets, both directions.
void d2d_within(TestContext& context, uint32_t kind) {
  Device& device = context.device;
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate_uncached(kBufferBytes, kind);
  const std::vector<uint8_t> source = pattern(kBufferBytes, 23);
  struct Copy {
    uint64_t src_offset, dst_offset, size;
  };
  const Copy copies[] = {{1, 2050, 2000}, {2051, 3, 2047}, {0, 4098, 1}, {4098, 0, 1}};
  for (const Copy& c : copies) {
    stream.copy_from_host(buffer, 0, source.data(), kBufferBytes);
    stream.copy(buffer, c.dst_offset, buffer, c.src_offset, c.size);
    std::vector<uint8_t> want = source;
    std::copy(source.begin() + long(c.src_offset), source.begin() + long(c.src_offset + c.size),
              want.begin() + long(c.dst_offset));
    expect_bytes("d2d of " + std::to_string(c.size) + " bytes within one allocation from offset " +
                     std::to_string(c.src_offset) + " to offset " + std::to_string(c.dst_offset),
                 read_all(stream, buffer), want);
  }
}

void allocation_sizes(TestContext& context, uint32_t kind) {
  Device& device = context.device;
  Stream stream = device.create_stream();
  const uint64_t alignment = device.properties().min_alignment;
  const bool host_visible = kind != OAR_MEMORY_KIND_DEVICE;
  const bool address = host_visible || handles_are_addresses(device.properties());
  for (uint64_t size : {uint64_t(1), uint64_t(3), uint64_t(64), uint64_t(4097), uint64_t(1) << 20,
                        (uint64_t(3) << 20) + 1}) {
    Buffer buffer = device.allocate_uncached(size, kind);
    if (address) {
      auto value = reinterpret_cast<uintptr_t>(host_visible ? buffer.host_address()
                                                            : static_cast<void*>(buffer.memory()));
      expect(alignment == 0 || value % alignment == 0,
             "a " + std::to_string(size) + "-byte allocation's " +
                 (host_visible ? "host address" : "handle (an address for this DLPack type)") +
                 " is not aligned to min_alignment " + std::to_string(alignment));
    }
    std::vector<uint8_t> data = pattern(size, uint8_t(size));
    stream.copy_from_host(buffer, 0, data.data(), size);
    expect_bytes("round trip through a " + std::to_string(size) + "-byte allocation",
                 read_all(stream, buffer), data);
  }
}

void zero_size(TestContext& context, uint32_t kind) {
  Device& device = context.device;
  const oar_plugin_api_t& api = device.api();
  Stream stream = device.create_stream();
  oar_memory_t empty = sentinel<oar_memory_t>();
  expect_status(device, api.memory_allocate(device.handle(), 0, kind, &empty), OAR_STATUS_OK,
                "memory_allocate(size 0)");
  expect(empty != sentinel<oar_memory_t>(), "memory_allocate(size 0) returned OK without a handle");
  uint8_t host = 0x77;
  expect_status(device, api.memory_copy_h2d(stream.handle(), empty, 0, &host, 0), OAR_STATUS_OK,
                "memory_copy_h2d of 0 bytes into a 0-byte allocation");
  expect_status(device, api.memory_copy_d2h(stream.handle(), &host, empty, 0, 0), OAR_STATUS_OK,
                "memory_copy_d2h of 0 bytes from a 0-byte allocation");
  expect_status(device, api.memory_fill(stream.handle(), empty, 0, 1, 0), OAR_STATUS_OK,
                "memory_fill of 0 bytes of a 0-byte allocation");
  expect_status(device, api.memory_copy_d2d(stream.handle(), empty, 0, empty, 0, 0), OAR_STATUS_OK,
                "memory_copy_d2d of 0 bytes between 0-byte allocations");
  expect_status(device, api.stream_synchronize(stream.handle()), OAR_STATUS_OK,
                "stream_synchronize");
  expect(host == 0x77, "a 0-byte d2h wrote to the host");
  expect_status(device, api.memory_free(device.handle(), empty), OAR_STATUS_OK,
                "memory_free of a 0-byte allocation");
}

// Host-visible memory: the host address and stream copies see the same bytes.
void host_address(TestContext& context, uint32_t kind) {
  Device& device = context.device;
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate_uncached(kBufferBytes, kind);
  auto* host = static_cast<uint8_t*>(buffer.host_address());
  stream.fill(buffer, 0, 0x3C, kBufferBytes);
  stream.synchronize();
  expect_bytes("host view after a stream fill", std::vector<uint8_t>(host, host + kBufferBytes),
               std::vector<uint8_t>(kBufferBytes, 0x3C));
  std::vector<uint8_t> data = pattern(kBufferBytes, 5);
  std::memcpy(host, data.data(), kBufferBytes);
  expect_bytes("d2h after writing through the host address", read_all(stream, buffer), data);
}

void peer_copy(TestContext& context) {
  require_feature(context.device, OAR_DEVICE_FEATURE_PEER_ACCESS);
  Device* peer = nullptr;
  for (Device* d : context.runtime.devices()) {
    if (d != &context.device && &d->plugin() == &context.device.plugin() &&
        d->has_feature(OAR_DEVICE_FEATURE_PEER_ACCESS)) {
      peer = d;
    }
  }
  if (peer == nullptr) skip("no second device of this plugin with PEER_ACCESS is visible");
  Stream stream = context.device.create_stream();
  Stream peer_stream = peer->create_stream();
  Buffer src = peer->allocate_uncached(kBufferBytes);
  Buffer dst = context.device.allocate_uncached(kBufferBytes);
  std::vector<uint8_t> data = pattern(kBufferBytes, 9);
  peer_stream.copy_from_host(src, 0, data.data(), kBufferBytes);
  peer_stream.synchronize();
  stream.fill(dst, 0, kBackground, kBufferBytes);
  stream.copy(dst, 3, src, 1, 4000);
  std::vector<uint8_t> want(kBufferBytes, kBackground);
  std::copy(data.begin() + 1, data.begin() + 4001, want.begin() + 3);
  expect_bytes("peer copy of 4000 bytes from offset 1 to offset 3", read_all(stream, dst), want);
}

}  // namespace

void register_memory_tests(Registry& registry, const oar_device_properties_t& properties) {
  const std::vector<uint32_t> kinds = listed_kinds(properties);
  for (uint32_t kind : kinds) {
    const std::string k = kind_name(kind);
    auto with_kind = [kind](void (*test)(TestContext&, uint32_t)) {
      return [kind, test](TestContext& context) { test(context, kind); };
    };
    add(registry, "memory", k + "/allocation_sizes_aligned_and_round_trip",
        with_kind(allocation_sizes));
    add(registry, "memory", k + "/zero_size_allocation_and_copies", with_kind(zero_size));
    add(registry, "memory", k + "/h2d_d2h_odd_offsets_and_sizes", with_kind(h2d_d2h_offsets));
    add(registry, "memory", k + "/fill_odd_offsets_and_sizes", with_kind(fill_offsets));
    add(registry, "memory", k + "/d2d_within_one_allocation_odd_offsets", with_kind(d2d_within));
    if (kind != OAR_MEMORY_KIND_DEVICE) {
      add(registry, "memory", k + "/host_address_sees_stream_copies", with_kind(host_address));
    }
    for (uint32_t dst_kind : kinds) {
      add(registry, "memory", "d2d/" + k + "_to_" + kind_name(dst_kind) + "_odd_offsets",
          [kind, dst_kind](TestContext& context) { d2d_offsets(context, kind, dst_kind); });
    }
  }
  add(registry, "memory", "peer_copy_odd_offsets", peer_copy);
}

}  // namespace oar::conformance::abi
