// Fragmentation on recorded allocation traces: each trace in bench/traces/ (format in
// docs/performance.md, "Allocation traces"; recorded with OAR_ALLOC_TRACE) is replayed through
// the caching allocator and through a simulation of the policy that PyTorch's CUDA caching
// allocator documents, and both report peak reserved / peak requested bytes.
//
// The simulation is written from the public description of that allocator (the "Memory
// management" notes of PyTorch's CUDA semantics page and the comments that document the
// allocator's policy): sizes rounded up to multiples of 512 bytes; requests up to 1 MiB from a
// small pool of 2 MiB segments; larger requests from a large pool, with 20 MiB segments for
// requests under 10 MiB and the request rounded up to 2 MiB otherwise; best fit among the
// free blocks of the request's stream and pool; a block is split when the rest is at least
// 512 bytes (small pool) or more than 1 MiB (large pool); blocks above max_split_size are
// never split and serve only requests above max_split_size that waste less than 20 MiB;
// freed blocks merge with free neighbours of the same segment. Nothing is ever released
// (no out-of-memory), as on a device with room to spare.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/alloc/caching_allocator.h"

namespace oar::alloc {
namespace {

// One event of a trace section (one allocator's lifetime).
struct TraceEvent {
  char kind;          // 'a', 'f', 'r', 's', 'e'
  uint64_t id = 0;    // block number (a, f, r)
  uint64_t size = 0;  // requested bytes (a)
  uint64_t stream = 0;
};

struct Trace {
  std::string name;
  std::vector<TraceEvent> events;
};

// Reads a trace file; each "# oar-alloc-trace" header starts a section, and sections with no
// allocation are dropped.
std::vector<Trace> read_trace(const std::filesystem::path& path) {
  std::vector<Trace> sections;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.rfind("# oar-alloc-trace", 0) == 0) {
        sections.push_back(Trace{path.stem().string(), {}});
      }
      continue;
    }
    if (sections.empty()) sections.push_back(Trace{path.stem().string(), {}});
    std::istringstream fields(line);
    TraceEvent event{};
    fields >> event.kind;
    switch (event.kind) {
      case 'a':
        fields >> event.id >> event.size >> event.stream;
        break;
      case 'f':
        fields >> event.id;
        break;
      case 'r':
        fields >> event.id >> event.stream;
        break;
      case 's':
        fields >> event.stream;
        break;
      default:
        break;
    }
    sections.back().events.push_back(event);
  }
  std::vector<Trace> kept;
  for (size_t i = 0; i < sections.size(); ++i) {
    bool allocates = std::any_of(sections[i].events.begin(), sections[i].events.end(),
                                 [](const TraceEvent& e) { return e.kind == 'a'; });
    if (!allocates) continue;
    if (sections.size() > 1) sections[i].name += "#" + std::to_string(i);
    kept.push_back(std::move(sections[i]));
  }
  return kept;
}

// Distinct fake handles; events are always done (a device that keeps up).
class ReplayBackend : public AllocatorBackend {
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

struct Peaks {
  uint64_t requested = 0;  // peak of the live requested bytes
  uint64_t reserved = 0;   // peak of the bytes held from the device
};

void* stream_handle(uint64_t stream) { return reinterpret_cast<void*>(uintptr_t{0x100} + stream); }

Peaks replay_oar(const Trace& trace, uint64_t scale) {
  ReplayBackend backend;
  CachingAllocator allocator(backend);
  std::unordered_map<uint64_t, Block*> live;
  uint64_t requested = 0;
  Peaks peaks;
  for (const TraceEvent& e : trace.events) {
    switch (e.kind) {
      case 'a': {
        Block* block = allocator.allocate(e.size * scale, stream_handle(e.stream)).value();
        live[e.id] = block;
        requested += e.size * scale;
        peaks.requested = std::max(peaks.requested, requested);
        break;
      }
      case 'f': {
        auto it = live.find(e.id);
        if (it == live.end()) break;
        requested -= it->second->requested_size();
        allocator.free(it->second);
        live.erase(it);
        break;
      }
      case 'r': {
        auto it = live.find(e.id);
        if (it != live.end()) allocator.record_stream(it->second, stream_handle(e.stream));
        break;
      }
      case 's':
        allocator.forget_stream(stream_handle(e.stream));
        break;
      case 'e':
        (void)allocator.empty_cache();
        break;
      default:
        break;
    }
  }
  peaks.reserved = allocator.stats().peak_reserved_bytes;
  for (auto& entry : live) allocator.free(entry.second);
  return peaks;
}

// The documented policy of PyTorch's CUDA caching allocator, simulated on offsets.
class PyTorchPolicySim {
 public:
  explicit PyTorchPolicySim(uint64_t max_split_size = UINT64_MAX)
      : max_split_size_(max_split_size) {}

  static constexpr uint64_t kMinBlock = 512;
  static constexpr uint64_t kSmallSize = uint64_t{1} << 20;
  static constexpr uint64_t kSmallBuffer = uint64_t{2} << 20;
  static constexpr uint64_t kLargeBuffer = uint64_t{20} << 20;
  static constexpr uint64_t kMinLargeAlloc = uint64_t{10} << 20;
  static constexpr uint64_t kRoundLarge = uint64_t{2} << 20;

  uint64_t allocate(uint64_t size, uint64_t stream) {
    uint64_t rounded =
        size < kMinBlock ? kMinBlock : (size + kMinBlock - 1) / kMinBlock * kMinBlock;
    bool small = rounded <= kSmallSize;
    FreeSet& pool = small ? small_free_ : large_free_;
    uint64_t index = find(pool, stream, rounded);
    if (index == kNone) {
      uint64_t segment_size = small ? kSmallBuffer
                              : rounded < kMinLargeAlloc
                                  ? kLargeBuffer
                                  : (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
      reserved_ += segment_size;
      peak_reserved_ = std::max(peak_reserved_, reserved_);
      index = new_block(Block{next_segment_++, 0, segment_size, stream, small, false});
    } else {
      pool.erase(key(index));
    }
    Block& block = blocks_[index];
    uint64_t rest = block.size - rounded;
    bool split = small ? rest >= kMinBlock : (block.size <= max_split_size_ && rest > kSmallSize);
    if (split) {
      Block remainder{block.segment, block.offset + rounded, rest, stream, small, true};
      block.size = rounded;
      uint64_t r = new_block(remainder);
      pool.insert(key(r));
      by_place_[{blocks_[r].segment, blocks_[r].offset}] = r;
    }
    blocks_[index].free = false;
    by_place_[{blocks_[index].segment, blocks_[index].offset}] = index;
    return index;
  }

  void free(uint64_t index) {
    Block& block = blocks_[index];
    block.free = true;
    FreeSet& pool = block.small ? small_free_ : large_free_;
    // Merge with the free neighbours in the same segment.
    auto it = by_place_.find({block.segment, block.offset});
    if (it != by_place_.begin()) {
      auto prev = std::prev(it);
      Block& before = blocks_[prev->second];
      if (before.segment == block.segment && before.free &&
          before.offset + before.size == block.offset) {
        pool.erase(key(prev->second));
        before.size += block.size;
        by_place_.erase(it);
        it = prev;
      }
    }
    uint64_t merged = it->second;
    auto next = std::next(it);
    if (next != by_place_.end()) {
      Block& after = blocks_[next->second];
      Block& self = blocks_[merged];
      if (after.segment == self.segment && after.free && self.offset + self.size == after.offset) {
        pool.erase(key(next->second));
        self.size += after.size;
        by_place_.erase(next);
      }
    }
    pool.insert(key(merged));
  }

  uint64_t peak_reserved() const { return peak_reserved_; }

 private:
  static constexpr uint64_t kNone = UINT64_MAX;
  struct Block {
    uint64_t segment, offset, size, stream;
    bool small, free;
  };
  using Key = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t,
                         uint64_t>;  // stream, size, seg, off, index
  using FreeSet = std::set<Key>;

  Key key(uint64_t index) const {
    const Block& b = blocks_[index];
    return {b.stream, b.size, b.segment, b.offset, index};
  }

  uint64_t new_block(const Block& block) {
    blocks_.push_back(block);
    return blocks_.size() - 1;
  }

  uint64_t find(FreeSet& pool, uint64_t stream, uint64_t rounded) const {
    auto it = pool.lower_bound(Key{stream, rounded, 0, 0, 0});
    if (it == pool.end() || std::get<0>(*it) != stream) return kNone;
    uint64_t size = std::get<1>(*it);
    // Oversize blocks: only for oversize requests, and wasting less than 20 MiB.
    if (rounded < max_split_size_ && size >= max_split_size_) return kNone;
    if (rounded >= max_split_size_ && size >= rounded + kLargeBuffer) return kNone;
    return std::get<4>(*it);
  }

  uint64_t max_split_size_;
  std::vector<Block> blocks_;  // never shrinks: indexes stay valid (merged blocks go stale)
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> by_place_;  // live and free blocks by place
  FreeSet small_free_, large_free_;
  uint64_t next_segment_ = 0;
  uint64_t reserved_ = 0;
  uint64_t peak_reserved_ = 0;
};

uint64_t replay_pytorch(const Trace& trace, uint64_t scale) {
  PyTorchPolicySim sim;
  std::unordered_map<uint64_t, uint64_t> live;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == 'a') {
      live[e.id] = sim.allocate(e.size * scale, e.stream);
    } else if (e.kind == 'f') {
      auto it = live.find(e.id);
      if (it == live.end()) continue;
      sim.free(it->second);
      live.erase(it);
    }
  }
  return sim.peak_reserved();
}

// One benchmark per trace section and scale: the time is one replay through OAR's allocator;
// the counters are the fragmentation figures of both policies. The conformance suite's models
// are small (kilobytes per tensor), so each trace is also replayed with every size multiplied
// by 1024 (state.range(0)): the same sequence at the tensor sizes of a real model, where the
// 2 MiB segments no longer dominate.
void BM_Fragmentation(benchmark::State& state, const Trace& trace) {
  const uint64_t scale = static_cast<uint64_t>(state.range(0));
  Peaks oar{};
  for (auto _ : state) {
    oar = replay_oar(trace, scale);
    benchmark::DoNotOptimize(oar);
  }
  uint64_t torch = replay_pytorch(trace, scale);
  uint64_t allocations = static_cast<uint64_t>(std::count_if(
      trace.events.begin(), trace.events.end(), [](const TraceEvent& e) { return e.kind == 'a'; }));
  auto mib = [](uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
  state.counters["allocs"] = static_cast<double>(allocations);
  state.counters["requested_MiB"] = mib(oar.requested);
  state.counters["oar_reserved_MiB"] = mib(oar.reserved);
  state.counters["torch_reserved_MiB"] = mib(torch);
  double requested = std::max<double>(1.0, static_cast<double>(oar.requested));
  state.counters["oar_ratio"] = static_cast<double>(oar.reserved) / requested;
  state.counters["torch_ratio"] = static_cast<double>(torch) / requested;
}

std::vector<Trace>& traces() {
  static std::vector<Trace> all;
  return all;
}

// Registered before main() runs: every *.trace file of the trace folder.
const bool kRegistered = [] {
  std::filesystem::path folder = OAR_BENCH_TRACE_DIR;
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (entry.path().extension() == ".trace") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    for (Trace& trace : read_trace(file)) traces().push_back(std::move(trace));
  }
  traces().shrink_to_fit();
  for (const Trace& trace : traces()) {
    benchmark::RegisterBenchmark(("BM_Fragmentation/" + trace.name).c_str(), BM_Fragmentation,
                                 trace)
        ->ArgName("scale")
        ->Arg(1)
        ->Arg(1024);
  }
  return true;
}();

}  // namespace
}  // namespace oar::alloc
