// Memory at scale: copies of tens of MiB in every direction with odd offsets
// on both sides (chunked copies and DMA paths that only large sizes take),
// alignment of large allocations, the device's claims (max_allocation_size
// usable to its last byte, beyond 4 GiB where it reaches; total_memory), and
// leaks seen without trusting the plugin's own memory report.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "conformance/suites/abi/abi_util.h"

namespace oar::conformance::abi {
namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;
constexpr uint64_t kGiB = uint64_t(1) << 30;

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / double(kMiB));
  return text;
}

// The size of the large copy tests: tens of MiB, odd, within the device's
// limits (two such buffers are live at once).
uint64_t large_size(const oar_device_properties_t& p) {
  return std::min({40 * kMiB + 11, p.max_allocation_size, p.total_memory / 3}) | 1;
}

// A host model of one device buffer, checked against a full read-back (into
// one guarded host buffer, reused: fresh tens of MiB cost page faults).
class Model {
 public:
  Model(Stream& stream, const Buffer& buffer, const std::string& name)
      : stream_(stream),
        buffer_(buffer),
        name_(name),
        bytes_(buffer.size(), 0),
        back_(buffer.size(), 0) {}
  std::vector<uint8_t>& bytes() { return bytes_; }
  void check(const std::string& after) {
    stream_.copy_to_host(back_.data(), buffer_, 0, bytes_.size());
    stream_.synchronize();
    back_.expect_guards("a d2h copy of " + mib(bytes_.size()));
    expect_bytes(name_ + " after " + after + " (bytes outside the range must stay)", back_.data(),
                 bytes_.data(), bytes_.size());
  }

 private:
  Stream& stream_;
  const Buffer& buffer_;
  std::string name_;
  std::vector<uint8_t> bytes_;
  GuardedHost back_;
};

// Fails unless |n| bytes at |got| are all |value|.
void expect_all(const std::string& what, const uint8_t* got, size_t n, uint8_t value) {
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != value) {
      fail(what + ": byte " + std::to_string(i) + " is " + std::to_string(got[i]) +
           ", expected it unchanged (" + std::to_string(value) + ")");
    }
  }
}

std::string range_text(uint64_t offset, uint64_t size) {
  return "[" + std::to_string(offset) + ", +" + std::to_string(size) + ")";
}

// One allocation of |kind| and one of DEVICE memory, each of tens of MiB:
// h2d, d2h, d2d both ways and within one allocation, and fill, every range
// at odd offsets (the host side too) with guards on both sides.
void large_copies(TestContext& context, uint32_t kind) {
  Device& device = context.device;
  const uint64_t size = large_size(device.properties());
  Stream stream = device.create_stream();
  Buffer a = device.allocate_uncached(size, kind);
  Buffer b = device.allocate_uncached(size, OAR_MEMORY_KIND_DEVICE);
  Model ma(stream, a, mib(size) + " " + kind_name(kind) + " allocation");
  Model mb(stream, b, mib(size) + " device allocation");
  const std::vector<uint8_t> source = large_pattern(size, 0x1234);

  // fill, then h2d from an odd host address to an odd offset.
  stream.fill(a, 0, 0xA5, size);
  std::fill(ma.bytes().begin(), ma.bytes().end(), 0xA5);
  const uint64_t h2d_size = size - 3 - 16;
  stream.copy_from_host(a, 3, source.data() + 5, h2d_size);
  std::copy_n(source.begin() + 5, h2d_size, ma.bytes().begin() + 3);
  ma.check("h2d of " + mib(h2d_size) + " from host offset 5 to " + range_text(3, h2d_size));

  // d2h from an odd offset to an odd host address, with guards around it.
  {
    const uint64_t d2h_size = size - 9 - 13;
    GuardedHost host(size, 0x5A);
    stream.copy_to_host(host.data() + 7, a, 9, d2h_size);
    stream.synchronize();
    const std::string what =
        "a d2h of " + mib(d2h_size) + " from " + range_text(9, d2h_size) + " to host offset 7";
    host.expect_guards(what);
    expect_all(what + " wrote the host bytes before it", host.data(), 7, 0x5A);
    expect_bytes(what, host.data() + 7, ma.bytes().data() + 9, d2h_size);
    expect_all(what + " wrote the host bytes after it", host.data() + 7 + d2h_size,
               size - 7 - d2h_size, 0x5A);
  }

  // d2d from |kind| to DEVICE memory, then back, at different odd offsets.
  stream.fill(b, 0, 0x3C, size);
  std::fill(mb.bytes().begin(), mb.bytes().end(), 0x3C);
  const uint64_t d2d_size = size - 13 - 5;
  stream.copy(b, 13, a, 3, d2d_size);
  std::copy_n(ma.bytes().begin() + 3, d2d_size, mb.bytes().begin() + 13);
  mb.check(std::string("d2d of ") + mib(d2d_size) + " from the " + kind_name(kind) +
           " allocation's offset 3 to offset 13");
  const uint64_t back_size = size - 11 - 7;
  stream.copy(a, 7, b, 11, back_size);
  std::copy_n(mb.bytes().begin() + 11, back_size, ma.bytes().begin() + 7);
  ma.check("d2d of " + mib(back_size) + " from a device allocation's offset 11 to offset 7");

  // d2d within one allocation: two disjoint halves, odd offsets.
  const uint64_t half = size / 2;
  const uint64_t within_size = half - 9;
  stream.copy(b, half + 1, b, 7, within_size);
  std::copy_n(mb.bytes().begin() + 7, within_size, mb.bytes().begin() + long(half + 1));
  mb.check("d2d of " + mib(within_size) + " within the allocation from offset 7 to offset " +
           std::to_string(half + 1));

  // fill of all but the first and last byte.
  stream.fill(a, 1, 0xE7, size - 2);
  std::fill(ma.bytes().begin() + 1, ma.bytes().end() - 1, 0xE7);
  ma.check("fill of " + range_text(1, size - 2));
}

// Where an allocation's address is observable, |address| % min_alignment.
void expect_aligned(Device& device, const Buffer& buffer, uint32_t kind, uint64_t size) {
  const uint64_t alignment = device.properties().min_alignment;
  uintptr_t address = 0;
  if (kind != OAR_MEMORY_KIND_DEVICE) {
    address = reinterpret_cast<uintptr_t>(buffer.host_address());
  } else {
    address = reinterpret_cast<uintptr_t>(buffer.memory());
  }
  expect(alignment == 0 || address % alignment == 0,
         std::string("a ") + mib(size) + " " + kind_name(kind) + " allocation's " +
             (kind != OAR_MEMORY_KIND_DEVICE ? "host address"
                                             : "handle (an address for this "
                                               "DLPack device type)") +
             " is " + std::to_string(address % alignment) + " bytes past a multiple of " +
             "min_alignment " + std::to_string(alignment) + " (docs/abi.md: every allocation " +
             "is aligned to min_alignment)");
}

// Large allocations (17 MiB to 1 GiB, as the limits allow) are aligned to
// min_allocation and usable to their last byte. Alignment is observable for
// host-visible kinds (memory_host_address) and, for DEVICE memory, where the
// DLPack device type makes the handle an address.
void large_alignment(TestContext& context, uint32_t kind) {
  Device& device = context.device;
  const oar_device_properties_t& p = device.properties();
  const bool observable = kind != OAR_MEMORY_KIND_DEVICE || handles_are_addresses(p);
  if (!observable) {
    skip("DEVICE memory handles of DLPack device type " + std::to_string(p.dlpack_device_type) +
         " are opaque: their alignment is not observable");
  }
  Stream stream = device.create_stream();
  for (uint64_t size : {17 * kMiB + 5, 64 * kMiB + 3, 100 * kMiB + 1, 257 * kMiB, kGiB + 7}) {
    if (size > p.max_allocation_size || size > p.total_memory / 4) continue;
    Buffer buffer = device.allocate_uncached(size, kind);
    expect_aligned(device, buffer, kind, size);
    uint8_t last = 0;
    stream.fill(buffer, size - 1, 0x6B, 1);
    stream.copy_to_host(&last, buffer, size - 1, 1);
    stream.synchronize();
    expect(last == 0x6B, "the last byte of a " + mib(size) + " " + kind_name(kind) +
                             " allocation did not keep a fill");
  }
}

// max_allocation_size is a claim: the largest allocation must work to its
// last byte, and offsets beyond 4 GiB must not wrap to 32 bits. Lazily
// committed memory is fine: only a few pages are touched. Where the device
// refuses the full size with RESOURCE_EXHAUSTED (memory taken by others),
// half of it is tried, down to 256 MiB, which must succeed.
void max_allocation_usable(TestContext& context) {
  Device& device = context.device;
  const oar_device_properties_t& p = device.properties();
  const oar_plugin_api_t& api = device.api();
  const uint64_t floor = std::min<uint64_t>(p.max_allocation_size, 256 * kMiB);
  uint64_t size = p.max_allocation_size;
  oar_memory_t memory = sentinel<oar_memory_t>();
  for (;;) {
    memory = sentinel<oar_memory_t>();
    oar_status_t status =
        api.memory_allocate(device.handle(), size, OAR_MEMORY_KIND_DEVICE, &memory);
    if (status == OAR_STATUS_OK) break;
    expect_status(device, status, OAR_STATUS_RESOURCE_EXHAUSTED,
                  "memory_allocate(" + std::to_string(size) + ") with max_allocation_size " +
                      std::to_string(p.max_allocation_size));
    expect(memory == sentinel<oar_memory_t>(),
           "memory_allocate failed but changed out_memory (policy P9)");
    expect(size > floor, "memory_allocate of " + mib(size) +
                             " failed with RESOURCE_EXHAUSTED although max_allocation_size is " +
                             mib(p.max_allocation_size));
    size = std::max(floor, size / 2);
  }
  if (size != p.max_allocation_size) {
    std::printf("max_allocation_size %llu: the device had room for %llu bytes only\n",
                static_cast<unsigned long long>(p.max_allocation_size),
                static_cast<unsigned long long>(size));
  }
  // The allocation is freed by the plugin's slot (it was made by one).
  struct Free {
    Device& device;
    oar_memory_t memory;
    ~Free() { device.api().memory_free(device.handle(), memory); }
  } free_at_end{device, memory};
  Stream stream = device.create_stream();
  const oar_stream_t s = stream.handle();
  if (handles_are_addresses(p)) {
    const uint64_t alignment = p.min_alignment;
    expect(alignment == 0 || reinterpret_cast<uintptr_t>(memory) % alignment == 0,
           "the " + mib(size) + " allocation's handle (an address for this DLPack device type) " +
               "is not aligned to min_alignment " + std::to_string(alignment));
  }
  constexpr uint64_t kPiece = 4099;
  struct Piece {
    uint64_t offset;
    std::vector<uint8_t> bytes;
  };
  std::vector<Piece> pieces = {{3, large_pattern(kPiece, 1)},
                               {size - kPiece, large_pattern(kPiece, 2)}};
  if (size > 4 * kGiB + 2 * kPiece) pieces.push_back({4 * kGiB + 3, large_pattern(kPiece, 3)});
  if (size > 2 * kGiB + 2 * kPiece) pieces.push_back({2 * kGiB + 1, large_pattern(kPiece, 4)});
  for (const Piece& piece : pieces) {
    expect_status(device, api.memory_copy_h2d(s, memory, piece.offset, piece.bytes.data(), kPiece),
                  OAR_STATUS_OK, "memory_copy_h2d at offset " + std::to_string(piece.offset));
  }
  // The last byte by a fill, and a d2d from the end to the start.
  expect_status(device, api.memory_fill(s, memory, size - 1, 0x9D, 1), OAR_STATUS_OK,
                "memory_fill of the last byte");
  pieces[1].bytes.back() = 0x9D;
  expect_status(device, api.memory_copy_d2d(s, memory, kPiece + 7, memory, size - kPiece, kPiece),
                OAR_STATUS_OK, "memory_copy_d2d from the end of the allocation to offset 4106");
  pieces.push_back({kPiece + 7, pieces[1].bytes});
  std::vector<GuardedHost> back;
  for (size_t i = 0; i < pieces.size(); ++i) back.emplace_back(kPiece, 0);
  for (size_t i = 0; i < pieces.size(); ++i) {
    expect_status(device, api.memory_copy_d2h(s, back[i].data(), memory, pieces[i].offset, kPiece),
                  OAR_STATUS_OK, "memory_copy_d2h at offset " + std::to_string(pieces[i].offset));
  }
  stream.synchronize();
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string what = std::to_string(kPiece) + " bytes at offset " +
                             std::to_string(pieces[i].offset) + " of a " + mib(size) +
                             " allocation";
    back[i].expect_guards("a d2h copy of " + what);
    expect_bytes(what +
                     " (a wrong byte here means offsets wrap or the allocation is smaller "
                     "than claimed)",
                 back[i].contents(), pieces[i].bytes);
  }
}

// Bytes of this process's memory resident in RAM (0 if unknown).
uint64_t resident_bytes() {
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  unsigned long pages = 0, resident = 0;
  int read = std::fscanf(statm, "%lu %lu", &pages, &resident);
  std::fclose(statm);
  return read == 2 ? uint64_t(resident) * uint64_t(sysconf(_SC_PAGESIZE)) : 0;
}

// 32 rounds of allocate, fill and free 64 MiB: memory_free must give it back.
// Two witnesses, so that a plugin whose memory_info lies is still caught:
// the plugin's free memory, and this process's resident memory (where device
// memory is host memory, a leaked, filled allocation stays resident; any
// plugin's host-side leak shows there too). On devices whose memory is the
// host's, free memory is the machine's and another process may take some
// meanwhile: a drop beyond the allowance is checked once more with a second
// batch, since a leak repeats (2 GiB a batch) while another process's use
// rarely does.
void no_leak(TestContext& context) {
  Device& device = context.device;
  const bool has_info = device.api().device_memory_info != nullptr;
  constexpr uint64_t kChunk = 64 * kMiB;
  constexpr uint64_t kAllowed = 512 * kMiB;
  if (device.properties().max_allocation_size < kChunk) skip("max_allocation_size < 64 MiB");
  if (!has_info && resident_bytes() == 0) {
    skip("neither device_memory_info nor this process's resident memory is observable");
  }
  Stream stream = device.create_stream();
  struct Drop {
    uint64_t info = 0, resident = 0;
  };
  auto batch = [&] {
    const uint64_t info_before = has_info ? device.memory_info().free : 0;
    const uint64_t resident_before = resident_bytes();
    for (int round = 0; round < 32; ++round) {
      Buffer buffer = device.allocate_uncached(kChunk);
      stream.fill(buffer, 0, uint8_t(round), kChunk);
      stream.synchronize();  // memory_free frees at once: no work may be pending
    }
    const uint64_t info_after = has_info ? device.memory_info().free : 0;
    const uint64_t resident_after = resident_bytes();
    Drop drop;
    drop.info = info_before > info_after ? info_before - info_after : 0;
    drop.resident = resident_after > resident_before ? resident_after - resident_before : 0;
    return drop;
  };
  const Drop first = batch();
  if (first.info <= kAllowed && first.resident <= kAllowed) return;
  const Drop second = batch();
  const std::string rounds =
      " over each of two batches of 32 rounds of allocate/fill/free of 64 MiB (allowed: 512 MiB "
      "a batch): memory_free does not release memory";
  expect(second.info <= kAllowed || first.info <= kAllowed,
         "device_memory_info's free memory dropped by " + mib(first.info) + ", then by " +
             mib(second.info) + rounds);
  expect(second.resident <= kAllowed || first.resident <= kAllowed,
         "this process's resident memory grew by " + mib(first.resident) + ", then by " +
             mib(second.resident) + rounds +
             (has_info ? " (whatever device_memory_info reports)" : ""));
}

// Allocating and freeing, one after another, more than total_memory in all:
// if memory_free leaks, a device whose allocations draw on its total_memory
// runs out and says RESOURCE_EXHAUSTED, whatever device_memory_info reports.
// Each allocation is touched at its last byte only, so a correct plugin
// commits almost nothing; the test stops (and fails) as soon as this
// process's resident memory grows by two allocations, before a leak could
// exhaust the host.
void allocate_past_total(TestContext& context) {
  Device& device = context.device;
  const oar_device_properties_t& p = device.properties();
  const uint64_t chunk = std::min(p.max_allocation_size, std::max(64 * kMiB, p.total_memory / 8));
  const uint64_t rounds = p.total_memory / chunk + 2;
  Stream stream = device.create_stream();
  const uint64_t resident_start = resident_bytes();
  for (uint64_t round = 0; round < rounds; ++round) {
    const std::string so_far = std::to_string(round) + " allocations of " + mib(chunk) +
                               ", each freed before the next (" + mib(round * chunk) +
                               " in all; total_memory is " + mib(p.total_memory) + ")";
    oar_memory_t memory = sentinel<oar_memory_t>();
    oar_status_t status =
        device.api().memory_allocate(device.handle(), chunk, OAR_MEMORY_KIND_DEVICE, &memory);
    if (status == OAR_STATUS_RESOURCE_EXHAUSTED) {
      expect_status(device, status, status, "memory_allocate");
      fail("memory_allocate of " + mib(chunk) + " failed with RESOURCE_EXHAUSTED after " + so_far +
           ": memory_free does not return memory to the device");
    }
    expect_status(device, status, OAR_STATUS_OK, "memory_allocate(" + mib(chunk) + ")");
    oar_status_t fill = device.api().memory_fill(stream.handle(), memory, chunk - 1, 0x77, 1);
    oar_status_t synced =
        fill == OAR_STATUS_OK ? device.api().stream_synchronize(stream.handle()) : fill;
    oar_status_t freed = device.api().memory_free(device.handle(), memory);
    expect_status(device, synced, OAR_STATUS_OK, "memory_fill of the last byte, then synchronize");
    expect_status(device, freed, OAR_STATUS_OK, "memory_free");
    const uint64_t resident = resident_bytes();
    expect(resident < resident_start + 2 * chunk,
           "this process's resident memory grew by " + mib(resident - resident_start) + " after " +
               so_far + ": memory_free does not release memory");
  }
}

}  // namespace

void register_large_memory_tests(Registry& registry, const oar_device_properties_t& properties) {
  for (uint32_t kind : listed_kinds(properties)) {
    const std::string k = kind_name(kind);
    add(registry, "memory", k + "/large_copies_every_direction_odd_offsets_with_guards",
        [kind](TestContext& context) { large_copies(context, kind); });
    add(registry, "memory", k + "/large_allocations_aligned_and_usable_to_the_last_byte",
        [kind](TestContext& context) { large_alignment(context, kind); });
  }
  add(registry, "limits", "max_allocation_size_usable_to_the_last_byte", max_allocation_usable);
  add(registry, "limits", "memory_free_returns_memory_no_leak", no_leak);
  add(registry, "limits", "allocating_and_freeing_past_total_memory_never_runs_out",
      allocate_past_total);
}

}  // namespace oar::conformance::abi
