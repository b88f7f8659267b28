// The cuda plugin's runtime logic against the fake driver (fake_driver.cc):
// the plugin is loaded through its C table, as the core loads it, and the
// fake's switches (environment variables read at cuInit) select the case.
// Nothing here computes on a GPU: the fake is no device.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "oar/oar.h"

namespace {

thread_local std::string last_error;
std::vector<std::string> logs;

void report_error(void*, oar_status_t, const char* message) {
  last_error = message != nullptr ? message : "";
}
void log_line(void*, int32_t, const char* message) { logs.push_back(message); }
void trace(void*, const oar_trace_record_t*) {}

const oar_host_services_t kHost = {OAR_HOST_SERVICES_STRUCT_SIZE,
                                   OAR_ABI_MAJOR,
                                   OAR_ABI_MINOR,
                                   nullptr,
                                   report_error,
                                   log_line,
                                   trace};

const oar_plugin_api_t* api() {
  static const oar_plugin_api_t* table = [] {
    void* library = dlopen(OAR_CUDA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return static_cast<const oar_plugin_api_t*>(nullptr);
    auto query = reinterpret_cast<oar_plugin_query_fn>(dlsym(library, OAR_PLUGIN_ENTRY_SYMBOL));
    return query(OAR_ABI_MAJOR, OAR_ABI_MINOR);
  }();
  return table;
}

// The fake's inspection entry points (the fake stays loaded: we hold it).
struct Fake {
  Fake() {
    void* library = dlopen(OAR_CUDA_FAKE_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
    log = reinterpret_cast<const char* (*)()>(dlsym(library, "oar_cuda_fake_log"));
    live = reinterpret_cast<int (*)()>(dlsym(library, "oar_cuda_fake_live"));
  }
  const char* (*log)() = nullptr;
  int (*live)() = nullptr;
};
Fake& fake() {
  static Fake f;
  return f;
}

const char* const kSwitches[] = {"OAR_CUDA_FAKE_INIT_ERROR",  "OAR_CUDA_FAKE_DEVICES",
                                 "OAR_CUDA_FAKE_CC",          "OAR_CUDA_FAKE_MEMORY",
                                 "OAR_CUDA_FAKE_FAULT_AFTER", "OAR_CUDA_FAKE_FAULT_KERNEL"};

class CudaPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(api(), nullptr) << dlerror();
    ASSERT_NE(fake().log, nullptr);
    for (const char* name : kSwitches) unsetenv(name);
    setenv("OAR_CUDA_DRIVER", OAR_CUDA_FAKE_DRIVER_PATH, 1);
    logs.clear();
  }
  void TearDown() override {
    if (initialized_) {
      EXPECT_EQ(api()->finalize(), OAR_STATUS_OK);
    }
    unsetenv("OAR_CUDA_DRIVER");
  }

  // Initializes the plugin (after the test set its switches).
  void start() {
    ASSERT_EQ(api()->initialize(&kHost), OAR_STATUS_OK) << last_error;
    initialized_ = true;
  }
  void finalize() {
    ASSERT_EQ(api()->finalize(), OAR_STATUS_OK);
    initialized_ = false;
  }
  int32_t count() {
    int32_t n = -1;
    EXPECT_EQ(api()->device_count(&n), OAR_STATUS_OK);
    return n;
  }
  std::string all_logs() const {
    std::string text;
    for (const auto& line : logs) text += line + "\n";
    return text;
  }
  oar_device_t open(int32_t index = 0) {
    oar_device_t device = nullptr;
    EXPECT_EQ(api()->device_open(index, &device), OAR_STATUS_OK) << last_error;
    return device;
  }
  oar_stream_t stream(oar_device_t device) {
    oar_stream_t s = nullptr;
    EXPECT_EQ(api()->stream_create(device, nullptr, &s), OAR_STATUS_OK) << last_error;
    return s;
  }
  oar_memory_t allocate(oar_device_t device, uint64_t size,
                        uint32_t kind = OAR_MEMORY_KIND_DEVICE) {
    oar_memory_t m = nullptr;
    EXPECT_EQ(api()->memory_allocate(device, size, kind, &m), OAR_STATUS_OK) << last_error;
    return m;
  }
  oar_event_t event(oar_device_t device, uint32_t flags = 0) {
    oar_event_t e = nullptr;
    EXPECT_EQ(api()->event_create(device, flags, &e), OAR_STATUS_OK) << last_error;
    return e;
  }

  bool initialized_ = false;
};

TEST_F(CudaPluginTest, NoDriverMeansZeroDevicesAndSaysWhy) {
  setenv("OAR_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  start();
  EXPECT_EQ(count(), 0);
  EXPECT_NE(all_logs().find("cuda: no NVIDIA driver: /nonexistent/libcuda.so.1 not found"),
            std::string::npos)
      << all_logs();
  oar_device_t device = nullptr;
  EXPECT_EQ(api()->device_open(0, &device), OAR_STATUS_OUT_OF_RANGE);
}

TEST_F(CudaPluginTest, InitFailureIsNamed) {
  setenv("OAR_CUDA_FAKE_INIT_ERROR", "999", 1);
  start();
  EXPECT_EQ(count(), 0);
  EXPECT_NE(all_logs().find("cuda: cuInit failed: CUDA_ERROR_UNKNOWN. The plugin serves 0"),
            std::string::npos)
      << all_logs();
}

TEST_F(CudaPluginTest, NoDevice) {
  setenv("OAR_CUDA_FAKE_DEVICES", "0", 1);
  start();
  EXPECT_EQ(count(), 0);
  EXPECT_NE(all_logs().find("cuda: no device"), std::string::npos) << all_logs();
}

TEST_F(CudaPluginTest, EnumeratesDevicesAndSkipsThoseTheKernelsCannotRunOn) {
  setenv("OAR_CUDA_FAKE_DEVICES", "3", 1);
  setenv("OAR_CUDA_FAKE_CC", "80,75,90", 1);
  setenv("OAR_CUDA_FAKE_MEMORY", "2147483648", 1);
  start();
  ASSERT_EQ(count(), 2);
  EXPECT_NE(all_logs().find("device 1 skipped: OAR fake CUDA device 1 (no GPU) is sm_75"),
            std::string::npos)
      << all_logs();
  oar_device_properties_t p{};
  p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
  ASSERT_EQ(api()->device_properties(1, &p), OAR_STATUS_OK) << last_error;
  EXPECT_STREQ(p.name, "OAR fake CUDA device 2 (no GPU)");  // OAR's 1 is the driver's 2
  EXPECT_STREQ(p.vendor, "NVIDIA");
  EXPECT_STREQ(p.driver_version, "CUDA driver API 13.0, sm_90");
  EXPECT_EQ(p.kind, OAR_DEVICE_KIND_GPU);
  EXPECT_EQ(p.dlpack_device_type, kDLCUDA);
  EXPECT_EQ(p.total_memory, uint64_t(2) << 30);
  EXPECT_EQ(p.compute_units, 6u);
  EXPECT_EQ(p.memory_kinds, uint32_t(OAR_MEMORY_KIND_DEVICE | OAR_MEMORY_KIND_HOST_PINNED));
  EXPECT_EQ(p.dtypes & (OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16),
            uint32_t(OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16));
  EXPECT_NE(p.features & OAR_DEVICE_FEATURE_TIMING_EVENTS, 0u);
  EXPECT_NE(p.features & OAR_DEVICE_FEATURE_HOST_CALLBACKS, 0u);
  EXPECT_EQ(api()->device_properties(2, &p), OAR_STATUS_OUT_OF_RANGE);
  p.struct_size = 8;
  EXPECT_EQ(api()->device_properties(0, &p), OAR_STATUS_INVALID_ARGUMENT);
}

TEST_F(CudaPluginTest, OpenLoadsTheKernelsAndCloseReleasesEverythingInOrder) {
  start();
  oar_device_t device = open();
  ASSERT_NE(device, nullptr);
  // device_open looked up every kernel of kernels.list: the fake finds each
  // name in the embedded image or fails the open.
  EXPECT_NE(std::string(fake().log()).find("cuModuleLoadData"), std::string::npos);
  oar_stream_t s = stream(device);
  oar_event_t e = event(device);
  oar_memory_t m = allocate(device, 64);
  oar_memory_t pinned = allocate(device, 64, OAR_MEMORY_KIND_HOST_PINNED);
  (void)s, (void)e, (void)m, (void)pinned;
  // The host leaks all four: closing the device releases them, before the
  // module and the context.
  ASSERT_EQ(api()->device_close(device), OAR_STATUS_OK) << last_error;
  const std::string log = fake().log();
  const size_t release = log.find("cuDevicePrimaryCtxRelease(0)");
  ASSERT_NE(release, std::string::npos) << log;
  for (const char* call :
       {"cuStreamDestroy", "cuEventDestroy", "cuMemFree;", "cuMemFreeHost", "cuModuleUnload"}) {
    const size_t at = log.find(call);
    EXPECT_NE(at, std::string::npos) << call << " missing: " << log;
    EXPECT_LT(at, release) << call << " after the context release: " << log;
  }
  EXPECT_LT(log.find("cuStreamDestroy"), log.find("cuMemFree;")) << log;
  EXPECT_LT(log.find("cuMemFree;"), log.find("cuModuleUnload")) << log;
  EXPECT_EQ(fake().live(), 0);
  EXPECT_NE(all_logs().find("closed with 1 stream(s), 1 event(s) and 2 allocation(s)"),
            std::string::npos)
      << all_logs();
}

TEST_F(CudaPluginTest, FinalizeReleasesDevicesTheHostLeft) {
  start();
  oar_device_t device = open();
  stream(device);
  allocate(device, 16);
  finalize();
  EXPECT_EQ(fake().live(), 0) << fake().log();
}

TEST_F(CudaPluginTest, CopiesAndFillsAreStreamOrderedAndAsynchronous) {
  start();
  oar_device_t device = open();
  oar_stream_t s = stream(device);
  oar_memory_t a = allocate(device, 256);
  oar_memory_t b = allocate(device, 256);
  std::vector<uint8_t> in(256), out(256, 0xee);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i);
  ASSERT_EQ(api()->memory_copy_h2d(s, a, 0, in.data(), 256), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->memory_fill(s, a, 16, 0x7f, 16), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->memory_copy_d2d(s, b, 8, a, 0, 248), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->memory_copy_d2h(s, out.data(), b, 0, 256), OAR_STATUS_OK) << last_error;
  bool idle = true;
  ASSERT_EQ(api()->stream_query(s, &idle), OAR_STATUS_OK) << last_error;
  EXPECT_FALSE(idle);  // the fake ran nothing yet
  ASSERT_EQ(api()->stream_synchronize(s), OAR_STATUS_OK) << last_error;
  for (size_t i = 8; i < 256; ++i) {
    const uint8_t expected = (i - 8 >= 16 && i - 8 < 32) ? 0x7f : uint8_t(i - 8);
    ASSERT_EQ(out[i], expected) << i;
  }
  ASSERT_EQ(api()->stream_query(s, &idle), OAR_STATUS_OK);
  EXPECT_TRUE(idle);
  // Ranges are checked before the driver sees them.
  EXPECT_EQ(api()->memory_copy_h2d(s, a, 200, in.data(), 57), OAR_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(api()->memory_copy_d2d(s, a, 0, a, 8, 16), OAR_STATUS_INVALID_ARGUMENT);
  uint64_t free_bytes = 0, total = 0;
  ASSERT_EQ(api()->device_memory_info(device, &free_bytes, &total), OAR_STATUS_OK);
  EXPECT_EQ(total - free_bytes, 512u);
  EXPECT_EQ(api()->memory_free(device, a), OAR_STATUS_OK);
  EXPECT_EQ(api()->memory_free(device, a), OAR_STATUS_INVALID_ARGUMENT);  // twice
  EXPECT_EQ(api()->memory_free(device, b), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_destroy(s), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
  EXPECT_EQ(fake().live(), 0) << fake().log();
}

TEST_F(CudaPluginTest, PinnedHostMemoryHasAHostAddressDeviceMemoryHasNone) {
  start();
  oar_device_t device = open();
  oar_memory_t pinned = allocate(device, 64, OAR_MEMORY_KIND_HOST_PINNED);
  oar_memory_t dev = allocate(device, 64);
  void* address = nullptr;
  ASSERT_EQ(api()->memory_host_address(device, pinned, &address), OAR_STATUS_OK) << last_error;
  std::memset(address, 5, 64);
  EXPECT_EQ(api()->memory_host_address(device, dev, &address), OAR_STATUS_INVALID_ARGUMENT);
  oar_memory_t unified = nullptr;
  EXPECT_EQ(api()->memory_allocate(device, 64, OAR_MEMORY_KIND_UNIFIED, &unified),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(api()->memory_free(device, pinned), OAR_STATUS_OK);
  EXPECT_EQ(api()->memory_free(device, dev), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
}

TEST_F(CudaPluginTest, AllocationFailureIsResourceExhaustedWithTheDriversName) {
  setenv("OAR_CUDA_FAKE_MEMORY", "4096", 1);
  start();
  oar_device_t device = open();
  oar_memory_t m = nullptr;
  EXPECT_EQ(api()->memory_allocate(device, 4097, OAR_MEMORY_KIND_DEVICE, &m),
            OAR_STATUS_INVALID_ARGUMENT);  // above max_allocation_size
  oar_memory_t first = allocate(device, 4000);
  EXPECT_EQ(api()->memory_allocate(device, 1000, OAR_MEMORY_KIND_DEVICE, &m),
            OAR_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_NE(last_error.find("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos)
      << last_error;
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(api()->memory_free(device, first), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
}

TEST_F(CudaPluginTest, EventsOrderStreamsAndTime) {
  start();
  oar_device_t device = open();
  oar_stream_t a = stream(device), b = stream(device);
  oar_memory_t m = allocate(device, 64);
  oar_event_t start_event = event(device, OAR_EVENT_FLAG_TIMING);
  oar_event_t end_event = event(device, OAR_EVENT_FLAG_TIMING);
  oar_event_t plain = event(device);
  bool done = false;
  ASSERT_EQ(api()->event_query(plain, &done), OAR_STATUS_OK);
  EXPECT_TRUE(done);  // never recorded
  EXPECT_EQ(api()->stream_wait_event(b, plain), OAR_STATUS_FAILED_PRECONDITION);
  std::vector<uint8_t> in(64, 3), out(64, 0);
  ASSERT_EQ(api()->event_record(start_event, a), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->memory_copy_h2d(a, m, 0, in.data(), 64), OAR_STATUS_OK);
  ASSERT_EQ(api()->event_record(end_event, a), OAR_STATUS_OK) << last_error;
  float ms = -1;
  EXPECT_EQ(api()->event_elapsed_ms(start_event, end_event, &ms), OAR_STATUS_FAILED_PRECONDITION);
  // b waits for a's copy, then reads it back.
  ASSERT_EQ(api()->stream_wait_event(b, end_event), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->memory_copy_d2h(b, out.data(), m, 0, 64), OAR_STATUS_OK);
  ASSERT_EQ(api()->stream_synchronize(b), OAR_STATUS_OK) << last_error;
  EXPECT_EQ(out, in);
  ASSERT_EQ(api()->event_synchronize(end_event), OAR_STATUS_OK);
  ASSERT_EQ(api()->event_elapsed_ms(start_event, end_event, &ms), OAR_STATUS_OK) << last_error;
  EXPECT_GE(ms, 0.0f);
  ASSERT_EQ(api()->event_record(plain, a), OAR_STATUS_OK);
  ASSERT_EQ(api()->event_synchronize(plain), OAR_STATUS_OK);
  EXPECT_EQ(api()->event_elapsed_ms(start_event, plain, &ms), OAR_STATUS_FAILED_PRECONDITION);
  for (oar_event_t e : {start_event, end_event, plain}) EXPECT_EQ(api()->event_destroy(e), 0);
  EXPECT_EQ(api()->memory_free(device, m), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_destroy(a), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_destroy(b), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
  EXPECT_EQ(fake().live(), 0) << fake().log();
}

struct Calls {
  std::vector<oar_status_t> statuses;
  std::vector<uint8_t>* data = nullptr;
  uint8_t seen = 0;
};
void record_call(void* user_data, oar_status_t status) {
  auto* calls = static_cast<Calls*>(user_data);
  calls->statuses.push_back(status);
  if (calls->data != nullptr) calls->seen = (*calls->data)[0];
}

TEST_F(CudaPluginTest, HostCallbacksRunAfterTheWorkBeforeThem) {
  start();
  oar_device_t device = open();
  oar_stream_t s = stream(device);
  oar_memory_t m = allocate(device, 8);
  std::vector<uint8_t> in(8, 9), out(8, 0);
  Calls calls;
  calls.data = &out;
  ASSERT_EQ(api()->memory_copy_h2d(s, m, 0, in.data(), 8), OAR_STATUS_OK);
  ASSERT_EQ(api()->memory_copy_d2h(s, out.data(), m, 0, 8), OAR_STATUS_OK);
  ASSERT_EQ(api()->stream_add_host_callback(s, record_call, &calls), OAR_STATUS_OK);
  EXPECT_TRUE(calls.statuses.empty());
  ASSERT_EQ(api()->stream_synchronize(s), OAR_STATUS_OK);
  ASSERT_EQ(calls.statuses.size(), 1u);
  EXPECT_EQ(calls.statuses[0], OAR_STATUS_OK);
  EXPECT_EQ(calls.seen, 9);  // the copy before it had landed
  EXPECT_EQ(api()->stream_add_host_callback(s, nullptr, nullptr), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(api()->memory_free(device, m), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
}

// The async error model: a fault in queued work (CUDA's sticky
// CUDA_ERROR_ILLEGAL_ADDRESS) fails the stream with the CUresult's name.
TEST_F(CudaPluginTest, AnAsynchronousFaultFailsTheStreamWithTheCUresultName) {
  setenv("OAR_CUDA_FAKE_FAULT_AFTER", "1", 1);  // the second operation faults
  start();
  oar_device_t device = open();
  oar_stream_t s = stream(device);
  oar_memory_t m = allocate(device, 64);
  std::vector<uint8_t> in(64, 1), out(64, 0);
  Calls calls;
  oar_event_t e = event(device);  // (a faulted context creates no more events)
  ASSERT_EQ(api()->memory_copy_h2d(s, m, 0, in.data(), 64), OAR_STATUS_OK);
  ASSERT_EQ(api()->memory_fill(s, m, 0, 2, 64), OAR_STATUS_OK);  // faults when it runs
  ASSERT_EQ(api()->memory_copy_d2h(s, out.data(), m, 0, 64), OAR_STATUS_OK);
  ASSERT_EQ(api()->stream_add_host_callback(s, record_call, &calls), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_synchronize(s), OAR_STATUS_ABORTED);
  EXPECT_NE(last_error.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << last_error;
  EXPECT_EQ(out, std::vector<uint8_t>(64, 0));  // nothing after the fault ran
  // The driver never runs the callback after the fault: the plugin calls it
  // with the failure, once.
  ASSERT_EQ(calls.statuses.size(), 1u);
  EXPECT_EQ(calls.statuses[0], OAR_STATUS_ABORTED);
  // The stream stays failed, for queries, events recorded afterwards and new work.
  bool idle = false;
  EXPECT_EQ(api()->stream_query(s, &idle), OAR_STATUS_ABORTED);
  EXPECT_EQ(api()->stream_synchronize(s), OAR_STATUS_ABORTED);
  ASSERT_EQ(api()->event_record(e, s), OAR_STATUS_OK);
  EXPECT_EQ(api()->event_synchronize(e), OAR_STATUS_ABORTED);
  EXPECT_EQ(api()->memory_copy_h2d(s, m, 0, in.data(), 64), OAR_STATUS_ABORTED);
  Calls late;
  ASSERT_EQ(api()->stream_add_host_callback(s, record_call, &late), OAR_STATUS_OK);
  ASSERT_EQ(late.statuses.size(), 1u);
  EXPECT_EQ(late.statuses[0], OAR_STATUS_ABORTED);
  EXPECT_EQ(api()->device_synchronize(device), OAR_STATUS_ABORTED);
  // Teardown of a faulted device still releases everything.
  EXPECT_EQ(api()->event_destroy(e), OAR_STATUS_OK);
  EXPECT_EQ(api()->memory_free(device, m), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_destroy(s), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
  EXPECT_EQ(fake().live(), 0) << fake().log();
  EXPECT_EQ(calls.statuses.size(), 1u);  // still once
}

TEST_F(CudaPluginTest, AFaultOnOneStreamFailsTheOthersOfTheContextWhenTheyLookAgain) {
  setenv("OAR_CUDA_FAKE_FAULT_AFTER", "0", 1);
  start();
  oar_device_t device = open();
  oar_stream_t a = stream(device), b = stream(device);
  oar_memory_t m = allocate(device, 8);
  ASSERT_EQ(api()->memory_fill(a, m, 0, 1, 8), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_synchronize(a), OAR_STATUS_ABORTED);
  // CUDA's sticky errors poison the context: b reports it too.
  EXPECT_EQ(api()->stream_synchronize(b), OAR_STATUS_ABORTED);
  EXPECT_NE(last_error.find("cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS"),
            std::string::npos)
      << last_error;
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
  EXPECT_EQ(fake().live(), 0) << fake().log();
}

TEST_F(CudaPluginTest, ArgumentsAreChecked) {
  start();
  oar_device_t device = open();
  oar_stream_desc_t desc{OAR_STREAM_DESC_STRUCT_SIZE, 0, 1};
  oar_stream_t s = nullptr;
  EXPECT_EQ(api()->stream_create(device, &desc, &s), OAR_STATUS_INVALID_ARGUMENT);
  oar_event_t e = nullptr;
  EXPECT_EQ(api()->event_create(device, 4, &e), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(api()->stream_destroy(nullptr), OAR_STATUS_OK);
  EXPECT_EQ(api()->memory_free(device, nullptr), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(nullptr), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
}

}  // namespace
