// The bookkeeping both fake vendor libraries (plugins/cuda/tests/fake_driver.cc,
// plugins/hip/tests/fake_runtime.cc) share: queued stream work with its fault
// injection, the allocation lookup, the recorded launches and the switches'
// parsing. Each fake keeps its C entry points, with its runtime's names,
// types and error codes, and passes those codes in here.
#ifndef OAR_PLUGINS_COMMON_TESTS_FAKE_GPU_RUNTIME_H_
#define OAR_PLUGINS_COMMON_TESTS_FAKE_GPU_RUNTIME_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace oar_fake {

// One piece of a stream's queued work: device work (a copy, memset or launch,
// which the fault switches may fault), a host function, or an event record.
struct Op {
  enum Kind { kWork, kHost, kRecord } kind = kWork;
  std::function<void()> run;
  bool faults = false;  // a launch of the kernel named by the FAULT_KERNEL switch
};

// One kernel launch, as the tests inspect it.
struct Launch {
  std::string name;
  unsigned grid[3] = {};
  unsigned block[3] = {};
  unsigned shared = 0;
  std::string params;  // the parameter buffer's bytes
};

// The runtime's codes for the answers the shared calls give.
template <class Error>
struct Codes {
  Error ok;
  Error invalid_handle;
  Error not_ready;
};

// The switch |name| as a number (any base strtol reads), or |fallback| when
// unset or empty.
inline long env_long(const char* name, long fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtol(value, nullptr, 0) : fallback;
}

// The state both fakes keep, over their runtime's object types; each fake's
// State derives from it and adds its devices (and CUDA its contexts).
template <class Stream, class Event, class Module, class Function, class Allocation>
struct Core {
  std::recursive_mutex mutex;
  bool initialized = false;
  size_t memory = size_t(1) << 30;  // device memory per device
  long fault_after = -1;
  std::string fault_kernel;
  long ops_run = 0;
  std::map<uintptr_t, Allocation> allocations;
  std::set<Stream*> streams;
  std::set<Event*> events;
  std::set<Module*> modules;
  std::vector<std::unique_ptr<Function>> functions;
  std::string log;  // the calls that create and destroy objects, each ended by ';'
  std::deque<Launch> launches;

  // At init: a new plugin instance starts from scratch (objects a test leaked
  // are dropped with the old state, not freed).
  void reset() {
    initialized = false;
    fault_kernel.clear();
    ops_run = 0;
    allocations.clear();
    streams.clear();
    events.clear();
    modules.clear();
    functions.clear();
    log.clear();
  }

  // The switches <prefix>MEMORY (bytes, default 1 GiB), <prefix>FAULT_AFTER
  // and <prefix>FAULT_KERNEL.
  void read_switches(const std::string& prefix) {
    memory = size_t(env_long((prefix + "MEMORY").c_str(), long(1) << 30));
    fault_after = env_long((prefix + "FAULT_AFTER").c_str(), -1);
    if (const char* k = std::getenv((prefix + "FAULT_KERNEL").c_str())) fault_kernel = k;
  }

  // The objects alive: allocations, streams, events and modules.
  int live() const {
    return int(allocations.size() + streams.size() + events.size() + modules.size());
  }
};

// The items of a comma-separated list ("" gives one empty item).
inline std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> items;
  for (size_t start = 0; start <= list.size();) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    items.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

// Runs |pending| in order. Device work counts towards |fault_after| (-1: never);
// the work that faults (the |fault_after|th or one marked |faults|) sets
// |sticky| to |fault|, and from then on nothing queued runs (host functions
// and records neither): a faulted context or device runs nothing.
template <class Error>
void drain(std::deque<Op>& pending, Error& sticky, Error ok, Error fault, long fault_after,
           long& ops_run) {
  while (!pending.empty()) {
    Op op = std::move(pending.front());
    pending.pop_front();
    if (sticky != ok) continue;
    if (op.kind == Op::kWork) {
      const bool faults = op.faults || (fault_after >= 0 && ops_run >= fault_after);
      ++ops_run;
      if (faults) {
        sticky = fault;
        continue;
      }
    }
    op.run();
  }
}

// The allocation of |all| (keyed by start address, with a field |size|)
// holding [address, address + size), or nullptr. A zero-sized allocation
// holds its first byte.
template <class Allocation>
const Allocation* find_allocation(const std::map<uintptr_t, Allocation>& all, uintptr_t address,
                                  size_t size) {
  auto it = all.upper_bound(address);
  if (it == all.begin()) return nullptr;
  --it;
  const size_t room = it->second.size == 0 ? 1 : it->second.size;
  if (address < it->first || address + size > it->first + room) return nullptr;
  return &it->second;
}

// Fills the inspection call oar_<fake>_fake_launch(i, ...): the kernel's name
// (NUL-terminated, up to |name_size|), grid, block, shared bytes and a pointer
// to the parameter bytes (valid until the launches are cleared); false past
// the end.
inline bool copy_launch(const std::deque<Launch>& launches, size_t i, char* name, size_t name_size,
                        unsigned* grid, unsigned* block, unsigned* shared, const void** params,
                        size_t* params_size) {
  if (i >= launches.size()) return false;
  const Launch& l = launches[i];
  std::snprintf(name, name_size, "%s", l.name.c_str());
  for (int d = 0; d < 3; ++d) grid[d] = l.grid[d], block[d] = l.block[d];
  *shared = l.shared;
  *params = l.params.data();
  *params_size = l.params.size();
  return true;
}

// A stream's or event's query: the sticky error of its context or device,
// else not ready (and then |finish|, as the device finishes right after this
// answer) until |done|.
template <class Error, class Finish>
Error query(Error sticky, bool done, Finish finish, const Codes<Error>& c) {
  if (sticky != c.ok) return sticky;
  if (!done) {
    finish();
    return c.not_ready;
  }
  return c.ok;
}

// Events, of a type with the fields timing, recorded, complete, stream and
// when, kept alive in |events|.

// Records |event| on |stream| through |enqueue| (the fake's, which checks the
// stream): the queued record completes the event when it runs, unless the
// event was destroyed by then.
template <class Event, class Stream, class Error, class Enqueue>
Error record(const std::set<Event*>& events, Event* event, Stream* stream, Enqueue enqueue,
             const Codes<Error>& c) {
  if (events.count(event) == 0) return c.invalid_handle;
  const Error r = enqueue(stream, Op{Op::kRecord, [&events, event] {
                                       if (events.count(event) == 0) return;
                                       event->complete = true;
                                       event->when = std::chrono::steady_clock::now();
                                     }});
  if (r != c.ok) return r;
  event->recorded = true;
  event->complete = false;
  event->stream = stream;
  return c.ok;
}

// The milliseconds from |start|'s record to |end|'s: both must be live timing
// events whose records ran.
template <class Event, class Error>
Error elapsed(const std::set<Event*>& events, float* ms, Event* start, Event* end,
              const Codes<Error>& c) {
  if (events.count(start) == 0 || events.count(end) == 0) return c.invalid_handle;
  if (!start->timing || !end->timing) return c.invalid_handle;
  if (!start->recorded || !end->recorded || !start->complete || !end->complete) return c.not_ready;
  *ms = std::chrono::duration<float, std::milli>(end->when - start->when).count();
  return c.ok;
}

}  // namespace oar_fake

#endif  // OAR_PLUGINS_COMMON_TESTS_FAKE_GPU_RUNTIME_H_
