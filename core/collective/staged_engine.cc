#include "core/collective/staged_engine.h"

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "core/loader/plugin.h"
#include "oar/buffer.hpp"
#include "oar/collective.h"
#include "oar/device.hpp"
#include "oar/dtype.hpp"
#include "oar/error.hpp"
#include "oar/stream.hpp"

namespace oar::detail {
namespace {

constexpr uint64_t kAlign = 64;

uint64_t align_up(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

uint64_t env_chunk_bytes() {
  const char* text = secure_getenv("OAR_COMM_CHUNK_KB");
  if (text == nullptr) return uint64_t(1) << 20;
  char* end = nullptr;
  unsigned long long kb = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || kb == 0 || kb > (uint64_t(1) << 22)) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                std::string("OAR_COMM_CHUNK_KB=\"") + text + "\" is not a size in KiB (1 .. 2^22)");
  }
  return uint64_t(kb) << 10;
}

bool env_force_staging() {
  const char* text = secure_getenv("OAR_COMM_STAGING");
  return text != nullptr && std::strcmp(text, "always") == 0;
}

// The host address of |buffer| + |offset|, or null when the host cannot
// address it. A kDLCPU device's handles are host pointers (docs/abi.md,
// section 5), so that is the one case the core computes an address itself.
char* host_pointer(const Buffer& buffer, uint64_t offset) {
  if (buffer.kind() != OAR_MEMORY_KIND_DEVICE) {
    return static_cast<char*>(buffer.host_address()) + offset;
  }
  if (buffer.device().properties().dlpack_device_type == kDLCPU) {
    return reinterpret_cast<char*>(buffer.memory()) + buffer.offset() + offset;
  }
  return nullptr;
}

// One block of staging host memory: pinned memory of the device when it has
// HOST_PINNED, plain aligned memory otherwise.
struct HostMemory {
  Buffer pinned;
  char* plain = nullptr;
  char* data = nullptr;
  uint64_t size = 0;
  ~HostMemory() { free(plain); }
};

struct Segment {
  const Buffer* buffer;
  uint64_t offset;  // relative to the buffer
  uint64_t host;    // relative to the slot
  uint64_t bytes;
};

// A HostOp whose pointers may be slot-relative until the slot is known.
struct PlannedOp {
  HostOp op;
  int64_t send_slot = -1;  // offset in the slot, or -1: op.send is absolute
  int64_t recv_slot = -1;
};

struct Step {
  std::vector<Segment> d2h;
  std::vector<PlannedOp> ops;
  std::vector<Segment> h2d;
  uint64_t slot_bytes = 0;
};

std::vector<HostOp> resolve(const Step& step, char* slot) {
  std::vector<HostOp> ops;
  ops.reserve(step.ops.size());
  for (const PlannedOp& planned : step.ops) {
    HostOp op = planned.op;
    if (planned.send_slot >= 0) op.send = slot + planned.send_slot;
    if (planned.recv_slot >= 0) op.recv = slot + planned.recv_slot;
    ops.push_back(op);
  }
  return ops;
}

// One transport step handed to the progress thread.
struct Job {
  std::vector<HostOp> ops;
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  Status status;

  void finish(Status s) {
    std::lock_guard<std::mutex> lock(mutex);
    status = std::move(s);
    done = true;
    done_cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    done_cv.wait(lock, [&] { return done; });
  }
};

class StagedEngine final : public CommEngine {
 public:
  StagedEngine(Device& device, std::unique_ptr<Transport> transport)
      : device_(device),
        transport_(std::move(transport)),
        chunk_bytes_(env_chunk_bytes()),
        force_staging_(env_force_staging()) {
    // Whether every rank's device memory is host-addressable (and staging
    // not forced): then no rank stages, and operations need not be cut.
    // And whether every rank validates (OAR_VALIDATE=1): then the ranks'
    // arguments are compared before each step.
    uint8_t mine[2] = {uint8_t(!force_staging_ && device.properties().dlpack_device_type == kDLCPU),
                       uint8_t(device.plugin().validating())};
    uint8_t all[2] = {0, 0};
    Status agreed = transport_->run(
        {HostOp{CollKind::kAllReduce, mine, all, 2, dtype::u8, OAR_REDUCE_OP_MIN, 0, 2}});
    if (!agreed.ok()) throw Error(agreed.code(), "creating the communicator: " + agreed.message());
    all_direct_ = all[0] != 0;
    validating_ = all[1] != 0;
    transport_->set_checking(validating_);
    progress_ = std::thread([this] { progress_loop(); });
    track(&device_);
  }

  ~StagedEngine() override {
    if (!released_.exchange(true)) untrack(&device_);
    {
      // Every callback already submitted must run before the state goes.
      std::unique_lock<std::mutex> lock(mutex_);
      callbacks_cv_.wait(lock, [&] { return outstanding_ == 0; });
      stop_ = true;
      jobs_cv_.notify_all();
    }
    progress_.join();
  }

  int32_t rank() const override { return transport_->rank(); }
  int32_t size() const override { return transport_->size(); }
  Device& device() const override { return device_; }
  const char* name() const override { return transport_->name(); }

  Status error() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.ok() && released_.load()) return released_status();
    return error_;
  }

  // The runtime is closing the device; its streams are drained after this,
  // so the steps already submitted still run (peers wait for them). Later
  // operations are refused.
  void release() noexcept override {
    if (released_.exchange(true)) return;
    untrack(&device_);
  }

  void abort() override {
    transport_->abort();
    set_error(Status(OAR_STATUS_ABORTED, "the communicator was aborted"));
  }

  void submit(const std::vector<CollOp>& ops, Stream& stream) override {
    if (!device_.has_feature(OAR_DEVICE_FEATURE_HOST_CALLBACKS)) {
      throw Error(OAR_STATUS_UNIMPLEMENTED,
                  device_.name() +
                      " has no host callbacks (OAR_DEVICE_FEATURE_HOST_CALLBACKS), which the "
                      "host-staged collectives order their steps with",
                  device_.plugin_name());
    }
    std::vector<Step> steps = plan(ops);
    if (steps.empty()) return;
    try {
      enqueue(std::move(steps), stream);
    } catch (const Error& e) {
      // Part of the operation may be queued and peers may wait for the
      // rest: the communicator cannot go on.
      set_error(Status(e.code(), std::string("submitting a collective failed: ") + e.message()));
      transport_->abort();
      throw;
    }
  }

 private:
  // --- planning -----------------------------------------------------------

  bool direct(const CollOp& op) const {
    if (force_staging_) return false;
    if (op.send != nullptr && host_pointer(*op.send, 0) == nullptr) return false;
    if (op.recv != nullptr && host_pointer(*op.recv, 0) == nullptr) return false;
    return true;
  }

  // Adds elements [first, first + n) of every block of |op| to |step|.
  void plan_piece(const CollOp& op, uint64_t first, uint64_t n, bool staged, Step& step) const {
    const uint64_t es = dtype_size(op.dtype);
    const int32_t ranks = size();
    const uint64_t send_blocks =
        op.kind == CollKind::kReduceScatter || op.kind == CollKind::kAllToAll ? ranks : 1;
    const uint64_t recv_blocks =
        op.kind == CollKind::kAllGather || op.kind == CollKind::kAllToAll ? ranks : 1;
    PlannedOp planned;
    planned.op =
        HostOp{op.kind, nullptr, nullptr, n, op.dtype, op.op, op.peer, op.count, first == 0};
    if (op.send != nullptr) {
      if (staged) {
        planned.send_slot = int64_t(step.slot_bytes);
        for (uint64_t b = 0; b < send_blocks; ++b) {
          step.d2h.push_back(Segment{op.send, op.send_offset + (b * op.count + first) * es,
                                     step.slot_bytes + b * n * es, n * es});
        }
        step.slot_bytes = align_up(step.slot_bytes + send_blocks * n * es);
      } else {
        planned.op.send = host_pointer(*op.send, op.send_offset + first * es);
      }
    }
    if (op.recv != nullptr) {
      bool shared = staged && op.send == op.recv && op.send_offset == op.recv_offset &&
                    send_blocks == recv_blocks &&
                    (op.kind == CollKind::kAllReduce || op.kind == CollKind::kReduce);
      if (!staged) {
        planned.op.recv = host_pointer(*op.recv, op.recv_offset + first * es);
      } else {
        uint64_t region = shared ? uint64_t(planned.send_slot) : step.slot_bytes;
        planned.recv_slot = int64_t(region);
        for (uint64_t b = 0; b < recv_blocks; ++b) {
          Segment segment{op.recv, op.recv_offset + (b * op.count + first) * es,
                          region + b * n * es, n * es};
          // Validating, a step the ranks disagree on is refused after its
          // copies were queued: the copy back then writes what was there.
          if (validating_ && !shared) step.d2h.push_back(segment);
          step.h2d.push_back(segment);
        }
        if (!shared) step.slot_bytes = align_up(step.slot_bytes + recv_blocks * n * es);
      }
    }
    step.ops.push_back(planned);
  }

  std::vector<Step> plan(const std::vector<CollOp>& ops) const {
    std::vector<Step> steps;
    const uint64_t max_count = transport_->max_count();
    if (ops.size() == 1) {
      const CollOp& op = ops[0];
      if (op.count == 0) return steps;
      // Every rank must cut an operation into the same pieces (MPI matches
      // them one to one), so the chunk depends on nothing of this rank's.
      const bool multi_block = op.kind == CollKind::kAllGather ||
                               op.kind == CollKind::kReduceScatter ||
                               op.kind == CollKind::kAllToAll;
      const uint64_t blocks = op.kind == CollKind::kAllToAll ? 2 * size()
                              : multi_block                  ? size() + 1
                                                             : 2;
      // Where every rank hands host memory to the transport, it is not cut.
      const uint64_t chunk =
          all_direct_ ? max_count
                      : std::min(max_count, std::max<uint64_t>(
                                                1, chunk_bytes_ / (dtype_size(op.dtype) * blocks)));
      // Host memory is handed to the transport as it is, in the same pieces;
      // blocks of several ranks' chunks are not contiguous there, so a
      // multi-block operation of more than one chunk is staged regardless.
      const bool staged = !direct(op) || (multi_block && chunk < op.count);
      if (!staged) steps.emplace_back();
      for (uint64_t first = 0; first < op.count; first += chunk) {
        if (staged) steps.emplace_back();
        plan_piece(op, first, std::min(chunk, op.count - first), staged, steps.back());
      }
      return steps;
    }
    // A group: one step, every operation whole.
    steps.emplace_back();
    for (const CollOp& op : ops) {
      if (op.count == 0) continue;
      if (op.count > max_count) {
        throw Error(OAR_STATUS_INVALID_ARGUMENT,
                    std::string(coll_name(op.kind)) + " in a group: " + std::to_string(op.count) +
                        " elements exceed the transport's limit of " + std::to_string(max_count));
      }
      plan_piece(op, 0, op.count, !direct(op), steps.back());
    }
    if (steps.back().ops.empty()) steps.clear();
    return steps;
  }

  // --- submission ---------------------------------------------------------

  struct OpState {
    std::vector<Step> steps;
    std::shared_ptr<HostMemory> slots[2];
    std::vector<std::shared_ptr<Job>> jobs;
  };

  char* slot_of(const OpState& state, size_t k) const {
    const auto& memory = state.slots[k % 2];
    return memory ? memory->data : nullptr;
  }

  // Adds a host callback that counts as outstanding until it returned.
  void add_callback(Stream& stream, std::function<void(oar_status_t)> body) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++outstanding_;
    }
    try {
      stream.add_callback([this, body = std::move(body)](oar_status_t status) {
        body(status);
        std::lock_guard<std::mutex> lock(mutex_);
        if (--outstanding_ == 0) callbacks_cv_.notify_all();
      });
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--outstanding_ == 0) callbacks_cv_.notify_all();
      throw;
    }
  }

  void copies_to_host(Stream& stream, const Step& step, char* slot) {
    for (const Segment& s : step.d2h) {
      if (s.bytes > 0) stream.copy_to_host(slot + s.host, *s.buffer, s.offset, s.bytes);
    }
  }

  void copies_to_device(Stream& stream, const Step& step, char* slot) {
    for (const Segment& s : step.h2d) {
      if (s.bytes > 0) stream.copy_from_host(*s.buffer, s.offset, slot + s.host, s.bytes);
    }
  }

  void enqueue(std::vector<Step> steps, Stream& stream) {
    auto state = std::make_shared<OpState>();
    state->steps = std::move(steps);
    const size_t n = state->steps.size();
    const uint64_t slot_bytes = state->steps[0].slot_bytes;
    if (slot_bytes > 0) {
      state->slots[0] = acquire(slot_bytes);
      if (n > 1) state->slots[1] = acquire(slot_bytes);
    }
    bool staged = slot_bytes > 0;
    if (n == 1) {
      // One step: the transport runs in the callback itself (no hand-off).
      if (staged) copies_to_host(stream, state->steps[0], slot_of(*state, 0));
      add_callback(stream, [this, state](oar_status_t) {
        (void)execute(resolve(state->steps[0], slot_of(*state, 0)));
      });
      if (staged) copies_to_device(stream, state->steps[0], slot_of(*state, 0));
    } else {
      state->jobs.resize(n);
      for (size_t k = 0; k < n; ++k) {
        state->jobs[k] = std::make_shared<Job>();
        copies_to_host(stream, state->steps[k], slot_of(*state, k));
        add_callback(stream, [this, state, k](oar_status_t) {
          state->jobs[k]->ops = resolve(state->steps[k], slot_of(*state, k));
          post(state->jobs[k]);
        });
        if (k >= 1) {
          add_callback(stream, [state, k](oar_status_t) { state->jobs[k - 1]->wait(); });
          copies_to_device(stream, state->steps[k - 1], slot_of(*state, k - 1));
        }
      }
      add_callback(stream, [state, n](oar_status_t) { state->jobs[n - 1]->wait(); });
      copies_to_device(stream, state->steps[n - 1], slot_of(*state, n - 1));
    }
    if (staged) {
      // The staging memory is reusable once the last copy back is done.
      add_callback(stream, [this, state](oar_status_t) {
        release(std::move(state->slots[0]));
        release(std::move(state->slots[1]));
      });
    }
  }

  // --- transport steps ----------------------------------------------------

  Status execute(const std::vector<HostOp>& ops) {
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_.ok()) return error_;
    }
    Status status = transport_->run(ops);
    if (!status.ok()) set_error(status);
    return status;
  }

  void post(std::shared_ptr<Job> job) {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
    jobs_cv_.notify_all();
  }

  void progress_loop() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        jobs_cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job->finish(execute(job->ops));
    }
  }

  void set_error(Status status) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.ok()) error_ = std::move(status);
  }

  // --- staging memory -----------------------------------------------------

  std::shared_ptr<HostMemory> acquire(uint64_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // Smallest free block that fits; the pool keeps a few blocks at most.
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if ((*it)->size >= bytes && (best == free_.end() || (*it)->size < (*best)->size)) best = it;
      }
      if (best != free_.end()) {
        std::shared_ptr<HostMemory> memory = std::move(*best);
        free_.erase(best);
        return memory;
      }
      if (free_.size() > 4) {
        // Too many that do not fit: drop the smallest (on this, the caller's,
        // thread: freeing device-pinned memory may synchronize).
        auto smallest =
            std::min_element(free_.begin(), free_.end(),
                             [](const auto& a, const auto& b) { return a->size < b->size; });
        free_.erase(smallest);
      }
    }
    auto memory = std::make_shared<HostMemory>();
    memory->size = bytes;
    if (device_.has_memory_kind(OAR_MEMORY_KIND_HOST_PINNED)) {
      memory->pinned = device_.allocate_uncached(bytes, OAR_MEMORY_KIND_HOST_PINNED);
      memory->data = static_cast<char*>(memory->pinned.host_address());
    } else {
      memory->plain = static_cast<char*>(aligned_alloc(kAlign, align_up(bytes)));
      if (memory->plain == nullptr) {
        throw Error(OAR_STATUS_RESOURCE_EXHAUSTED,
                    "collective staging: no host memory for " + std::to_string(bytes) + " bytes");
      }
      memory->data = memory->plain;
    }
    return memory;
  }

  // Called on a plugin thread: only returns the block to the pool.
  void release(std::shared_ptr<HostMemory> memory) {
    if (!memory) return;
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(memory));
  }

  Device& device_;
  std::unique_ptr<Transport> transport_;
  const uint64_t chunk_bytes_;
  const bool force_staging_;
  bool all_direct_ = false;
  std::atomic<bool> released_{false};  // untracked
  bool validating_ = false;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable callbacks_cv_;
  std::condition_variable jobs_cv_;
  int64_t outstanding_ = 0;  // host callbacks submitted and not yet returned
  bool stop_ = false;
  std::deque<std::shared_ptr<Job>> jobs_;
  std::vector<std::shared_ptr<HostMemory>> free_;
  Status error_;

  std::mutex run_mutex_;  // one transport step at a time
  std::thread progress_;
};

}  // namespace

std::unique_ptr<CommEngine> make_staged_engine(Device& device,
                                               std::unique_ptr<Transport> transport) {
  return std::make_unique<StagedEngine>(device, std::move(transport));
}

}  // namespace oar::detail
