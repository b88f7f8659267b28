// Execution order and concurrency of operator kernels.
//
// behind_a_gate: the operator runs on a stream of its own (not the default
// stream) behind a gate, a host callback that blocks until the test opens it
// (behind_an_event: the real inputs are uploaded behind a gate on another
// stream, and the test stream waits for that stream's event right before the
// kernel).
// Its inputs hold decoy values and its outputs a sentinel before the gate;
// the real inputs are uploaded behind the gate, then the kernel is dispatched
// and the downloads of its outputs queued. While the gate is held, a copy on
// another stream must still see the sentinel; once it opens, the results must
// be the reference's for the real inputs. A kernel that runs when it is
// dispatched (on the calling thread, or on a worker that ignores the stream's
// order) either writes its outputs while the gate is held or computes from
// the decoys.
//
// concurrent_streams: the operator runs on four streams at once, dispatched
// from one host thread per stream, each stream with inputs of its own and
// many rounds, all held by one gate and released together; every result must
// be its own stream's. A kernel that keeps state shared between streams (a
// global scratch buffer, workspace or accumulator) mixes them up.
#include "conformance/suites/ops/stream_order.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace oar::conformance {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Cases up to this many input elements are cheap enough to run many times.
constexpr int64_t kMaxElements = int64_t(1) << 13;
constexpr int kStreams = 4;
// Each stream queues kGatedRounds behind the gate, then goes on dispatching
// rounds for kDispatchTime (at most kMaxRounds and kRoundBytes of results in
// all): many short kernels, or a few long ones, so that the streams' work
// overlaps however the host schedules it; a device with slow launches gets
// few.
constexpr int kGatedRounds = 8;
constexpr int kAhead = kGatedRounds;  // rounds a stream may be ahead of its device
constexpr int kMaxRounds = 4096;
constexpr uint64_t kRoundBytes = uint64_t(32) << 20;
constexpr auto kDispatchTime = 40ms;
// How long the gated kernel gets to misbehave before the other stream looks:
// twice what the same call took on an idle stream, within these bounds.
constexpr auto kMinSettle = 2ms;
constexpr auto kMaxSettle = 250ms;
// How long a copy on another stream may take while the gate is held; a device
// that runs its streams one after another never finishes it, and then there
// is nothing to observe.
constexpr auto kObserve = 250ms;
// A gate opens by itself once the test has made no progress (no call of it
// returned) for its stall limit: a plugin whose calls wait until the work
// ahead of them is done (in order, only synchronous) would otherwise never
// get its call back. Such a call is allowed; what it ran is then only checked
// for its results.
constexpr auto kMinStall = 250ms;
constexpr auto kConcurrentStall = 1s;

// Holds the work of any number of streams behind host callbacks until open()
// (or destruction), all released at once, or until |stall| has passed since
// the last progress().
class Gate {
 public:
  explicit Gate(Clock::duration stall) : state_(std::make_shared<State>()) {
    state_->stall = stall;
  }
  ~Gate() { open(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // Holds |stream|'s later work. Requires OAR_DEVICE_FEATURE_HOST_CALLBACKS.
  void hold(Stream& stream) {
    stream.add_callback([state = state_](oar_status_t) {
      std::unique_lock<std::mutex> lock(state->mutex);
      while (!state->opened) {
        if (state->changed.wait_until(lock, state->progress + state->stall) ==
                std::cv_status::timeout &&
            !state->opened && Clock::now() >= state->progress + state->stall) {
          state->stalled = true;
          return;
        }
      }
    });
  }
  // A call of the test returned.
  void progress() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->progress = Clock::now();
    state_->changed.notify_all();
  }
  void open() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->opened = true;
    state_->changed.notify_all();
  }
  // Whether a callback stopped holding by itself (a call of the test waited
  // for the held work): nothing seen since then shows the order.
  bool stalled() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->stalled;
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    Clock::duration stall{};
    Clock::time_point progress = Clock::now();
    bool opened = false;
    bool stalled = false;
  };
  std::shared_ptr<State> state_;
};

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

// The elements of |c|'s inputs, or of its outputs when it has none (fill);
// -1 when the case does not fit these tests (explicit values, which decoys
// cannot differ from; anything empty; non-contiguous inputs, whose own cases
// cover them).
int64_t qualifying_size(const ops::OpSchema& schema, const OpCase& c) {
  if (c.inputs.empty()) {
    int64_t n = numel_of(c.fill_shape);
    return n > 0 ? n : -1;
  }
  int64_t total = 0;
  std::vector<DLTensor> in;
  for (const InputSpec& spec : c.inputs) {
    int64_t n = numel_of(spec.shape);
    if (!spec.values.empty() || spec.transposed || n == 0) return -1;
    total += n;
    DLTensor t{};
    t.ndim = int32_t(spec.shape.size());
    t.shape = const_cast<int64_t*>(spec.shape.data());
    t.dtype = spec.dtype;
    in.push_back(t);
  }
  std::vector<oar_attr_t> raw = raw_attrs(c.attrs);
  try {
    for (const std::vector<int64_t>& shape :
         ops::infer_shapes(schema, in.data(), in.size(), raw.data(), raw.size())) {
      if (numel_of(shape) == 0) return -1;
    }
  } catch (const std::exception&) {
    return -1;
  }
  return total;
}

// The largest qualifying case up to kMaxElements, else the smallest above it.
const OpCase* pick_case(const ops::OpSchema& schema, const std::vector<OpCase>& cases) {
  const OpCase* best = nullptr;
  int64_t best_size = -1;
  for (const OpCase& c : cases) {
    int64_t size = qualifying_size(schema, c);
    if (size < 0) continue;
    bool better =
        best == nullptr || (size <= kMaxElements ? size > best_size || best_size > kMaxElements
                                                 : best_size > kMaxElements && size < best_size);
    if (better) {
      best = &c;
      best_size = size;
    }
  }
  return best;
}

std::vector<const Tensor*> pointers(const std::vector<GuardedInput>& inputs) {
  std::vector<const Tensor*> p;
  for (const GuardedInput& in : inputs) p.push_back(&in.tensor);
  return p;
}

// Waits up to |limit| for |event|; false if it did not complete by then.
bool completes_within(Event& event, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!event.query()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// The number of output bytes (margins excluded) that no longer hold the sentinel.
size_t written_bytes(const GuardedBytes& read, const Tensor& output) {
  const uint8_t* elements = elements_of(read);
  return size_t(std::count_if(elements, elements + output.nbytes(),
                              [](uint8_t byte) { return byte != kSentinelByte; }));
}

// Waits for |stream| and turns its failure into a TestFailure naming |what|.
void synchronize(Stream& stream, const std::string& what) {
  try {
    stream.synchronize();
  } catch (const Error& e) {
    fail(what + ": " + e.what());
  }
}

// What holds the test stream's work: a gate on the stream itself, or a
// stream_wait_event on an event recorded behind a gate on another stream.
enum class Hold { kCallback, kEvent };

// What the held work was waiting for, for messages.
const char* held_text(Hold hold) {
  return hold == Hold::kCallback
             ? "the work queued before it on its stream was still held by a host callback"
             : "its stream was still waiting (stream_wait_event) for an event of another "
               "stream that had not completed";
}

void run_held(TestContext& context, const std::string& id, const ops::OpSchema& schema,
              const OpCase& c, Family family, Hold hold) {
  Device& device = context.device;
  if (!device.has_feature(OAR_DEVICE_FEATURE_HOST_CALLBACKS)) {
    skip("the device does not list OAR_DEVICE_FEATURE_HOST_CALLBACKS");
  }
  // Copies that may block until they are done cannot be queued behind a held
  // gate: such a device gets its real inputs before the gate, and only the
  // outputs are watched.
  const bool async = device.has_feature(OAR_DEVICE_FEATURE_ASYNC_COPIES);
  const std::string what = id + describe(schema, c);
  std::vector<HostTensor> host = make_inputs(c, id);
  std::vector<HostTensor> decoys = async ? make_inputs(c, id + "#decoy") : host;

  // Declared before the streams and the gate, so that on any failure the gate
  // opens first, then the streams finish their work, then memory goes.
  Stream& home = device.default_stream();
  std::vector<GuardedInput> inputs;
  std::vector<Tensor> outputs;
  std::vector<GuardedBytes> results, input_reads, peeks;
  bool observed = false;
  {
    for (size_t i = 0; i < decoys.size(); ++i) {
      inputs.push_back(guarded_input(home, decoys[i], c.inputs[i].transposed));
    }
    // The same call once on an idle stream: how long a kernel that ignored
    // the gate would need to show.
    std::vector<Tensor> timed =
        allocate_outputs(home, schema, pointers(inputs), c.attrs, c.out_dtype, c.fill_shape);
    synchronize(home, what + ": preparing the inputs failed");
    const auto start = Clock::now();
    try {
      dispatch_op(home, schema, pointers(inputs), timed, c.attrs);
      home.synchronize();
    } catch (const Error& e) {
      fail(what + ": the call failed on an idle stream: " + e.what());
    }
    const Clock::duration took = Clock::now() - start;
    const auto settle = std::clamp<Clock::duration>(2 * took, kMinSettle, kMaxSettle);
    outputs = allocate_outputs(home, schema, pointers(inputs), c.attrs, c.out_dtype, c.fill_shape);
    synchronize(home, what + ": preparing the outputs failed");

    Stream stream = device.create_stream();
    Stream observer = device.create_stream();
    Stream producer = device.create_stream();
    // The real inputs are uploaded behind the gate: on the test stream
    // itself, or on a producer stream whose event the test stream waits for
    // right before the kernel (as a framework's loader stream feeds its
    // compute stream).
    Stream& uploader = hold == Hold::kCallback ? stream : producer;
    Gate gate(std::max<Clock::duration>(kMinStall, 4 * took));
    gate.hold(uploader);
    if (async) {
      for (size_t i = 0; i < inputs.size(); ++i) {
        queue_upload(uploader, inputs[i], host[i], c.inputs[i].transposed);
        gate.progress();
      }
    }
    Event ready = device.create_event();
    if (hold == Hold::kEvent) {
      ready.record(producer);
      stream.wait(ready);
    }
    auto queue_reads = [&] {
      for (const Tensor& t : outputs) results.push_back(queue_read(stream, t));
      for (const GuardedInput& in : inputs) input_reads.push_back(queue_read(stream, in.tensor));
    };
    try {
      gate.progress();
      dispatch_op(stream, schema, pointers(inputs), outputs, c.attrs);
      gate.progress();
    } catch (const Error& e) {
      fail(what + ": dispatching behind held work failed: " + e.what());
    }
    if (async) queue_reads();

    std::this_thread::sleep_for(settle);
    gate.progress();  // the test slept; no call of it is waiting
    for (const Tensor& t : outputs) peeks.push_back(queue_read(observer, t));
    Event peeked = device.create_event();
    peeked.record(observer);
    observed = completes_within(peeked, kObserve) && !gate.stalled();
    gate.open();
    if (!async) queue_reads();
    synchronize(producer, what + ": the producer stream failed after the gate opened");
    synchronize(stream, what + ": the stream failed after the gate opened");
    synchronize(observer, what + ": a copy on another stream failed");
  }

  if (observed) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      size_t written = written_bytes(peeks[i], outputs[i]);
      if (written == 0) continue;
      fail(what + ": the kernel wrote output " + std::to_string(i) + " (" +
           std::to_string(written) + " of its " + std::to_string(outputs[i].nbytes()) +
           " bytes, as a copy on another stream saw) while " + held_text(hold) +
           ": a kernel must run in stream order, after the work submitted before it, not when "
           "it is dispatched");
    }
  }
  std::vector<bool> unwritten;
  std::vector<HostTensor> got;
  for (size_t i = 0; i < outputs.size(); ++i) {
    unwritten.push_back(outputs[i].nbytes() != 0 && written_bytes(results[i], outputs[i]) == 0);
    got.push_back(checked_output(what, i, outputs[i], results[i]));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    expect_input_unchanged(what, i, inputs[i], input_reads[i]);
  }
  try {
    expect_results(what, c, family, got, expected_results(what, schema, c, family, host));
  } catch (const TestFailure& e) {
    if (async && !host.empty()) {
      bool from_decoys = true;
      try {
        expect_results(what, c, family, got, expected_results(what, schema, c, family, decoys));
      } catch (const TestFailure&) {
        from_decoys = false;
      }
      if (from_decoys) {
        fail(what +
             ": the kernel computed from the values its inputs held before the gate: it "
             "read them while " +
             held_text(hold) +
             ", before the uploads queued ahead of it had run (a kernel must run in stream "
             "order, after the work submitted before it)");
      }
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (unwritten[i]) {
        fail(what + ": output " + std::to_string(i) +
             " still held only the bytes the suite filled it with before the call (0xff: NaN, "
             "or -1) when the download queued after the kernel on its stream ran: either that "
             "download overtook the kernel, or the kernel combined its result with what the "
             "output held (outputs start undefined; a kernel must not read them)");
      }
    }
    fail(std::string("behind a gate: ") + e.what());
  }
}

void behind_a_gate(TestContext& context, const std::string& id, const ops::OpSchema& schema,
                   const OpCase& c, Family family) {
  run_held(context, id, schema, c, family, Hold::kCallback);
}

void behind_an_event(TestContext& context, const std::string& id, const ops::OpSchema& schema,
                     const OpCase& c, Family family) {
  run_held(context, id, schema, c, family, Hold::kEvent);
}

// Fails naming |what| unless |got| is right: equal to |first| (already
// checked) or close to |expected|; |first| becomes |got| when empty.
void expect_round(const std::string& what, const OpCase& c, Family family,
                  std::vector<HostTensor>& got, const Expected& expected,
                  std::vector<HostTensor>& first) {
  bool same = !first.empty();
  for (size_t i = 0; same && i < got.size(); ++i) same = got[i].bytes == first[i].bytes;
  if (same) return;
  try {
    expect_results(what, c, family, got, expected);
  } catch (const TestFailure& e) {
    fail(std::string(e.what()) +
         "; the same call is right on one stream: a kernel must keep no state shared between "
         "streams (a global scratch buffer, workspace or accumulator)");
  }
  if (first.empty()) first = std::move(got);
}

// |c| as stream |s| runs it: an operator without inputs (fill) gets a value
// of its own, so that streams' results differ.
OpCase case_for_stream(const OpCase& c, int s) {
  OpCase own = c;
  if (!own.inputs.empty()) return own;
  for (AttrValue& a : own.attrs) {
    if (a.name != "value" || a.type != OAR_ATTR_TYPE_FLOAT) continue;
    a.f = own.out_dtype == dtype::boolean ? double(s % 2) : a.f + s;
  }
  return own;
}

void concurrent_streams(TestContext& context, const std::string& id, const ops::OpSchema& schema,
                        const OpCase& c, Family family) {
  Device& device = context.device;
  const std::string what = id + describe(schema, c);
  // Work queued behind a gate starts on every stream at once; copies that
  // may block until done cannot be queued there.
  const bool gated = device.has_feature(OAR_DEVICE_FEATURE_HOST_CALLBACKS) &&
                     device.has_feature(OAR_DEVICE_FEATURE_ASYNC_COPIES);
  Stream& home = device.default_stream();

  // Each stream has inputs and outputs of its own, so that a result computed
  // from another stream's data, or into another stream's memory, shows. Every
  // round is read back right after it, before the next overwrites it.
  std::vector<std::vector<HostTensor>> host(kStreams);
  std::vector<std::vector<GuardedInput>> inputs(kStreams);
  std::vector<std::vector<Tensor>> outputs(kStreams);
  std::vector<std::vector<std::vector<GuardedBytes>>> results(kStreams);
  std::vector<std::vector<GuardedBytes>> input_reads(kStreams);
  std::vector<std::exception_ptr> errors(kStreams);
  std::vector<OpCase> cases;
  for (int s = 0; s < kStreams; ++s) {
    cases.push_back(case_for_stream(c, s));
    host[s] = make_inputs(c, id + "#stream" + std::to_string(s));
    for (size_t i = 0; i < host[s].size(); ++i) {
      inputs[s].push_back(guarded_input(home, host[s][i], c.inputs[i].transposed));
    }
    outputs[s] =
        allocate_outputs(home, schema, pointers(inputs[s]), c.attrs, c.out_dtype, c.fill_shape);
  }
  uint64_t round_bytes = 0;
  for (const Tensor& t : outputs[0]) round_bytes += t.buffer()->size();
  const int max_rounds =
      int(std::clamp<uint64_t>(kRoundBytes / (round_bytes * kStreams), kGatedRounds, kMaxRounds));
  synchronize(home, what + ": preparing the inputs failed");
  {
    // Round r records marks[s][r % kAhead]; round r waits for round
    // r - kAhead first, so that no stream runs more than kAhead rounds ahead
    // of its device. (Destroyed after the streams.)
    std::vector<std::vector<Event>> marks(kStreams);
    for (auto& ring : marks) {
      for (int i = 0; i < kAhead; ++i) ring.push_back(device.create_event());
    }
    std::vector<Stream> streams;
    for (int s = 0; s < kStreams; ++s) streams.push_back(device.create_stream());
    // One gate holds every stream until each has its first rounds, then lets
    // them go together; the threads go on dispatching for kDispatchTime.
    Gate gate(kConcurrentStall);
    if (gated) {
      for (Stream& stream : streams) gate.hold(stream);
    }
    std::mutex mutex;
    std::condition_variable changed;
    int ready = 0;
    bool go = false;
    auto round = [&](int s, int r) {
      if (r >= kAhead) marks[s][r % kAhead].synchronize();
      dispatch_op(streams[s], schema, pointers(inputs[s]), outputs[s], cases[s].attrs);
      results[s].emplace_back();
      for (const Tensor& t : outputs[s]) results[s].back().push_back(queue_read(streams[s], t));
      marks[s][r % kAhead].record(streams[s]);
      gate.progress();
    };
    std::vector<std::thread> threads;
    for (int s = 0; s < kStreams; ++s) {
      threads.emplace_back([&, s] {
        try {
          for (int r = 0; r < kGatedRounds; ++r) round(s, r);
        } catch (...) {
          errors[s] = std::current_exception();
        }
        std::unique_lock<std::mutex> lock(mutex);
        ++ready;
        changed.notify_all();
        changed.wait(lock, [&] { return go; });
        lock.unlock();
        try {
          const auto start = Clock::now();
          for (int r = kGatedRounds; !errors[s] && r < max_rounds; ++r) {
            if (Clock::now() - start > kDispatchTime) break;
            round(s, r);
          }
        } catch (...) {
          errors[s] = std::current_exception();
        }
      });
    }
    // A thread whose call waits for the held work returns once the gate
    // stops holding by itself.
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return ready == kStreams; });
    }
    gate.open();
    {
      std::lock_guard<std::mutex> lock(mutex);
      go = true;
      changed.notify_all();
    }
    for (std::thread& t : threads) t.join();
    for (int s = 0; s < kStreams; ++s) {
      for (const GuardedInput& in : inputs[s]) {
        input_reads[s].push_back(queue_read(streams[s], in.tensor));
      }
    }
    for (int s = 0; s < kStreams; ++s) {
      try {
        if (errors[s]) std::rethrow_exception(errors[s]);
        streams[s].synchronize();
      } catch (const Error& e) {
        fail(what + ": on " + std::to_string(kStreams) + " streams at once, stream " +
             std::to_string(s) + " failed: " + e.what());
      }
    }
  }

  for (int s = 0; s < kStreams; ++s) {
    const std::string on_stream = id + describe(schema, cases[s]) + " [stream " +
                                  std::to_string(s) + " of " + std::to_string(kStreams) +
                                  " at once";
    Expected expected = expected_results(what, schema, cases[s], family, host[s]);
    std::vector<HostTensor> first;
    const size_t rounds = results[s].size();
    for (size_t r = 0; r < rounds; ++r) {
      const std::string where =
          on_stream + ", round " + std::to_string(r) + " of " + std::to_string(rounds) + "]";
      std::vector<HostTensor> got;
      for (size_t i = 0; i < outputs[s].size(); ++i) {
        got.push_back(checked_output(where, i, outputs[s][i], results[s][r][i]));
      }
      expect_round(where, cases[s], family, got, expected, first);
    }
    for (size_t i = 0; i < inputs[s].size(); ++i) {
      expect_input_unchanged(on_stream + "]", i, inputs[s][i], input_reads[s][i]);
    }
  }
}

}  // namespace

void register_execution_tests(Registry& registry, const ops::OpSchema& schema,
                              const std::string& dtype, const std::string& prefix,
                              const std::string& group, const std::vector<OpCase>& cases,
                              Family family) {
  const std::string op = schema.name;
  const OpCase* picked = pick_case(schema, cases);
  using Body =
      void (*)(TestContext&, const std::string&, const ops::OpSchema&, const OpCase&, Family);
  const std::pair<const char*, Body> tests[] = {{"behind_a_gate", behind_a_gate},
                                                {"behind_an_event", behind_an_event},
                                                {"concurrent_streams", concurrent_streams}};
  for (const auto& [name, body] : tests) {
    const std::string id = prefix + name;
    if (picked == nullptr) {
      registry.add({id, "ops", op, dtype, group, [op](TestContext&) {
                      fail("the suite has no case of " + op +
                           " with generated, non-empty, contiguous inputs to run it with (a "
                           "conformance suite problem: add one to "
                           "conformance/suites/ops/op_cases.cc)");
                    }});
      continue;
    }
    registry.add({id, "ops", op, dtype, group,
                  [id, &schema, family, c = *picked, body = body](TestContext& context) {
                    body(context, id, schema, c, family);
                  }});
  }
}

}  // namespace oar::conformance
