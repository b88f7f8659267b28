// Cost of the caching allocator's fast path (a cached block reused on its own stream) next to
// malloc/free of the same size.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>

#include "bench/bench_util.h"
#include "core/alloc/caching_allocator.h"

namespace oar::alloc {
namespace {

// Hands out distinct fake handles; events are always done.
class TrivialBackend : public AllocatorBackend {
 public:
  Status allocate(size_t /*size*/, void** out_memory) override {
    next_handle_ += 0x1000;
    *out_memory = reinterpret_cast<void*>(next_handle_);
    return Status();
  }
  void deallocate(void* /*memory*/) override {}
  Status record_event(void* /*stream*/, void** out_event) override {
    *out_event = reinterpret_cast<void*>(uintptr_t{1});
    return Status();
  }
  Status query_event(void* /*event*/, bool* out_done) override {
    *out_done = true;
    return Status();
  }
  Status synchronize_event(void* /*event*/) override { return Status(); }
  void release_event(void* /*event*/) override {}

 private:
  uintptr_t next_handle_ = 0;
};

void BM_CachedAllocFree(benchmark::State& state) {
  TrivialBackend backend;
  CachingAllocator allocator(backend);
  void* stream = reinterpret_cast<void*>(uintptr_t{0x51});
  allocator.free(allocator.allocate(1024, stream).value());  // warm the cache
  for (auto _ : state) {
    Block* block = allocator.allocate(1024, stream).value();
    benchmark::DoNotOptimize(block);
    allocator.free(block);
  }
  if (allocator.stats().backend_allocations != 1) state.SkipWithError("cache missed");
}
BENCHMARK(BM_CachedAllocFree);

void BM_MallocFree(benchmark::State& state) {
  for (auto _ : state) {
    void* memory = std::malloc(1024);
    benchmark::DoNotOptimize(memory);
    std::free(memory);
  }
}
BENCHMARK(BM_MallocFree);

// The same through the framework-facing API: Device::allocate returns a Buffer
// (tracked for shutdown) from the cpu device's caching allocator.
void BM_DeviceAllocateFree(benchmark::State& state) {
  Device& device = bench::cpu();
  Stream& stream = device.default_stream();
  { Buffer warm = device.allocate(1024, &stream); }
  for (auto _ : state) {
    Buffer buffer = device.allocate(1024, &stream);
    benchmark::DoNotOptimize(buffer.memory());
  }
}
BENCHMARK(BM_DeviceAllocateFree);

}  // namespace
}  // namespace oar::alloc
