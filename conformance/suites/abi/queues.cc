// Deep queues: thousands of operations (fills, h2d, d2d copies, kernels, event
// records) queued before one wait. Each operation's result feeds the next, and
// every step leaves a snapshot, so the bytes read back at the end show any
// operation that was dropped, reordered or not finished when the wait
// returned. Where the device has host callbacks, a probe at the head keeps the
// whole queue pending while it is built (so "idle" and "done" can be checked
// against the ground truth) and a probe at the tail must have run when a wait
// returns.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "conformance/suites/abi/abi_util.h"
#include "oar/dispatch.hpp"

namespace oar::conformance::abi {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kState = 64;    // bytes of state each step changes and snapshots
constexpr int kElements = 16;      // f32 elements a kernel adds
constexpr int kEventEvery = 32;    // steps between event records
constexpr int kMaxSteps = 2048;    // 2 operations each
constexpr int kMaxKernels = 512;   // 2 operations each (h2d of the increment, add)
constexpr auto kHeadHold = 100ms;  // the head probe: longer than building the queue takes

struct Depth {
  int steps = kMaxSteps;
  int kernels = kMaxKernels;
};

// One chain of dependent operations on device buffers:
//  step i:   fill one byte of |state| (odd i) or copy one byte into it from
//            the host (even i), then d2d all of |state| into slot i of |log|;
//  kernel k: h2d the k-th increment into |inc| (one buffer for every kernel:
//            it must not be overwritten before the previous add read it), then
//            klog[k + 1] = klog[k] + inc.
class DeepQueue {
 public:
  DeepQueue(Device& device, Depth depth)
      : device_(device),
        depth_(depth),
        state_(device.allocate_uncached(kState)),
        log_(device.allocate_uncached(kState * uint64_t(depth.steps))),
        klog_(std::make_shared<Buffer>(
            device.allocate_uncached(sizeof(float) * kElements * uint64_t(depth.kernels + 1)))),
        inc_(std::make_shared<Buffer>(device.allocate_uncached(sizeof(float) * kElements))),
        bytes_(pattern(size_t(depth.steps), 97)),
        increments_(size_t(depth.kernels) * kElements),
        log_host_(kState * size_t(depth.steps)),
        klog_host_(sizeof(float) * kElements * size_t(depth.kernels + 1)) {
    for (size_t i = 0; i < increments_.size(); ++i)
      increments_[i] = float(1 + (i * 7 + i / 16) % 5);
  }

  int operations() const {
    return 2 * depth_.steps + 2 * depth_.kernels + depth_.steps / kEventEvery + 4;
  }
  std::vector<Event>& events() { return events_; }

  // Queues the chain on |stream|.
  void submit(Stream& stream) {
    static const OpId add("add");
    stream.fill(state_, 0, 0, kState);
    stream.fill(*klog_, 0, 0, sizeof(float) * kElements);  // klog[0] = 0.0f
    int kernel = 0;
    for (int i = 0; i < depth_.steps; ++i) {
      if (i % 2 == 1) {
        stream.fill(state_, uint64_t(i) % kState, fill_value(i), 1);
      } else {
        stream.copy_from_host(state_, uint64_t(i) * 7 % kState, &bytes_[size_t(i)], 1);
      }
      stream.copy(log_, kState * uint64_t(i), state_, 0, kState);
      while (kernel < depth_.kernels &&
             int64_t(kernel) * depth_.steps <= int64_t(i) * depth_.kernels) {
        stream.copy_from_host(*inc_, 0, &increments_[size_t(kernel) * kElements],
                              sizeof(float) * kElements);
        Tensor in = slot(kernel), out = slot(kernel + 1);
        Tensor inc = Tensor::view(inc_, {kElements}, dtype::f32);
        dispatch(stream, add, {&in, &inc}, {&out});
        ++kernel;
      }
      if (i % kEventEvery == kEventEvery - 1) {
        events_.push_back(device_.create_event());
        events_.back().record(stream);
      }
    }
  }

  // Queues the read-back of every result to the host on |stream|.
  void read_back(Stream& stream) {
    stream.copy_to_host(log_host_.data(), log_, 0, log_host_.size());
    stream.copy_to_host(klog_host_.data(), *klog_, 0, klog_host_.size());
  }

  // Checks what read_back brought; |after| says what the test waited for.
  void check(const std::string& after) const {
    const std::string where =
        " after " + after + " of a queue of " + std::to_string(operations()) + " operations";
    log_host_.expect_guards("a d2h copy" + where);
    klog_host_.expect_guards("a d2h copy" + where);
    std::vector<uint8_t> state(kState, 0);
    std::vector<uint8_t> log = log_host_.contents();
    for (int i = 0; i < depth_.steps; ++i) {
      if (i % 2 == 1) {
        state[size_t(i) % kState] = fill_value(i);
      } else {
        state[size_t(i) * 7 % kState] = bytes_[size_t(i)];
      }
      if (std::memcmp(&log[kState * size_t(i)], state.data(), kState) != 0) {
        fail("the snapshot of step " + std::to_string(i) + " of " + std::to_string(depth_.steps) +
             " (operations " + std::to_string(2 * i) + " and " + std::to_string(2 * i + 1) +
             " of the chain of fills, h2d and d2d copies) is wrong" + where +
             ": an operation was dropped, ran out of order, or had not finished");
      }
    }
    std::vector<uint8_t> klog = klog_host_.contents();
    float sum[kElements] = {};
    for (int k = 0; k < depth_.kernels; ++k) {
      for (int e = 0; e < kElements; ++e) sum[e] += increments_[size_t(k) * kElements + size_t(e)];
      float got[kElements];
      std::memcpy(got, &klog[sizeof(float) * kElements * size_t(k + 1)], sizeof got);
      for (int e = 0; e < kElements; ++e) {
        if (got[e] == sum[e]) continue;
        fail("the result of kernel " + std::to_string(k) + " of " + std::to_string(depth_.kernels) +
             " (add, each reading the one before and an "
             "increment copied in just before it) is " +
             std::to_string(got[e]) + " at element " + std::to_string(e) + ", expected " +
             std::to_string(sum[e]) + where +
             ": a kernel or copy was dropped, ran out of order, or had not finished");
      }
    }
  }

  void expect_events_complete(const std::string& after) {
    for (size_t i = 0; i < events_.size(); ++i) {
      expect(events_[i].query(), "event " + std::to_string(i) + " of " +
                                     std::to_string(events_.size()) +
                                     " recorded inside the queue is not complete after " + after);
    }
  }

 private:
  static uint8_t fill_value(int i) { return uint8_t(i * 13 + 1); }
  Tensor slot(int k) const {
    return Tensor::view(klog_, {kElements}, dtype::f32, {},
                        sizeof(float) * kElements * uint64_t(k));
  }

  Device& device_;
  Depth depth_;
  Buffer state_;
  Buffer log_;
  std::shared_ptr<Buffer> klog_;
  std::shared_ptr<Buffer> inc_;
  std::vector<uint8_t> bytes_;
  std::vector<float> increments_;
  GuardedHost log_host_;
  GuardedHost klog_host_;
  std::vector<Event> events_;
};

// The depth a device runs in about a second: kMaxSteps and kMaxKernels on any
// device that runs a step (two small copies) within ~0.3 ms and a small kernel
// within ~0.8 ms, fewer (and said on the test's output) on slower ones, so that a slow
// but correct device stays within the test's time. Copies and kernels are
// timed apart (a device may be slow at one only, or only at synchronizing),
// after a first run that pays for compiling the kernel. Measured once per
// process.
Depth depth_for(Device& device) {
  static Depth depth = [&] {
    Stream stream = device.create_stream();
    auto timed = [&](Depth d) {
      DeepQueue sample(device, d);
      auto start = std::chrono::steady_clock::now();
      sample.submit(stream);
      sample.read_back(stream);
      stream.synchronize();
      sample.check("a short queue (to time the device)");
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    // Differences of queue lengths: the synchronize each run ends with cancels.
    constexpr int kShort = 64, kLong = 256, kKernels = 4;
    timed(Depth{2, 1});
    const double short_queue = timed(Depth{kShort, 0});
    const double long_queue = timed(Depth{kLong, 0});
    const double per_step = std::max(long_queue - short_queue, 0.0) / (kLong - kShort);
    double per_kernel = std::max(timed(Depth{kShort, kKernels}) - short_queue, 0.0) / kKernels;
    if (per_kernel < 0.005) {  // fast: time more kernels, so that a hiccup weighs less
      per_kernel = std::max(timed(Depth{kShort, 8 * kKernels}) - short_queue, 0.0) / (8 * kKernels);
    }
    Depth d;
    d.steps = std::clamp(int(0.6 / std::max(per_step, 1e-9)), 64, kMaxSteps);
    d.kernels = std::clamp(int(0.4 / std::max(per_kernel, 1e-9)), kKernels, kMaxKernels);
    if (d.steps < kMaxSteps || d.kernels < kMaxKernels) {
      std::printf("deep queues: %.3f ms per step, %.3f ms per kernel: %d steps, %d kernels\n",
                  per_step * 1e3, per_kernel * 1e3, d.steps, d.kernels);
    }
    return d;
  }();
  return depth;
}

std::unique_ptr<Probe> maybe_probe(Stream& stream, std::chrono::milliseconds hold) {
  return has_callbacks(stream.device()) ? std::make_unique<Probe>(stream, hold) : nullptr;
}

void stream_synchronize_covers(TestContext& context) {
  Device& device = context.device;
  Depth depth = depth_for(device);
  DeepQueue queue(device, depth);
  Stream stream = device.create_stream();
  SynchronizeOnExit drain{device};
  std::unique_ptr<Probe> head = maybe_probe(stream, kHeadHold);
  queue.submit(stream);
  queue.read_back(stream);
  std::unique_ptr<Probe> tail = maybe_probe(stream, 0ms);
  const std::string n = std::to_string(queue.operations());
  if (head) {
    bool idle = stream.query();
    bool head_done = head->finished();  // read after the query
    expect(!idle || head_done,
           "stream_query reported the stream idle while a host callback "
           "queued before " +
               n + " operations was still running");
  }
  stream.synchronize();
  if (tail) {
    expect(tail->finished(), "stream_synchronize returned before a host callback queued after " +
                                 n + " operations had run");
  }
  queue.check("one stream_synchronize");
  queue.expect_events_complete("stream_synchronize");
}

void event_synchronize_covers(TestContext& context) {
  Device& device = context.device;
  Depth depth = depth_for(device);
  DeepQueue queue(device, depth);
  Stream stream = device.create_stream();
  SynchronizeOnExit drain{device};
  std::unique_ptr<Probe> head = maybe_probe(stream, kHeadHold);
  queue.submit(stream);
  queue.read_back(stream);
  std::unique_ptr<Probe> tail = maybe_probe(stream, 0ms);
  Event done = device.create_event();
  done.record(stream);
  const std::string n = std::to_string(queue.operations());
  if (head) {
    bool complete = done.query();
    bool head_done = head->finished();  // read after the query
    expect(!complete || head_done,
           "event_query reported an event recorded after " + n +
               " operations complete while a host callback queued before them was still running");
  }
  done.synchronize();
  if (tail) {
    expect(tail->finished(),
           "event_synchronize returned before a host callback queued (before "
           "the record) after " +
               n + " operations had run");
  }
  queue.check("event_synchronize of an event recorded after them");
  expect(done.query(), "event_query reports incomplete an event after its event_synchronize");
  queue.expect_events_complete("event_synchronize of a later event");
  stream.synchronize();
}

void stream_wait_event_covers(TestContext& context) {
  Device& device = context.device;
  Depth depth = depth_for(device);
  DeepQueue queue(device, depth);
  Stream producer = device.create_stream();
  Stream consumer = device.create_stream();
  SynchronizeOnExit drain{device};
  std::unique_ptr<Probe> head = maybe_probe(producer, kHeadHold);
  queue.submit(producer);
  std::unique_ptr<Probe> tail = maybe_probe(producer, 0ms);
  Event produced = device.create_event();
  produced.record(producer);
  consumer.wait(produced);
  std::unique_ptr<Probe> waited = maybe_probe(consumer, 0ms);
  queue.read_back(consumer);
  const std::string n = std::to_string(queue.operations());
  if (head) {
    bool idle = consumer.query();
    bool head_done = head->finished();  // read after the query
    expect(!idle || head_done,
           "the consumer stream was idle while a host callback queued on the "
           "producer before the awaited event was still running");
  }
  consumer.synchronize();
  if (tail) {
    expect(waited->started_at() >= tail->finished_at(),
           "work queued after stream_wait_event ran before the " + n +
               " operations before the awaited event's record had finished");
  }
  queue.check(
      "stream_wait_event on an event recorded after them, then stream_synchronize of the "
      "waiting stream");
  producer.synchronize();
}

void device_synchronize_covers(TestContext& context) {
  Device& device = context.device;
  Depth depth = depth_for(device);
  depth.steps = std::max(64, depth.steps / 2);
  depth.kernels = std::max(2, depth.kernels / 4);
  constexpr int kCreated = 3;
  std::vector<std::unique_ptr<DeepQueue>> queues;
  std::vector<Stream> created;
  for (int i = 0; i < kCreated; ++i) created.push_back(device.create_stream());
  std::vector<Stream*> streams;
  for (Stream& s : created) streams.push_back(&s);
  streams.push_back(&device.default_stream());
  auto name = [&](size_t i) {
    return i < created.size() ? "stream " + std::to_string(i + 1) + " of " +
                                    std::to_string(created.size()) + " created"
                              : std::string("the default stream");
  };
  SynchronizeOnExit drain{device};
  std::vector<std::unique_ptr<Probe>> heads, tails;
  for (Stream* s : streams) {
    heads.push_back(maybe_probe(*s, kHeadHold));
    queues.push_back(std::make_unique<DeepQueue>(device, depth));
    queues.back()->submit(*s);
    queues.back()->read_back(*s);
    tails.push_back(maybe_probe(*s, 0ms));
  }
  device.synchronize();
  for (size_t i = 0; i < streams.size(); ++i) {
    if (tails[i]) {
      expect(tails[i]->finished(),
             "device_synchronize returned before the host callback at the "
             "end of a deep queue on " +
                 name(i) + " had run: it must wait for every stream");
    }
    queues[i]->check("device_synchronize (" + name(i) + ")");
  }
}

}  // namespace

void register_queue_tests(Registry& registry, const oar_device_properties_t&) {
  add(registry, "queues", "stream_synchronize_covers_thousands_of_operations",
      stream_synchronize_covers);
  add(registry, "queues", "event_synchronize_covers_thousands_of_operations",
      event_synchronize_covers);
  add(registry, "queues", "stream_wait_event_covers_thousands_of_operations",
      stream_wait_event_covers);
  add(registry, "queues", "device_synchronize_covers_deep_queues_on_every_stream",
      device_synchronize_covers);
}

}  // namespace oar::conformance::abi
