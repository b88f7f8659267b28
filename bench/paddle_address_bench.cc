// The Paddle adapter's pointer lookup (issue 15: <= 20 ns per kernel
// argument): what adapters/paddle does for each tensor a kernel receives,
// from the void* Paddle holds back to OAR's (memory handle, byte offset):
// AddressSpace::find (subtract, shift, one table load), the offset and its
// bounds check against the allocation, and the buffer's handle and offset
// (runtime.cc's resolve() without its error paths).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "adapters/paddle/address_space.h"
#include "bench/bench_util.h"

namespace oar::bench {
namespace {

// |state.range(0)| live allocations of 4 MiB of addresses each (256 KiB of
// cpu memory behind each: the lookup never touches the bytes), and 4096
// interior pointers spread over them in random order, as a kernel's
// arguments come from wherever Paddle's allocator put them.
void BM_PaddlePointerLookup(benchmark::State& state) {
  const int64_t ranges = state.range(0);
  constexpr uint64_t kPaddleBytes = 4u << 20;
  oar_paddle::AddressSpace space;
  std::vector<char*> bases;
  for (int64_t i = 0; i < ranges; ++i) {
    auto buffer = std::make_unique<Buffer>(cpu().allocate(256 << 10));
    bases.push_back(static_cast<char*>(space.insert(std::move(buffer), kPaddleBytes, 0)));
  }
  std::mt19937_64 rng(1);
  std::vector<const void*> pointers(4096);
  for (const void*& p : pointers) p = bases[rng() % bases.size()] + (rng() % kPaddleBytes) / 4 * 4;
  const uint64_t bytes = 4;
  size_t next = 0;
  for (auto _ : state) {
    const void* pointer = pointers[next];
    next = (next + 1) & 4095;
    const oar_paddle::AddressSpace::Range* range = space.find(pointer);
    if (range == nullptr) state.SkipWithError("pointer not found");
    uint64_t offset = uint64_t(reinterpret_cast<uintptr_t>(pointer) - range->base);
    if (offset > range->size || bytes > range->size - offset) state.SkipWithError("out of range");
    oar_memory_t memory = range->buffer->memory();
    uint64_t byte_offset = range->buffer->offset() + offset;
    benchmark::DoNotOptimize(memory);
    benchmark::DoNotOptimize(byte_offset);
  }
  for (char* base : bases) space.erase(base);
}
BENCHMARK(BM_PaddlePointerLookup)->Arg(16)->Arg(4096);

}  // namespace
}  // namespace oar::bench
