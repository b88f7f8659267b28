// The bookkeeping both fake vendor libraries (plugins/cuda/tests/fake_driver.cc,
// plugins/hip/tests/fake_runtime.cc) share: queued stream work with its fault
// injection, the allocation lookup, the recorded launches and the switches'
// parsing. Each fake keeps its C entry points, with its runtime's names,
// types and error codes, and passes those codes in here.
#ifndef OAR_PLUGINS_COMMON_TESTS_FAKE_GPU_RUNTIME_H_
#define OAR_PLUGINS_COMMON_TESTS_FAKE_GPU_RUNTIME_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>

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

// The switch |name| as a number (any base strtol reads), or |fallback| when
// unset or empty.
inline long env_long(const char* name, long fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtol(value, nullptr, 0) : fallback;
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

}  // namespace oar_fake

#endif  // OAR_PLUGINS_COMMON_TESTS_FAKE_GPU_RUNTIME_H_
