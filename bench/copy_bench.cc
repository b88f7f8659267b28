// 64 MiB host<->device copies on the cpu plugin's streams next to memcpy of
// the same buffers, measured in one run: bytes_per_second is the figure.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "bench/bench_util.h"

namespace oar::bench {
namespace {

constexpr size_t kBytes = 64u << 20;

std::vector<char>& host_buffer() {
  static std::vector<char> buffer(kBytes, 1);  // touched: no page faults in the loop
  return buffer;
}

void BM_Memcpy64MiB(benchmark::State& state) {
  std::vector<char>& src = host_buffer();
  static std::vector<char> dst(kBytes, 2);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kBytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBytes));
}
BENCHMARK(BM_Memcpy64MiB)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_CopyHostToDevice64MiB(benchmark::State& state) {
  Device& device = cpu();
  Buffer buffer = device.allocate(kBytes);
  Stream& stream = device.default_stream();
  stream.fill(buffer, 0, 0, kBytes);  // touched, like the memcpy destination
  stream.synchronize();
  for (auto _ : state) {
    stream.copy_from_host(buffer, 0, host_buffer().data(), kBytes);
    stream.synchronize();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBytes));
}
BENCHMARK(BM_CopyHostToDevice64MiB)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_CopyDeviceToHost64MiB(benchmark::State& state) {
  Device& device = cpu();
  Buffer buffer = device.allocate(kBytes);
  Stream& stream = device.default_stream();
  stream.fill(buffer, 0, 3, kBytes);
  stream.synchronize();
  static std::vector<char> dst(kBytes, 4);
  for (auto _ : state) {
    stream.copy_to_host(dst.data(), buffer, 0, kBytes);
    stream.synchronize();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBytes));
}
BENCHMARK(BM_CopyDeviceToHost64MiB)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace oar::bench
