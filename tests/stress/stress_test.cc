// A bounded stress test of the C++ runtime over real plugins: threads ×
// streams × allocate/free/copy/dispatch/events, with other threads reading
// and trimming the allocator at the same time. Results are checked, so a race
// that corrupts data fails as surely as one that crashes. Run under
// ThreadSanitizer by scripts/test.sh (with OMP_NUM_THREADS=1: the cpu
// kernels' OpenMP runtime is not instrumented). OAR_STRESS_ITERATIONS scales
// it (default 60 per stream).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "oar/oar.hpp"
#include "oar/ops.hpp"

namespace oar::testing {
namespace {

constexpr int kThreads = 4;
constexpr int kStreamsPerThread = 2;

int iterations() {
  const char* text = std::getenv("OAR_STRESS_ITERATIONS");
  int value = text != nullptr ? std::atoi(text) : 0;
  return value > 0 ? value : 60;
}

RuntimeOptions only(const char* manifest) {
  RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = {manifest};
  return options;
}

// One worker: its own streams; every round allocates two inputs of a random
// size, uploads them, adds them on one stream, hands the result to the other
// stream through an event, applies relu there, downloads and checks it.
// Errors from a failed stream (fault injection) are counted, and the stream
// is replaced; everything else is a test failure.
struct Outcome {
  int rounds = 0;
  int stream_failures = 0;
};

void worker(Device& device, int seed, int rounds, bool faults_expected, Outcome* outcome) {
  std::mt19937 rng{uint32_t(seed)};
  std::vector<Stream> streams;
  for (int s = 0; s < kStreamsPerThread; ++s) streams.push_back(device.create_stream());
  Event handoff = device.create_event();
  static const OpId add("add");
  static const OpId relu("relu");
  for (int round = 0; round < rounds; ++round) {
    Stream& first = streams[size_t(round) % streams.size()];
    Stream& second = streams[size_t(round + 1) % streams.size()];
    const int64_t n = 1 + int64_t(rng() % 20000);
    std::vector<float> a(static_cast<size_t>(n));
    std::vector<float> b(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      a[size_t(i)] = float(int64_t(rng() % 200) - 100);
      b[size_t(i)] = float(int64_t(rng() % 200) - 100);
    }
    try {
      Tensor ta = Tensor::empty(device, {n}, dtype::f32, &first);
      Tensor tb = Tensor::empty(device, {n}, dtype::f32, &first);
      Tensor sum = Tensor::empty(device, {n}, dtype::f32, &first);
      ta.copy_from_host(first, a.data());
      tb.copy_from_host(first, b.data());
      dispatch(first, add, {&ta, &tb}, {&sum});
      handoff.record(first);
      second.wait(handoff);
      sum.buffer()->record_stream(second);
      Tensor out = Tensor::empty(device, {n}, dtype::f32, &second);
      dispatch(second, relu, {&sum}, {&out});
      std::vector<float> result(static_cast<size_t>(n));
      out.copy_to_host(second, result.data());
      second.synchronize();
      first.synchronize();  // |a| and |b| must outlive their uploads
      for (int64_t i = 0; i < n; ++i) {
        float expected = std::max(0.0f, a[size_t(i)] + b[size_t(i)]);
        if (result[size_t(i)] != expected) {
          ADD_FAILURE() << "round " << round << " element " << i << ": " << result[size_t(i)]
                        << " != " << expected;
          return;
        }
      }
      if (round % 7 == 0) {
        // Small scratch traffic on one stream, freed at once.
        std::vector<Buffer> scratch;
        for (int k = 0; k < 8; ++k) scratch.push_back(device.allocate(64u << k, &first));
      }
      if (round % 11 == 0) {
        // Streams and events come and go too.
        Stream extra = device.create_stream();
        Event marker = device.create_event();
        marker.record(extra);
        marker.synchronize();
        (void)extra.query();
      }
      ++outcome->rounds;
    } catch (const Error& e) {
      if (!faults_expected) {
        ADD_FAILURE() << e.what();
        return;
      }
      // A failed stream stays failed: replace both, keep going.
      ++outcome->stream_failures;
      for (Stream& stream : streams) stream = device.create_stream();
    }
  }
}

// Reads and trims the allocator while the workers run (the data race of
// Device::memory_stats against the allocator's creation lives here).
void observer(Device& device, const std::atomic<bool>& stop) {
  while (!stop.load()) {
    MemoryStats stats = device.memory_stats();
    EXPECT_GE(stats.reserved_bytes, stats.allocated_bytes);
    device.reset_peak_memory_stats();
    device.empty_cache();
    std::this_thread::yield();
  }
}

void run_stress(Device& device, bool faults_expected) {
  const int rounds = iterations();
  std::atomic<bool> stop{false};
  std::thread watcher(observer, std::ref(device), std::cref(stop));
  std::vector<Outcome> outcomes(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(worker, std::ref(device), 1000 + t, rounds, faults_expected,
                         &outcomes[size_t(t)]);
  }
  for (std::thread& thread : threads) thread.join();
  stop = true;
  watcher.join();
  int completed = 0;
  int failures = 0;
  for (const Outcome& outcome : outcomes) {
    completed += outcome.rounds;
    failures += outcome.stream_failures;
  }
  if (!faults_expected) {
    EXPECT_EQ(completed, kThreads * rounds);
  } else {
    EXPECT_GT(completed, 0) << "no round survived the injected faults";
  }
  device.synchronize();
  device.empty_cache();
  MemoryStats stats = device.memory_stats();
  EXPECT_EQ(stats.active_blocks, 0u);
  EXPECT_EQ(stats.reserved_bytes, 0u)
      << "memory stayed pinned after " << failures << " stream failures";
}

TEST(StressTest, CpuThreadsStreamsAllocateCopyDispatchAndEvents) {
  Runtime runtime(only(OAR_TEST_CPU_MANIFEST));
  ASSERT_FALSE(runtime.devices().empty());
  run_stress(*runtime.devices()[0], false);
}

TEST(StressTest, SimThreadsStreamsAllocateCopyDispatchAndEvents) {
  Runtime runtime(only(OAR_TEST_SIM_MANIFEST));
  ASSERT_FALSE(runtime.devices().empty());
  run_stress(*runtime.devices()[0], false);
}

// Injected kernel faults fail streams at random while other threads carry on:
// no hang, no crash, and the failed streams' memory comes back.
TEST(StressTest, SimWithInjectedKernelFaultsRecoversEveryByte) {
  setenv("OAR_SIM_FAULTS", "kernel:0.05,seed:11,device:0", 1);
  Runtime runtime(only(OAR_TEST_SIM_MANIFEST));
  unsetenv("OAR_SIM_FAULTS");
  ASSERT_FALSE(runtime.devices().empty());
  run_stress(*runtime.devices()[0], true);
}

// Runtimes created and destroyed while others work, all on one plugin.
TEST(StressTest, RuntimesComeAndGoWhileOthersWork) {
  Runtime anchor(only(OAR_TEST_CPU_MANIFEST));
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    while (!stop.load()) {
      Runtime transient(only(OAR_TEST_CPU_MANIFEST));
      Device& device = *transient.devices()[0];
      Tensor t = Tensor::empty(device, {16}, dtype::f32);
      device.default_stream().fill(*t.buffer(), 0, 0, t.nbytes());
      device.synchronize();
    }
  });
  Outcome outcome;
  worker(*anchor.devices()[0], 7, iterations(), false, &outcome);
  stop = true;
  churn.join();
  EXPECT_EQ(outcome.rounds, iterations());
}

}  // namespace
}  // namespace oar::testing
