// Allocation failure while plugins load and a runtime is made (issue 12): the
// N-th allocation on this thread fails, for every N from the first until the
// runtime is made without reaching N. Each attempt must end in an error (an
// exception, or a plugin reported as skipped), never a crash; under
// AddressSanitizer the leak check at exit proves nothing was leaked on the
// way out. As the Vulkan loader's tests do with its allocation callbacks.
//
// The failure is injected by replacing the global operator new for this
// process: the runtime, the C++ plugins and the standard library all allocate
// through it. Other threads (plugin workers) are left alone.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "loader_test_util.h"

namespace {

// Allocations left before the one that fails; negative: none fails.
thread_local long t_countdown = -1;
thread_local bool t_failed = false;

void* allocate(std::size_t size, std::size_t alignment, bool may_throw) {
  if (t_countdown >= 0 && t_countdown-- == 0) {
    t_failed = true;
    if (may_throw) throw std::bad_alloc();
    return nullptr;
  }
  if (size == 0) size = 1;
  void* memory = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    memory = std::malloc(size);
  } else if (posix_memalign(&memory, alignment, size) != 0) {
    memory = nullptr;
  }
  if (memory == nullptr && may_throw) throw std::bad_alloc();
  return memory;
}

}  // namespace

void* operator new(std::size_t size) { return allocate(size, 0, true); }
void* operator new[](std::size_t size) { return allocate(size, 0, true); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return allocate(size, 0, false);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return allocate(size, 0, false);
}
void* operator new(std::size_t size, std::align_val_t alignment) {
  return allocate(size, std::size_t(alignment), true);
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return allocate(size, std::size_t(alignment), true);
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }

namespace oar::loader_test {
namespace {

// Thousands of attempts each log the plugin's failure: keep the output short.
const bool kQuiet = setenv("OAR_LOG", "off", 1) == 0;

struct Sweep {
  long attempts = 0;    // runtimes tried, each with one more allocation before the failure
  long exceptions = 0;  // attempts that threw
  long skipped = 0;     // attempts that made a runtime with a plugin skipped
  long loaded = 0;      // attempts where every plugin loaded despite the failure
};

// Makes runtimes from |options|, failing the N-th allocation for N = 0, 1,
// ... until one is made without the failure being reached.
Sweep sweep(const RuntimeOptions& options, size_t plugins) {
  Sweep result;
  for (long n = 0;; ++n) {
    ++result.attempts;
    t_failed = false;
    t_countdown = n;
    bool threw = false;
    std::unique_ptr<Runtime> runtime;
    try {
      runtime = std::make_unique<Runtime>(options);
    } catch (const std::bad_alloc&) {
      threw = true;
    } catch (const Error& error) {
      threw = true;
    }
    t_countdown = -1;
    if (!t_failed) {
      EXPECT_FALSE(threw) << "threw without an allocation failing";
      EXPECT_NE(runtime, nullptr);
      if (runtime != nullptr) {
        EXPECT_EQ(runtime->plugins().size(), plugins);
        for (const PluginRecord& record : runtime->plugins()) {
          EXPECT_EQ(record.state, PluginState::kLoaded) << record.name << ": " << record.reason;
        }
      }
      return result;
    }
    if (threw) {
      ++result.exceptions;
      continue;
    }
    bool all_loaded = true;
    for (const PluginRecord& record : runtime->plugins()) {
      all_loaded &= record.state == PluginState::kLoaded;
    }
    ++(all_loaded ? result.loaded : result.skipped);
  }
}

void report(const char* what, const Sweep& sweep) {
  std::printf("%s: %ld attempts; %ld threw, %ld skipped a plugin, %ld loaded all\n", what,
              sweep.attempts, sweep.exceptions, sweep.skipped, sweep.loaded);
}

TEST(LoaderAllocationFailure, LoaderWithGoodAndBrokenManifestsFailsCleanlyAtEveryAllocation) {
  ScratchDir scratch;
  std::string empty = scratch.write("empty.json", "");
  std::string bad = scratch.write("bad.json", R"({"file_format_version": "1.0.0", "x": 1e999})");
  RuntimeOptions options = only({built_manifest("c_good"), empty, bad});
  // Two of the three are skipped even without a failure.
  Sweep result;
  for (long n = 0;; ++n) {
    ++result.attempts;
    t_failed = false;
    t_countdown = n;
    try {
      Runtime runtime(options);
      t_countdown = -1;
      if (!t_failed) {
        ASSERT_EQ(runtime.plugins().size(), 3u);
        EXPECT_EQ(runtime.plugins()[0].state, PluginState::kLoaded) << runtime.plugins()[0].reason;
        break;
      }
    } catch (const std::bad_alloc&) {
      ++result.exceptions;
    } catch (const Error&) {
      ++result.exceptions;
    }
    t_countdown = -1;
  }
  report("c_good + broken manifests", result);
  EXPECT_GT(result.attempts, 10);
}

TEST(LoaderAllocationFailure, RuntimeWithCpuPluginFailsCleanlyAtEveryAllocation) {
  // The library stays mapped between attempts: each attempt still opens,
  // initializes, registers, finalizes and closes it, but libgomp (which the
  // cpu plugin links) is not unloaded and loaded again thousands of times;
  // it leaks a little of its own at each load.
  void* keep = dlopen(kCpuLibrary.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(keep, nullptr) << dlerror();
  Sweep result = sweep(only({kCpuManifest}), 1);
  dlclose(keep);
  report("cpu runtime", result);
  EXPECT_TRUE(kQuiet);
  EXPECT_GT(result.attempts, 100);
  // And the process is sound afterwards.
  Runtime runtime(only({kCpuManifest}));
  expect_cpu_works(runtime);
}

}  // namespace
}  // namespace oar::loader_test
