// The hip plugin's runtime logic against the fake HIP runtime
// (fake_runtime.cc): the plugin is loaded through its C table, as the core
// loads it, and the fake's switches (environment variables read at hipInit)
// select the case. Nothing here computes on a GPU: the fake is no device.
//
// The operators are the cuda plugin's (plugins/cuda/operators.cc, tested in
// depth by cuda_plugin.CudaOperatorTest.*); the tests here check what the
// hip plugin adds: every registered signature launches a kernel that the
// embedded code object of the device's target holds, through
// hipModuleLaunchKernel, with matmul on OAR's own kernel.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "gpu_plugin_test_util.h"
#include "oar/oar.h"

namespace {

using oar_gpu_test::kHost;
using oar_gpu_test::last_error;
using oar_gpu_test::logs;

const oar_plugin_api_t* api() {
  static const oar_plugin_api_t* table = oar_gpu_test::load_plugin(OAR_HIP_PLUGIN_PATH);
  return table;
}

// The fake's inspection entry points (the fake stays loaded: we hold it).
struct Fake {
  Fake() {
    void* library = dlopen(OAR_HIP_FAKE_RUNTIME_PATH, RTLD_NOW | RTLD_LOCAL);
    log = reinterpret_cast<const char* (*)()>(dlsym(library, "oar_hip_fake_log"));
    live = reinterpret_cast<int (*)()>(dlsym(library, "oar_hip_fake_live"));
    launch_count = reinterpret_cast<size_t (*)()>(dlsym(library, "oar_hip_fake_launch_count"));
    launch = reinterpret_cast<decltype(launch)>(dlsym(library, "oar_hip_fake_launch"));
    clear_launches = reinterpret_cast<void (*)()>(dlsym(library, "oar_hip_fake_clear_launches"));
  }
  const char* (*log)() = nullptr;
  int (*live)() = nullptr;
  size_t (*launch_count)() = nullptr;
  bool (*launch)(size_t, char*, size_t, unsigned*, unsigned*, unsigned*, const void**,
                 size_t*) = nullptr;
  void (*clear_launches)() = nullptr;
};
Fake& fake() {
  static Fake f;
  return f;
}

const char* const kSwitches[] = {"OAR_HIP_FAKE_INIT_ERROR", "OAR_HIP_FAKE_DEVICES",
                                 "OAR_HIP_FAKE_MEMORY", "OAR_HIP_FAKE_FAULT_AFTER",
                                 "OAR_HIP_FAKE_FAULT_KERNEL"};

class HipPluginTest : public oar_gpu_test::PluginTest<api> {
 protected:
  void SetUp() override {
    ASSERT_NE(api(), nullptr) << dlerror();
    ASSERT_NE(fake().log, nullptr);
    for (const char* name : kSwitches) unsetenv(name);
    setenv("OAR_HIP_RUNTIME", OAR_HIP_FAKE_RUNTIME_PATH, 1);
    setenv("OAR_HIP_FAKE_ARCH", OAR_HIP_FIRST_TARGET, 1);  // a target the plugin was built for
    logs.clear();
  }
  void TearDown() override {
    if (initialized_) {
      EXPECT_EQ(api()->finalize(), OAR_STATUS_OK);
    }
    unsetenv("OAR_HIP_RUNTIME");
  }
};

TEST_F(HipPluginTest, NoRuntimeMeansZeroDevicesAndSaysWhy) {
  setenv("OAR_HIP_RUNTIME", "/nonexistent/libamdhip64.so.5", 1);
  start();
  EXPECT_EQ(count(), 0);
  EXPECT_NE(all_logs().find("hip: no HIP runtime: /nonexistent/libamdhip64.so.5 not found"),
            std::string::npos)
      << all_logs();
  oar_device_t device = nullptr;
  EXPECT_EQ(api()->device_open(0, &device), OAR_STATUS_OUT_OF_RANGE);
}

TEST_F(HipPluginTest, InitFailureIsNamed) {
  setenv("OAR_HIP_FAKE_INIT_ERROR", "35", 1);
  start();
  EXPECT_EQ(count(), 0);
  // (followed, on a machine without /dev/kfd, by that reason)
  EXPECT_NE(all_logs().find("hip: hipInit failed: hipErrorInsufficientDriver"), std::string::npos)
      << all_logs();
  EXPECT_NE(all_logs().find("The plugin serves 0 devices."), std::string::npos) << all_logs();
}

TEST_F(HipPluginTest, NoDevice) {
  setenv("OAR_HIP_FAKE_DEVICES", "0", 1);
  start();
  EXPECT_EQ(count(), 0);
  EXPECT_NE(all_logs().find("hip: no device (hipInit: hipErrorNoDevice)"), std::string::npos)
      << all_logs();
}

TEST_F(HipPluginTest, EnumeratesDevicesAndSkipsTargetsWithoutACodeObject) {
  setenv("OAR_HIP_FAKE_DEVICES", "3", 1);
  setenv("OAR_HIP_FAKE_ARCH",
         (std::string(OAR_HIP_FIRST_TARGET) + ",gfx000," + OAR_HIP_FIRST_TARGET).c_str(), 1);
  setenv("OAR_HIP_FAKE_MEMORY", "2147483648", 1);
  start();
  ASSERT_EQ(count(), 2);
  EXPECT_NE(all_logs().find("device 1 skipped: OAR fake HIP device 1 (no GPU) is gfx000, which "
                            "the plugin's code objects were not built for (" OAR_HIP_FIRST_TARGET),
            std::string::npos)
      << all_logs();
  oar_device_properties_t p{};
  p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
  ASSERT_EQ(api()->device_properties(1, &p), OAR_STATUS_OK) << last_error;
  EXPECT_STREQ(p.name, "OAR fake HIP device 2 (no GPU)");  // OAR's 1 is the runtime's 2
  EXPECT_STREQ(p.vendor, "AMD");
  EXPECT_EQ(std::string(p.driver_version),
            std::string("HIP runtime 5.2, ") + OAR_HIP_FIRST_TARGET + ":sramecc+:xnack-");
  EXPECT_EQ(p.kind, OAR_DEVICE_KIND_GPU);
  EXPECT_EQ(p.dlpack_device_type, kDLROCM);
  EXPECT_EQ(p.total_memory, uint64_t(2) << 30);
  EXPECT_EQ(p.compute_units, 62u);
  EXPECT_EQ(p.memory_kinds, uint32_t(OAR_MEMORY_KIND_DEVICE | OAR_MEMORY_KIND_HOST_PINNED));
  EXPECT_EQ(p.dtypes,
            uint32_t(OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16 | OAR_DTYPE_SUPPORT_F64));
  EXPECT_NE(p.native_dtypes & OAR_DTYPE_SUPPORT_F16, 0u);
  EXPECT_NE(p.features & OAR_DEVICE_FEATURE_TIMING_EVENTS, 0u);
  EXPECT_NE(p.features & OAR_DEVICE_FEATURE_HOST_CALLBACKS, 0u);
  // No RCCL: the core's staged engine serves collectives, the plugin claims none.
  EXPECT_EQ(p.features & OAR_DEVICE_FEATURE_COLLECTIVES, 0u);
  EXPECT_EQ(api()->comm_all_reduce, nullptr);
  EXPECT_EQ(api()->device_properties(2, &p), OAR_STATUS_OUT_OF_RANGE);
}

TEST_F(HipPluginTest, NativeDtypesFollowTheTarget) {
  // Only a built target is listed; gfx90a is the default (CI) target.
  if (std::string(OAR_HIP_FIRST_TARGET) != "gfx90a") GTEST_SKIP() << "built without gfx90a";
  start();
  oar_device_properties_t p{};
  p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
  ASSERT_EQ(api()->device_properties(0, &p), OAR_STATUS_OK) << last_error;
  // MI200: f16, f64, bf16 (matrix cores) and int8 dot products in hardware.
  EXPECT_EQ(p.native_dtypes, uint32_t(OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16 |
                                      OAR_DTYPE_SUPPORT_F64 | OAR_DTYPE_SUPPORT_INT8_DOT));
}

TEST_F(HipPluginTest, OpenLoadsTheCodeObjectOfTheDevicesTarget) {
  start();
  oar_device_t device = open();
  ASSERT_NE(device, nullptr);
  // The fake found the device's target in the bundle and every name of
  // kernels.list as a kernel descriptor of that code object.
  EXPECT_NE(std::string(fake().log()).find("hipModuleLoadData"), std::string::npos);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
}

TEST_F(HipPluginTest, CloseReleasesEverythingInOrder) {
  start();
  oar_device_t device = open();
  oar_stream_t s = stream(device);
  oar_event_t e = event(device);
  oar_memory_t m = allocate(device, 64);
  oar_memory_t pinned = allocate(device, 64, OAR_MEMORY_KIND_HOST_PINNED);
  (void)s, (void)e, (void)m, (void)pinned;
  // The host leaks all four: closing the device releases them, then the module.
  ASSERT_EQ(api()->device_close(device), OAR_STATUS_OK) << last_error;
  const std::string log = fake().log();
  const size_t unload = log.find("hipModuleUnload");
  ASSERT_NE(unload, std::string::npos) << log;
  for (const char* call : {"hipStreamDestroy", "hipEventDestroy", "hipFree;", "hipHostFree"}) {
    const size_t at = log.find(call);
    EXPECT_NE(at, std::string::npos) << call << " missing: " << log;
    EXPECT_LT(at, unload) << call << " after the module unload: " << log;
  }
  EXPECT_LT(log.find("hipStreamDestroy"), log.find("hipFree;")) << log;
  EXPECT_LT(log.find("hipEventDestroy"), log.find("hipFree;")) << log;
  EXPECT_EQ(fake().live(), 0);
  EXPECT_NE(all_logs().find("closed with 1 stream(s), 1 event(s) and 2 allocation(s)"),
            std::string::npos)
      << all_logs();
}

TEST_F(HipPluginTest, FinalizeReleasesDevicesTheHostLeft) {
  start();
  oar_device_t device = open();
  stream(device);
  allocate(device, 16);
  finalize();
  EXPECT_EQ(fake().live(), 0) << fake().log();
}

TEST_F(HipPluginTest, CopiesAndFillsAreStreamOrderedAndAsynchronous) {
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
  // Ranges are checked before the runtime sees them.
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

TEST_F(HipPluginTest, PinnedHostMemoryHasAHostAddressDeviceMemoryHasNone) {
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
  EXPECT_NE(std::string(fake().log()).find("hipHostMalloc"), std::string::npos);
  EXPECT_EQ(api()->memory_free(device, pinned), OAR_STATUS_OK);
  EXPECT_EQ(api()->memory_free(device, dev), OAR_STATUS_OK);
  EXPECT_NE(std::string(fake().log()).find("hipHostFree"), std::string::npos);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
}

TEST_F(HipPluginTest, AllocationFailureIsResourceExhaustedWithTheRuntimesName) {
  setenv("OAR_HIP_FAKE_MEMORY", "4096", 1);
  start();
  oar_device_t device = open();
  oar_memory_t m = nullptr;
  EXPECT_EQ(api()->memory_allocate(device, 4097, OAR_MEMORY_KIND_DEVICE, &m),
            OAR_STATUS_INVALID_ARGUMENT);  // above max_allocation_size
  oar_memory_t first = allocate(device, 4000);
  EXPECT_EQ(api()->memory_allocate(device, 1000, OAR_MEMORY_KIND_DEVICE, &m),
            OAR_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_NE(last_error.find("hipMalloc failed: hipErrorOutOfMemory"), std::string::npos)
      << last_error;
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(api()->memory_free(device, first), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
}

TEST_F(HipPluginTest, EventsOrderStreamsAndTime) {
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
  ASSERT_EQ(api()->event_query(end_event, &done), OAR_STATUS_OK);
  EXPECT_TRUE(done);
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

TEST_F(HipPluginTest, HostCallbacksRunAfterTheWorkBeforeThem) {
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
  // A callback still queued when its stream is destroyed is called once, CANCELLED.
  Calls pending;
  ASSERT_EQ(api()->memory_copy_h2d(s, m, 0, in.data(), 8), OAR_STATUS_OK);
  ASSERT_EQ(api()->stream_add_host_callback(s, record_call, &pending), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_destroy(s), OAR_STATUS_OK);
  ASSERT_EQ(pending.statuses.size(), 1u);
  EXPECT_EQ(pending.statuses[0], OAR_STATUS_OK);  // destroy synchronized first: it ran
  EXPECT_EQ(api()->memory_free(device, m), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
}

// The async error model: a fault in queued work (hipErrorIllegalAddress)
// fails the stream with the hipError_t's name.
TEST_F(HipPluginTest, AnAsynchronousFaultFailsTheStreamWithTheErrorsName) {
  setenv("OAR_HIP_FAKE_FAULT_AFTER", "1", 1);  // the second operation faults
  start();
  oar_device_t device = open();
  oar_stream_t s = stream(device);
  oar_memory_t m = allocate(device, 64);
  std::vector<uint8_t> in(64, 1), out(64, 0);
  Calls calls;
  oar_event_t e = event(device);
  ASSERT_EQ(api()->memory_copy_h2d(s, m, 0, in.data(), 64), OAR_STATUS_OK);
  ASSERT_EQ(api()->memory_fill(s, m, 0, 2, 64), OAR_STATUS_OK);  // faults when it runs
  ASSERT_EQ(api()->memory_copy_d2h(s, out.data(), m, 0, 64), OAR_STATUS_OK);
  ASSERT_EQ(api()->stream_add_host_callback(s, record_call, &calls), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_synchronize(s), OAR_STATUS_ABORTED);
  EXPECT_NE(last_error.find("hip: hipStreamSynchronize failed: hipErrorIllegalAddress"),
            std::string::npos)
      << last_error;
  EXPECT_EQ(out, std::vector<uint8_t>(64, 0));  // nothing after the fault ran
  // The runtime never runs the callback after the fault: the plugin calls it
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

TEST_F(HipPluginTest, AFaultOnOneStreamFailsTheOthersOfTheDeviceWhenTheyLookAgain) {
  setenv("OAR_HIP_FAKE_FAULT_AFTER", "0", 1);
  start();
  oar_device_t device = open();
  oar_stream_t a = stream(device), b = stream(device);
  oar_memory_t m = allocate(device, 8);
  ASSERT_EQ(api()->memory_fill(a, m, 0, 1, 8), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_synchronize(a), OAR_STATUS_ABORTED);
  EXPECT_EQ(api()->stream_synchronize(b), OAR_STATUS_ABORTED);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
  EXPECT_EQ(fake().live(), 0) << fake().log();
}

TEST_F(HipPluginTest, EachCallRunsOnItsDevice) {
  setenv("OAR_HIP_FAKE_DEVICES", "2", 1);
  start();
  ASSERT_EQ(count(), 2);
  oar_device_t d0 = open(0), d1 = open(1);
  oar_stream_t s1 = stream(d1);
  oar_memory_t m0 = allocate(d0, 1000);
  oar_memory_t m1 = allocate(d1, 24);
  uint64_t free_bytes = 0, total = 0;
  // The fake accounts memory per device: each allocation on its own device.
  ASSERT_EQ(api()->device_memory_info(d1, &free_bytes, &total), OAR_STATUS_OK);
  EXPECT_EQ(total - free_bytes, 24u);
  ASSERT_EQ(api()->device_memory_info(d0, &free_bytes, &total), OAR_STATUS_OK);
  EXPECT_EQ(total - free_bytes, 1000u);
  // A stream of device 1 used after device 0 was made current still works
  // (the fake refuses work queued for another device's stream... none here).
  ASSERT_EQ(api()->memory_fill(s1, m1, 0, 1, 24), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_synchronize(s1), OAR_STATUS_OK);
  EXPECT_EQ(api()->memory_free(d0, m0), OAR_STATUS_OK);
  EXPECT_EQ(api()->memory_free(d1, m1), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(d0), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(d1), OAR_STATUS_OK);
  EXPECT_EQ(fake().live(), 0) << fake().log();
}

TEST_F(HipPluginTest, ArgumentsAreChecked) {
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

// --- operators: the cuda plugin's, launched through HIP ---------------------------

struct Def {
  std::string op;
  std::vector<DLDataType> dtypes;
  size_t inputs = 0, outputs = 0;
  oar_kernel_fn fn = nullptr;
  void* user_data = nullptr;
};

oar_status_t capture(void* context, const oar_kernel_def_t* def) {
  Def d;
  d.op = def->op_name;
  d.dtypes.assign(def->dtypes, def->dtypes + def->num_inputs + def->num_outputs);
  d.inputs = def->num_inputs;
  d.outputs = def->num_outputs;
  d.fn = def->fn;
  d.user_data = def->user_data;
  static_cast<std::vector<Def>*>(context)->push_back(d);
  return OAR_STATUS_OK;
}

struct Launch {
  std::string name;
  unsigned grid[3] = {}, block[3] = {}, shared = 0;
  std::string params;
};

std::vector<Launch> launches() {
  std::vector<Launch> all;
  for (size_t i = 0; i < fake().launch_count(); ++i) {
    Launch l;
    char n[128];
    const void* params = nullptr;
    size_t size = 0;
    fake().launch(i, n, sizeof n, l.grid, l.block, &l.shared, &params, &size);
    l.name = n;
    l.params.assign(static_cast<const char*>(params), size);
    all.push_back(l);
  }
  return all;
}

struct Tensor {
  std::vector<int64_t> shape, strides;
  DLTensor t{};
};

class HipOperatorTest : public HipPluginTest {
 protected:
  void start_and_register() {
    start();
    oar_kernel_registrar_t registrar{OAR_KERNEL_REGISTRAR_STRUCT_SIZE, &defs_, capture};
    ASSERT_EQ(api()->register_kernels(&registrar), OAR_STATUS_OK) << last_error;
    device_ = open();
    stream_ = stream(device_);
    fake().clear_launches();
  }
  DLTensor tensor(std::vector<int64_t> shape, DLDataType dtype) {
    tensors_.emplace_back();
    Tensor& x = tensors_.back();
    x.shape = std::move(shape);
    x.strides.assign(x.shape.size(), 1);
    uint64_t n = 1;
    for (size_t d = x.shape.size(); d-- > 0;) {
      x.strides[d] = int64_t(n);
      n *= uint64_t(x.shape[d]);
    }
    x.t.data = allocate(device_, n * dtype.bits / 8 + 1);
    x.t.device = {kDLROCM, 0};
    x.t.ndim = int(x.shape.size());
    x.t.dtype = dtype;
    x.t.shape = x.shape.data();
    x.t.strides = x.strides.data();
    return x.t;
  }
  oar_status_t call(const Def& def, std::vector<DLTensor> inputs, std::vector<DLTensor> outputs,
                    std::vector<oar_attr_t> attrs = {}) {
    oar_kernel_call_t c{};
    c.struct_size = OAR_KERNEL_CALL_STRUCT_SIZE;
    c.device = device_;
    c.stream = stream_;
    c.inputs = inputs.data();
    c.num_inputs = inputs.size();
    c.outputs = outputs.data();
    c.num_outputs = outputs.size();
    c.attrs = attrs.data();
    c.num_attrs = attrs.size();
    c.user_data = def.user_data;
    return def.fn(&c);
  }

  std::vector<Def> defs_;
  std::deque<Tensor> tensors_;
  oar_device_t device_ = nullptr;
  oar_stream_t stream_ = nullptr;
};

// Every registered signature, called once with small tensors, launches one
// kernel of the code object (kernels.list; device_open found each name as a
// kernel descriptor of the device's target) with 256 threads a block, its
// parameters in one buffer; every kernel of the list serves some operator.
TEST_F(HipOperatorTest, EveryRegisteredSignatureLaunchesAKernelOfTheCodeObject) {
  start_and_register();
  EXPECT_EQ(defs_.size(), 218u);  // the cuda plugin's operator table
  std::set<std::string> image;
  std::ifstream list(OAR_CUDA_KERNEL_LIST);
  for (std::string line; std::getline(list, line);) {
    if (!line.empty()) image.insert(line);
  }
  ASSERT_GT(image.size(), 100u);
  std::set<std::string> used;
  const int64_t perm[] = {1, 0};
  for (const auto& d : defs_) {
    SCOPED_TRACE(d.op);
    std::vector<DLTensor> inputs;
    std::vector<oar_attr_t> attrs;
    for (size_t i = 0; i < d.inputs; ++i) {
      std::vector<int64_t> shape = {2, 3};
      if (d.op == "layer_norm" && i > 0) shape = {3};
      if (d.op == "matmul" && i > 0) shape = {3, 2};
      if (d.op == "index_select" && i > 0) shape = {2};
      inputs.push_back(tensor(shape, d.dtypes[i]));
    }
    std::vector<int64_t> out_shape = {2, 3};
    const std::string op = d.op;
    if (op == "sum" || op == "mean" || op == "max" || op == "min" || op == "prod") out_shape = {};
    if (op == "matmul") out_shape = {2, 2};
    oar_attr_t a{};
    if (op == "transpose") {
      out_shape = {3, 2};
      a.name = "perm";
      a.type = OAR_ATTR_TYPE_INT_ARRAY;
      a.value.ints = {perm, 2};
      attrs.push_back(a);
    } else if (op == "gather") {
      a.name = "axis";
      a.type = OAR_ATTR_TYPE_INT;
      a.value.i = 1;
      attrs.push_back(a);
    } else if (op == "fill") {
      a.name = "value";
      a.type = OAR_ATTR_TYPE_FLOAT;
      a.value.f = 1.5;
      attrs.push_back(a);
    }
    std::vector<DLTensor> outputs = {tensor(out_shape, d.dtypes[d.inputs])};
    for (const char* mode : {"none", "tanh"}) {
      std::vector<oar_attr_t> these = attrs;
      if (op == "gelu") {
        oar_attr_t g{};
        g.name = "approximate";
        g.type = OAR_ATTR_TYPE_STRING;
        g.value.s = mode;
        these.push_back(g);
      } else if (std::string(mode) == "tanh") {
        break;
      }
      fake().clear_launches();
      ASSERT_EQ(call(d, inputs, outputs, these), OAR_STATUS_OK) << last_error;
      const auto all = launches();
      ASSERT_EQ(all.size(), 1u);
      EXPECT_EQ(image.count(all[0].name), 1u) << all[0].name;
      EXPECT_EQ(all[0].block[0], 256u);
      EXPECT_GE(all[0].grid[0], 1u);
      EXPECT_GE(all[0].params.size(), 16u);  // at least two device pointers
      if (op == "matmul") {
        EXPECT_EQ(all[0].name.rfind("oar_matmul_", 0), 0u) << all[0].name;
      }
      used.insert(all[0].name);
    }
  }
  EXPECT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_OK) << last_error;
  std::vector<std::string> unused;
  for (const auto& k : image) {
    if (used.count(k) == 0) unused.push_back(k);
  }
  EXPECT_TRUE(unused.empty()) << unused.size() << " unused, e.g. " << unused[0];
}

TEST_F(HipOperatorTest, AFaultingKernelFailsTheStreamAndLaterCallsFailAtOnce) {
  setenv("OAR_HIP_FAKE_FAULT_KERNEL", "oar_add_f32", 1);
  start_and_register();
  const Def* add = nullptr;
  for (const auto& d : defs_) {
    if (d.op == "add" && d.dtypes[0].code == kDLFloat && d.dtypes[0].bits == 32) add = &d;
  }
  ASSERT_NE(add, nullptr);
  const DLDataType f32{kDLFloat, 32, 1};
  DLTensor a = tensor({4}, f32), b = tensor({4}, f32), y = tensor({4}, f32);
  ASSERT_EQ(call(*add, {a, b}, {y}), OAR_STATUS_OK) << last_error;
  EXPECT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_ABORTED);
  EXPECT_NE(last_error.find("hipErrorIllegalAddress"), std::string::npos) << last_error;
  fake().clear_launches();
  EXPECT_EQ(call(*add, {a, b}, {y}), OAR_STATUS_ABORTED);
  EXPECT_EQ(fake().launch_count(), 0u);
  // Memory of no allocation of the device is refused before any launch.
  DLTensor stray = y;
  int64_t host[4];
  stray.data = host;
  EXPECT_EQ(call(*add, {a, b}, {stray}), OAR_STATUS_INVALID_ARGUMENT);
}

TEST_F(HipOperatorTest, AnIndexOutOfRangeFailsTheStreamWithOutOfRange) {
  start_and_register();
  const Def* gather = nullptr;
  for (const auto& d : defs_) {
    if (d.op == "gather" && d.dtypes[0].bits == 32 && d.dtypes[1].bits == 64) gather = &d;
  }
  ASSERT_NE(gather, nullptr);
  DLTensor x = tensor({2, 3}, gather->dtypes[0]), index = tensor({2, 3}, gather->dtypes[1]);
  DLTensor y = tensor({2, 3}, gather->dtypes[0]);
  oar_attr_t axis{};
  axis.name = "axis";
  axis.type = OAR_ATTR_TYPE_INT;
  axis.value.i = 1;
  ASSERT_EQ(call(*gather, {x, index}, {y}, {axis}), OAR_STATUS_OK) << last_error;
  const auto all = launches();
  ASSERT_EQ(all.size(), 1u);
  // (x, index, y, error word, ...): the stream's word, zeroed on the stream
  // (the synchronize below runs the memset), which the test then writes as a
  // kernel thread that found index 7 of extent 3 would (flag, op 2 = gather).
  ASSERT_GE(all[0].params.size(), 32u);
  uint64_t word_address = 0;
  std::memcpy(&word_address, all[0].params.data() + 24, 8);
  ASSERT_NE(word_address, 0u);
  ASSERT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_OK) << last_error;  // word still 0
  ASSERT_EQ(call(*gather, {x, index}, {y}, {axis}), OAR_STATUS_OK) << last_error;
  struct {
    uint32_t flag;
    int32_t op;
    int64_t index;
    int64_t bound;
  } word{1, 2, 7, 3};
  std::memcpy(reinterpret_cast<void*>(uintptr_t(word_address)), &word, sizeof word);
  EXPECT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(last_error, "gather: index 7 out of range [0, 3)");
}

}  // namespace
