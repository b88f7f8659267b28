// The soak (issue 12): many kernel launches and allocate/free cycles on one
// runtime, with the process's resident memory (RSS) measured after a warm-up
// and at the end, each time after empty_cache() and malloc_trim(0), so that
// what the allocator caches on purpose does not count. A leak of a few bytes
// per launch or per cycle shows as growth; the run fails if RSS grew by 1 %
// or more. Not part of the default test run; docs/performance.md has the
// figures.
//
// Usage: oar_soak [--launches N] [--cycles N] [--plugin MANIFEST] [--device NAME]
//   defaults: 1,000,000 launches, 100,000 cycles, this build's cpu plugin.
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "oar/oar.hpp"

namespace {

// Resident set size in bytes, from /proc/self/statm, once the caching
// allocator has returned its cached segments (their touched pages are cache,
// not leak) and the C library has returned its free heap pages.
uint64_t rss_bytes(oar::Device& device) {
  device.synchronize();
  device.empty_cache();
  malloc_trim(0);
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  uint64_t resident = 0;
  statm >> pages >> resident;
  return resident * uint64_t(sysconf(_SC_PAGESIZE));
}

struct Options {
  int64_t launches = 1000000;
  int64_t cycles = 100000;
  std::string plugin = OAR_SOAK_CPU_MANIFEST;
  std::string device;
};

// Kernel launches: relu in place on a small tensor, alternating two streams
// ordered by an event, synchronized every 1000 launches.
void launch(oar::Device& device, oar::Stream& a, oar::Stream& b, oar::Event& event, int64_t count) {
  static const oar::OpId relu("relu");
  oar::Tensor x = oar::Tensor::empty(device, {256}, oar::dtype::f32, &a);
  a.fill(*x.buffer(), 0, 0, x.nbytes());
  for (int64_t i = 0; i < count; ++i) {
    oar::Stream& stream = (i / 1000) % 2 == 0 ? a : b;
    oar::dispatch(stream, relu, {&x}, {&x});
    if (i % 1000 == 999) {
      event.record(stream);
      (stream.handle() == a.handle() ? b : a).wait(event);
      stream.synchronize();
    }
  }
  a.synchronize();
  b.synchronize();
}

// Allocate/free cycles: sizes from 256 B to 4 MiB, on two streams, some used
// on the other stream too, with a host copy into each.
void cycle(oar::Device& device, oar::Stream& a, oar::Stream& b, int64_t count) {
  std::vector<uint8_t> host(4096, 1);
  uint64_t state = 12345;
  for (int64_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t size = uint64_t(256) << ((state >> 33) % 15);  // 256 B .. 4 MiB
    oar::Stream& stream = i % 2 == 0 ? a : b;
    oar::Buffer buffer = device.allocate(size, &stream);
    stream.copy_from_host(buffer, 0, host.data(), std::min<uint64_t>(size, host.size()));
    if (i % 8 == 0) buffer.record_stream(i % 2 == 0 ? b : a);
    if (i % 1000 == 999) {
      a.synchronize();
      b.synchronize();
    }
  }
  a.synchronize();
  b.synchronize();
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--launches") {
      options.launches = std::atoll(argv[i + 1]);
    } else if (flag == "--cycles") {
      options.cycles = std::atoll(argv[i + 1]);
    } else if (flag == "--plugin") {
      options.plugin = argv[i + 1];
    } else if (flag == "--device") {
      options.device = argv[i + 1];
    } else {
      std::fprintf(stderr, "unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  oar::RuntimeOptions runtime_options;
  runtime_options.use_environment = false;
  runtime_options.search_install_prefix = false;
  runtime_options.plugin_files = {options.plugin};
  oar::Runtime runtime(runtime_options);
  if (runtime.devices().empty()) {
    std::fprintf(stderr, "no device in %s\n", options.plugin.c_str());
    return 2;
  }
  oar::Device& device =
      options.device.empty() ? *runtime.devices()[0] : runtime.device(options.device);
  oar::Stream a = device.create_stream();
  oar::Stream b = device.create_stream();
  oar::Event event = device.create_event();

  // Warm-up: every cache, pool and lazily made structure reaches its size.
  launch(device, a, b, event, std::min<int64_t>(options.launches, 20000));
  cycle(device, a, b, std::min<int64_t>(options.cycles, 20000));
  const uint64_t before = rss_bytes(device);
  auto start = std::chrono::steady_clock::now();

  launch(device, a, b, event, options.launches);
  const uint64_t after_launches = rss_bytes(device);
  cycle(device, a, b, options.cycles);
  const uint64_t after = rss_bytes(device);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  double growth = 100.0 * (double(after) - double(before)) / double(before);
  oar::MemoryStats stats = device.memory_stats();
  std::printf("device %s: %lld launches, %lld allocate/free cycles in %.1f s\n",
              device.name().c_str(), static_cast<long long>(options.launches),
              static_cast<long long>(options.cycles), seconds);
  std::printf(
      "RSS after warm-up %.2f MiB, after launches %.2f MiB, at the end %.2f MiB: %+.3f %%\n",
      double(before) / 1048576.0, double(after_launches) / 1048576.0, double(after) / 1048576.0,
      growth);
  std::printf("allocator: reserved %.2f MiB in %llu segments, %llu active blocks\n",
              double(stats.reserved_bytes) / 1048576.0,
              static_cast<unsigned long long>(stats.segment_count),
              static_cast<unsigned long long>(stats.active_blocks));
  if (growth >= 1.0) {
    std::printf("FAIL: RSS grew by 1 %% or more\n");
    return 1;
  }
  std::printf("OK: RSS growth under 1 %%\n");
  return 0;
}
