// The ABI suite: lifecycle, memory in every kind and copy direction, stream
// and event ordering, host callbacks, timing, and every documented error code
// (docs/abi.md), selected by the device's capabilities.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "conformance/suites/abi/abi_util.h"
#include "core/loader/plugin.h"

namespace oar::conformance {
namespace abi {

void add(Registry& registry, const std::string& topic, const std::string& name,
         std::function<void(TestContext&)> body) {
  registry.add({"abi/" + topic + "/" + name, "abi", "", "", "abi/" + topic, std::move(body)});
}

const char* feature_name(uint32_t feature) {
  switch (feature) {
    case OAR_DEVICE_FEATURE_TIMING_EVENTS:
      return "OAR_DEVICE_FEATURE_TIMING_EVENTS";
    case OAR_DEVICE_FEATURE_PEER_ACCESS:
      return "OAR_DEVICE_FEATURE_PEER_ACCESS";
    case OAR_DEVICE_FEATURE_COLLECTIVES:
      return "OAR_DEVICE_FEATURE_COLLECTIVES";
    case OAR_DEVICE_FEATURE_ASYNC_COPIES:
      return "OAR_DEVICE_FEATURE_ASYNC_COPIES";
    case OAR_DEVICE_FEATURE_HOST_CALLBACKS:
      return "OAR_DEVICE_FEATURE_HOST_CALLBACKS";
    default:
      return "an unknown feature";
  }
}

void require_feature(const Device& device, uint32_t feature) {
  if (!device.has_feature(feature)) {
    skip(std::string("the device does not list ") + feature_name(feature));
  }
}

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case OAR_MEMORY_KIND_DEVICE:
      return "device";
    case OAR_MEMORY_KIND_HOST_PINNED:
      return "host_pinned";
    case OAR_MEMORY_KIND_UNIFIED:
      return "unified";
    default:
      return "unknown";
  }
}

std::vector<uint32_t> listed_kinds(const oar_device_properties_t& properties) {
  std::vector<uint32_t> kinds;
  for (uint32_t kind :
       {OAR_MEMORY_KIND_DEVICE, OAR_MEMORY_KIND_HOST_PINNED, OAR_MEMORY_KIND_UNIFIED}) {
    if (properties.memory_kinds & kind) kinds.push_back(kind);
  }
  return kinds;
}

bool has_callbacks(const Device& device) {
  return device.has_feature(OAR_DEVICE_FEATURE_HOST_CALLBACKS);
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto pause = std::chrono::microseconds(50);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
  return true;
}

struct ObservedCallback::State {
  std::mutex mutex;
  std::condition_variable changed;
  std::thread::id registering_thread;
  bool registering = false;
  bool gate = false;
  std::chrono::milliseconds sleep{0};
  int calls = 0;
  bool inline_call = false;
  bool started = false;
  bool finished = false;
  bool released = false;
  bool expired = false;
  oar_status_t status = -1;
  std::function<void(oar_status_t)> on_run;
  ObservedCallback::Clock::time_point started_at{}, finished_at{};
};

namespace {

// Once a callback was seen never to run, later waits for callbacks in the same
// process are short: a plugin that drops callbacks fails every such test
// fast, not after kWaitLimit each.
std::atomic<bool> g_callback_missed{false};

std::chrono::milliseconds callback_limit() {
  return g_callback_missed ? std::chrono::milliseconds(1000)
                           : std::chrono::milliseconds(kWaitLimit);
}

std::string seconds_text(std::chrono::milliseconds limit) {
  return std::to_string(limit.count() / 1000) + " s";
}

// States live as long as the process: a plugin may call a callback late,
// twice, or after the test that made it has ended.
void keep_alive(std::shared_ptr<ObservedCallback::State> state) {
  static std::mutex mutex;
  static auto* kept = new std::vector<std::shared_ptr<ObservedCallback::State>>();
  std::lock_guard<std::mutex> lock(mutex);
  kept->push_back(std::move(state));
}

void observed_callback(void* user_data, oar_status_t status) {
  auto& s = *static_cast<ObservedCallback::State*>(user_data);
  std::unique_lock<std::mutex> lock(s.mutex);
  if (++s.calls > 1) {  // counted, and nothing else: the first call owns the body
    s.changed.notify_all();
    return;
  }
  s.status = status;
  if (s.registering && std::this_thread::get_id() == s.registering_thread) {
    // Run inside stream_add_host_callback: blocking here would block the test.
    s.inline_call = s.started = s.finished = true;
    s.changed.notify_all();
    return;
  }
  s.started = true;
  s.started_at = ObservedCallback::Clock::now();
  s.changed.notify_all();
  if (s.on_run) {
    lock.unlock();
    try {
      s.on_run(status);
    } catch (...) {
      // on_run must not throw; nothing may cross the plugin's thread.
    }
    lock.lock();
  }
  if (s.gate) {
    if (!s.changed.wait_for(lock, kWaitLimit, [&] { return s.released; })) s.expired = true;
  } else if (s.sleep.count() > 0) {
    lock.unlock();
    std::this_thread::sleep_for(s.sleep);
    lock.lock();
  }
  s.finished = true;
  s.finished_at = ObservedCallback::Clock::now();
  s.changed.notify_all();
}

}  // namespace

ObservedCallback::ObservedCallback(Device& device, oar_stream_t stream,
                                   std::chrono::milliseconds sleep, bool gate,
                                   std::function<void(oar_status_t)> on_run)
    : state_(std::make_shared<State>()) {
  require_feature(device, OAR_DEVICE_FEATURE_HOST_CALLBACKS);
  state_->gate = gate;
  state_->sleep = sleep;
  state_->on_run = std::move(on_run);
  keep_alive(state_);
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->registering = true;
    state_->registering_thread = std::this_thread::get_id();
  }
  oar_status_t status =
      device.api().stream_add_host_callback(stream, observed_callback, state_.get());
  bool ran_inline = false;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->registering = false;
    ran_inline = state_->inline_call;
  }
  expect_status(device, status, OAR_STATUS_OK, "stream_add_host_callback");
  if (ran_inline) {
    fail(
        "stream_add_host_callback ran the host callback at once, on the calling thread, before "
        "returning; docs/abi.md: host callbacks run on a plugin thread once the work submitted "
        "before them is done");
  }
}

int ObservedCallback::calls() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->calls;
}

bool ObservedCallback::started() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->started;
}

bool ObservedCallback::finished() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->finished;
}

ObservedCallback::Clock::time_point ObservedCallback::started_at() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->started_at;
}

ObservedCallback::Clock::time_point ObservedCallback::finished_at() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->finished_at;
}

oar_status_t ObservedCallback::status() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->status;
}

void ObservedCallback::wait_finished(const std::string& what) const {
  std::unique_lock<std::mutex> lock(state_->mutex);
  const std::chrono::milliseconds wait = callback_limit();
  if (state_->changed.wait_for(lock, wait, [&] { return state_->finished; })) return;
  const std::string limit = seconds_text(wait);
  if (!state_->started) {
    g_callback_missed = true;
    fail("the host callback " + what + " never ran within " + limit);
  }
  fail("the host callback " + what + " started but did not finish within " + limit);
}

Probe::Probe(Stream& stream, std::chrono::milliseconds hold,
             std::function<void(oar_status_t)> on_run)
    : ObservedCallback(stream.device(), stream.handle(), hold, false, std::move(on_run)) {}

Gate::Gate(Stream& stream)
    : ObservedCallback(stream.device(), stream.handle(), std::chrono::milliseconds(0), true, {}) {}

void Gate::open() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->released = true;
  state_->changed.notify_all();
}

void Gate::release() {
  open();
  if (expired()) {
    fail("the gate (a host callback holding the stream) was not released within " +
         std::to_string(kWaitLimit.count()) +
         " s because the test's own thread was blocked: a call that must not wait for earlier "
         "work on the stream (a query, a record, a copy or kernel submission, a wait on an event "
         "recorded before the gate) waited for the held work");
  }
}

bool Gate::expired() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->expired;
}

void Gate::expect_holding(const std::string& context) const {
  std::unique_lock<std::mutex> lock(state_->mutex);
  const std::chrono::milliseconds wait = callback_limit();
  state_->changed.wait_for(lock, wait, [&] { return state_->started; });
  if (!state_->started) {
    g_callback_missed = true;
    fail(context + ": the gate's host callback had not started " + seconds_text(wait) +
         " after it was queued behind nothing but short work; a host callback must run once "
         "the work before it is done, without a synchronize");
  }
  if (state_->expired) fail(context + ": the gate gave up holding the stream (see above)");
}

std::string expect_status(Device& device, oar_status_t got, oar_status_t want,
                          const std::string& call) {
  if (got != want) {
    std::string message;
    if (got != OAR_STATUS_OK) message = expect_status(device, got, got, call);
    fail(call + " returned " + status_name(got) + (message.empty() ? "" : " (" + message + ")") +
         "; docs/abi.md documents " + status_name(want));
  }
  if (want == OAR_STATUS_OK) return {};
  std::string message;
  try {
    device.plugin().fail(got, call.c_str());
  } catch (const Error& e) {
    message = e.message();
  }
  if (message.find("(the plugin reported no message)") != std::string::npos) {
    fail(call + " failed with " + status_name(got) +
         " but reported no message through report_error (policy P8)");
  }
  return message;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = uint8_t((i + seed) % 251);
  return bytes;
}

std::vector<uint8_t> large_pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; i += 4) {
    uint32_t word = (uint32_t(i / 4) + seed) * 0x9E3779B1u;
    word ^= word >> 15;
    std::memcpy(&bytes[i], &word, std::min<size_t>(4, n - i));
  }
  return bytes;
}

void expect_bytes(const std::string& what, const uint8_t* got, const uint8_t* want, size_t n) {
  if (std::memcmp(got, want, n) == 0) return;
  size_t wrong = 0, first = 0, last = 0;
  for (size_t i = 0; i < n; ++i) {
    if (got[i] == want[i]) continue;
    if (wrong++ == 0) first = i;
    last = i;
  }
  fail(what + ": " + std::to_string(wrong) + " of " + std::to_string(n) +
       " bytes differ, from byte " + std::to_string(first) + " to byte " + std::to_string(last) +
       "; the first: got " + std::to_string(got[first]) + ", expected " +
       std::to_string(want[first]));
}

void expect_bytes(const std::string& what, const std::vector<uint8_t>& got,
                  const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) {
    fail(what + ": " + std::to_string(got.size()) + " bytes, expected " +
         std::to_string(want.size()));
  }
  expect_bytes(what, got.data(), want.data(), got.size());
}

GuardedHost::GuardedHost(size_t size, uint8_t fill) : bytes_(size + 2 * kGuard, kGuardByte) {
  std::fill(bytes_.begin() + kGuard, bytes_.end() - kGuard, fill);
}

std::vector<uint8_t> GuardedHost::contents() const {
  return std::vector<uint8_t>(bytes_.begin() + kGuard, bytes_.end() - kGuard);
}

void GuardedHost::expect_guards(const std::string& what) const {
  size_t before = 0, after = 0;
  for (size_t i = 0; i < kGuard; ++i) {
    if (bytes_[i] != kGuardByte) before = std::max(before, kGuard - i);
    if (bytes_[bytes_.size() - kGuard + i] != kGuardByte) after = i + 1;
  }
  if (before != 0) {
    fail(what + " wrote the host memory before its destination (" + std::to_string(before) +
         " byte(s) before the start changed)");
  }
  if (after != 0) {
    fail(what + " wrote the host memory after its destination (up to " + std::to_string(after) +
         " byte(s) past the end changed)");
  }
}

bool handles_are_addresses(const oar_device_properties_t& properties) {
  switch (properties.dlpack_device_type) {
    case kDLCPU:
    case kDLCUDA:
    case kDLCUDAHost:
    case kDLROCM:
    case kDLROCMHost:
    case kDLCUDAManaged:
      return true;
    default:
      return false;
  }
}

}  // namespace abi

void register_abi_suite(Registry& registry, const oar_device_properties_t& properties) {
  abi::register_lifecycle_tests(registry, properties);
  abi::register_memory_tests(registry, properties);
  abi::register_large_memory_tests(registry, properties);
  abi::register_ordering_tests(registry, properties);
  abi::register_queue_tests(registry, properties);
  abi::register_error_tests(registry, properties);
}

}  // namespace oar::conformance
