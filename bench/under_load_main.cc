// main() for the *_loaded benchmark programs: the same benchmarks as their plain
// counterparts (opencl_bench.cc, vulkan_bench.cc), run while the program keeps
// OAR_BENCH_LOAD_THREADS (default 2) busy threads spinning, the competing CPU
// load of issue 18's "round trip under load" target.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  int threads = 2;
  if (const char* text = std::getenv("OAR_BENCH_LOAD_THREADS")) threads = std::atoi(text);
  std::atomic<bool> stop{false};
  std::vector<std::thread> load;
  for (int i = 0; i < threads; ++i) {
    load.emplace_back([&stop] {
      volatile uint64_t counter = 0;
      while (!stop.load(std::memory_order_relaxed)) counter = counter + 1;
    });
  }
  std::fprintf(stderr, "under load: %d busy threads\n", threads);
  benchmark::Initialize(&argc, argv);
  int status = 0;
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    status = 1;
  } else {
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  }
  stop.store(true);
  for (std::thread& thread : load) thread.join();
  return status;
}
