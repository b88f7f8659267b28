// The behaviour every GPU plugin built on gpu_stream.h must show against its
// fake vendor library (memory, copies, streams, events, host callbacks, the
// asynchronous error model, argument checks), written once: each plugin's
// gtest program derives its fixture from BehaviourTest and calls these
// bodies from its own TEST_Fs, with its runtime's names in FakeNames.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_plugin_test_util.h"
#include "oar/oar.h"

namespace oar_gpu_test {

// The names the shared tests look for, in the plugin's runtime's words.
struct FakeNames {
  const char* runtime_var;            // the plugin's variable naming the vendor library's path
  const char* fake_path;              // the fake's path
  std::vector<const char*> switches;  // the variables the fake and the plugin read, unset first
  const char* memory_switch;          // the fake's device memory size switch
  const char* fault_after_switch;     // the fake's "fault after n operations" switch
  const char* pinned_allocate;        // the runtime calls for pinned host memory, in the fake's log
  const char* pinned_free;
  const char* out_of_memory;      // the plugin's error for a failed device allocation
  const char* synchronize_fault;  // ... and for a stream synchronize after a fault
};

// The fake vendor library's inspection entry points <prefix>log, live,
// launch_count, launch and clear_launches (see the fakes), from the library at
// |path|, which stays loaded: the test holds it.
struct FakeInspection {
  FakeInspection(const char* path, const std::string& prefix) {
    void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    auto symbol = [&](const char* name) {
      return library == nullptr ? nullptr : dlsym(library, (prefix + name).c_str());
    };
    log = reinterpret_cast<const char* (*)()>(symbol("log"));
    live = reinterpret_cast<int (*)()>(symbol("live"));
    launch_count = reinterpret_cast<size_t (*)()>(symbol("launch_count"));
    launch = reinterpret_cast<decltype(launch)>(symbol("launch"));
    clear_launches = reinterpret_cast<void (*)()>(symbol("clear_launches"));
  }
  const char* (*log)() = nullptr;
  int (*live)() = nullptr;
  size_t (*launch_count)() = nullptr;
  bool (*launch)(size_t, char*, size_t, unsigned*, unsigned*, unsigned*, const void**,
                 size_t*) = nullptr;
  void (*clear_launches)() = nullptr;
};

// A host callback's calls: the statuses it got and the first byte of |data|
// when it ran.
struct Calls {
  std::vector<oar_status_t> statuses;
  std::vector<uint8_t>* data = nullptr;
  uint8_t seen = 0;
};
inline void record_call(void* user_data, oar_status_t status) {
  auto* calls = static_cast<Calls*>(user_data);
  calls->statuses.push_back(status);
  if (calls->data != nullptr) calls->seen = (*calls->data)[0];
}

template <const oar_plugin_api_t* (*Api)()>
class BehaviourTest : public PluginTest<Api> {
 protected:
  // The fake's inspection calls and names.
  virtual FakeInspection& inspection() = 0;
  virtual const FakeNames& names() = 0;
  // The plugin's own switches for every test, after those in names() were unset.
  virtual void set_switches() {}

  const char* fake_log() { return inspection().log(); }
  int fake_live() { return inspection().live(); }

  void SetUp() override {
    ASSERT_NE(Api(), nullptr) << dlerror();
    ASSERT_NE(inspection().log, nullptr) << names().fake_path;
    for (const char* name : names().switches) unsetenv(name);
    setenv(names().runtime_var, names().fake_path, 1);
    set_switches();
    logs.clear();
  }
  void TearDown() override {
    if (this->initialized_) {
      EXPECT_EQ(Api()->finalize(), OAR_STATUS_OK);
    }
    unsetenv(names().runtime_var);
  }

  // FinalizeReleasesDevicesTheHostLeft
  void finalize_releases_devices_the_host_left() {
    this->start();
    oar_device_t device = this->open();
    this->stream(device);
    this->allocate(device, 16);
    this->finalize();
    EXPECT_EQ(this->fake_live(), 0) << this->fake_log();
  }

  // CopiesAndFillsAreStreamOrderedAndAsynchronous
  void copies_and_fills_are_stream_ordered_and_asynchronous() {
    this->start();
    oar_device_t device = this->open();
    oar_stream_t s = this->stream(device);
    oar_memory_t a = this->allocate(device, 256);
    oar_memory_t b = this->allocate(device, 256);
    std::vector<uint8_t> in(256), out(256, 0xee);
    for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i);
    ASSERT_EQ(Api()->memory_copy_h2d(s, a, 0, in.data(), 256), OAR_STATUS_OK) << last_error;
    ASSERT_EQ(Api()->memory_fill(s, a, 16, 0x7f, 16), OAR_STATUS_OK) << last_error;
    ASSERT_EQ(Api()->memory_copy_d2d(s, b, 8, a, 0, 248), OAR_STATUS_OK) << last_error;
    ASSERT_EQ(Api()->memory_copy_d2h(s, out.data(), b, 0, 256), OAR_STATUS_OK) << last_error;
    bool idle = true;
    ASSERT_EQ(Api()->stream_query(s, &idle), OAR_STATUS_OK) << last_error;
    EXPECT_FALSE(idle);  // the fake ran nothing yet
    ASSERT_EQ(Api()->stream_synchronize(s), OAR_STATUS_OK) << last_error;
    for (size_t i = 8; i < 256; ++i) {
      const uint8_t expected = (i - 8 >= 16 && i - 8 < 32) ? 0x7f : uint8_t(i - 8);
      ASSERT_EQ(out[i], expected) << i;
    }
    ASSERT_EQ(Api()->stream_query(s, &idle), OAR_STATUS_OK);
    EXPECT_TRUE(idle);
    // Ranges are checked before the runtime sees them.
    EXPECT_EQ(Api()->memory_copy_h2d(s, a, 200, in.data(), 57), OAR_STATUS_OUT_OF_RANGE);
    EXPECT_EQ(Api()->memory_copy_d2d(s, a, 0, a, 8, 16), OAR_STATUS_INVALID_ARGUMENT);
    uint64_t free_bytes = 0, total = 0;
    ASSERT_EQ(Api()->device_memory_info(device, &free_bytes, &total), OAR_STATUS_OK);
    EXPECT_EQ(total - free_bytes, 512u);
    EXPECT_EQ(Api()->memory_free(device, a), OAR_STATUS_OK);
    EXPECT_EQ(Api()->memory_free(device, a), OAR_STATUS_INVALID_ARGUMENT);  // twice
    EXPECT_EQ(Api()->memory_free(device, b), OAR_STATUS_OK);
    EXPECT_EQ(Api()->stream_destroy(s), OAR_STATUS_OK);
    EXPECT_EQ(Api()->device_close(device), OAR_STATUS_OK);
    EXPECT_EQ(this->fake_live(), 0) << this->fake_log();
  }

  // PinnedHostMemoryHasAHostAddressDeviceMemoryHasNone
  void pinned_host_memory_has_a_host_address_device_memory_has_none() {
    this->start();
    oar_device_t device = this->open();
    oar_memory_t pinned = this->allocate(device, 64, OAR_MEMORY_KIND_HOST_PINNED);
    oar_memory_t dev = this->allocate(device, 64);
    void* address = nullptr;
    ASSERT_EQ(Api()->memory_host_address(device, pinned, &address), OAR_STATUS_OK) << last_error;
    std::memset(address, 5, 64);
    EXPECT_EQ(Api()->memory_host_address(device, dev, &address), OAR_STATUS_INVALID_ARGUMENT);
    oar_memory_t unified = nullptr;
    EXPECT_EQ(Api()->memory_allocate(device, 64, OAR_MEMORY_KIND_UNIFIED, &unified),
              OAR_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(this->fake_log()).find(names().pinned_allocate), std::string::npos);
    EXPECT_EQ(Api()->memory_free(device, pinned), OAR_STATUS_OK);
    EXPECT_EQ(Api()->memory_free(device, dev), OAR_STATUS_OK);
    EXPECT_NE(std::string(this->fake_log()).find(names().pinned_free), std::string::npos);
    EXPECT_EQ(Api()->device_close(device), OAR_STATUS_OK);
  }

  // AllocationFailureIsResourceExhaustedWithTheRuntimesName
  void allocation_failure_is_resource_exhausted_with_the_runtimes_name() {
    setenv(names().memory_switch, "4096", 1);
    this->start();
    oar_device_t device = this->open();
    oar_memory_t m = nullptr;
    EXPECT_EQ(Api()->memory_allocate(device, 4097, OAR_MEMORY_KIND_DEVICE, &m),
              OAR_STATUS_INVALID_ARGUMENT);  // above max_allocation_size
    oar_memory_t first = this->allocate(device, 4000);
    EXPECT_EQ(Api()->memory_allocate(device, 1000, OAR_MEMORY_KIND_DEVICE, &m),
              OAR_STATUS_RESOURCE_EXHAUSTED);
    EXPECT_NE(last_error.find(names().out_of_memory), std::string::npos) << last_error;
    EXPECT_EQ(m, nullptr);
    EXPECT_EQ(Api()->memory_free(device, first), OAR_STATUS_OK);
    EXPECT_EQ(Api()->device_close(device), OAR_STATUS_OK);
  }

  // EventsOrderStreamsAndTime
  void events_order_streams_and_time() {
    this->start();
    oar_device_t device = this->open();
    oar_stream_t a = this->stream(device), b = this->stream(device);
    oar_memory_t m = this->allocate(device, 64);
    oar_event_t start_event = this->event(device, OAR_EVENT_FLAG_TIMING);
    oar_event_t end_event = this->event(device, OAR_EVENT_FLAG_TIMING);
    oar_event_t plain = this->event(device);
    bool done = false;
    ASSERT_EQ(Api()->event_query(plain, &done), OAR_STATUS_OK);
    EXPECT_TRUE(done);  // never recorded
    EXPECT_EQ(Api()->stream_wait_event(b, plain), OAR_STATUS_FAILED_PRECONDITION);
    std::vector<uint8_t> in(64, 3), out(64, 0);
    ASSERT_EQ(Api()->event_record(start_event, a), OAR_STATUS_OK) << last_error;
    ASSERT_EQ(Api()->memory_copy_h2d(a, m, 0, in.data(), 64), OAR_STATUS_OK);
    ASSERT_EQ(Api()->event_record(end_event, a), OAR_STATUS_OK) << last_error;
    float ms = -1;
    EXPECT_EQ(Api()->event_elapsed_ms(start_event, end_event, &ms), OAR_STATUS_FAILED_PRECONDITION);
    // b waits for a's copy, then reads it back.
    ASSERT_EQ(Api()->stream_wait_event(b, end_event), OAR_STATUS_OK) << last_error;
    ASSERT_EQ(Api()->memory_copy_d2h(b, out.data(), m, 0, 64), OAR_STATUS_OK);
    ASSERT_EQ(Api()->stream_synchronize(b), OAR_STATUS_OK) << last_error;
    EXPECT_EQ(out, in);
    ASSERT_EQ(Api()->event_query(end_event, &done), OAR_STATUS_OK);
    EXPECT_TRUE(done);
    ASSERT_EQ(Api()->event_synchronize(end_event), OAR_STATUS_OK);
    ASSERT_EQ(Api()->event_elapsed_ms(start_event, end_event, &ms), OAR_STATUS_OK) << last_error;
    EXPECT_GE(ms, 0.0f);
    ASSERT_EQ(Api()->event_record(plain, a), OAR_STATUS_OK);
    ASSERT_EQ(Api()->event_synchronize(plain), OAR_STATUS_OK);
    EXPECT_EQ(Api()->event_elapsed_ms(start_event, plain, &ms), OAR_STATUS_FAILED_PRECONDITION);
    for (oar_event_t e : {start_event, end_event, plain}) EXPECT_EQ(Api()->event_destroy(e), 0);
    EXPECT_EQ(Api()->memory_free(device, m), OAR_STATUS_OK);
    EXPECT_EQ(Api()->stream_destroy(a), OAR_STATUS_OK);
    EXPECT_EQ(Api()->stream_destroy(b), OAR_STATUS_OK);
    EXPECT_EQ(Api()->device_close(device), OAR_STATUS_OK);
    EXPECT_EQ(this->fake_live(), 0) << this->fake_log();
  }

  // HostCallbacksRunAfterTheWorkBeforeThem
  void host_callbacks_run_after_the_work_before_them() {
    this->start();
    oar_device_t device = this->open();
    oar_stream_t s = this->stream(device);
    oar_memory_t m = this->allocate(device, 8);
    std::vector<uint8_t> in(8, 9), out(8, 0);
    Calls calls;
    calls.data = &out;
    ASSERT_EQ(Api()->memory_copy_h2d(s, m, 0, in.data(), 8), OAR_STATUS_OK);
    ASSERT_EQ(Api()->memory_copy_d2h(s, out.data(), m, 0, 8), OAR_STATUS_OK);
    ASSERT_EQ(Api()->stream_add_host_callback(s, record_call, &calls), OAR_STATUS_OK);
    EXPECT_TRUE(calls.statuses.empty());
    ASSERT_EQ(Api()->stream_synchronize(s), OAR_STATUS_OK);
    ASSERT_EQ(calls.statuses.size(), 1u);
    EXPECT_EQ(calls.statuses[0], OAR_STATUS_OK);
    EXPECT_EQ(calls.seen, 9);  // the copy before it had landed
    EXPECT_EQ(Api()->stream_add_host_callback(s, nullptr, nullptr), OAR_STATUS_INVALID_ARGUMENT);
    // A callback still queued when its stream is destroyed is called once, CANCELLED.
    Calls pending;
    ASSERT_EQ(Api()->memory_copy_h2d(s, m, 0, in.data(), 8), OAR_STATUS_OK);
    ASSERT_EQ(Api()->stream_add_host_callback(s, record_call, &pending), OAR_STATUS_OK);
    EXPECT_EQ(Api()->stream_destroy(s), OAR_STATUS_OK);
    ASSERT_EQ(pending.statuses.size(), 1u);
    EXPECT_EQ(pending.statuses[0], OAR_STATUS_OK);  // destroy synchronized first: it ran
    EXPECT_EQ(Api()->memory_free(device, m), OAR_STATUS_OK);
    EXPECT_EQ(Api()->device_close(device), OAR_STATUS_OK);
  }

  // AnAsynchronousFaultFailsTheStreamWithTheErrorsName
  void an_asynchronous_fault_fails_the_stream_with_the_errors_name() {
    setenv(names().fault_after_switch, "1", 1);  // the second operation faults
    this->start();
    oar_device_t device = this->open();
    oar_stream_t s = this->stream(device);
    oar_memory_t m = this->allocate(device, 64);
    std::vector<uint8_t> in(64, 1), out(64, 0);
    Calls calls;
    oar_event_t e = this->event(device);
    ASSERT_EQ(Api()->memory_copy_h2d(s, m, 0, in.data(), 64), OAR_STATUS_OK);
    ASSERT_EQ(Api()->memory_fill(s, m, 0, 2, 64), OAR_STATUS_OK);  // faults when it runs
    ASSERT_EQ(Api()->memory_copy_d2h(s, out.data(), m, 0, 64), OAR_STATUS_OK);
    ASSERT_EQ(Api()->stream_add_host_callback(s, record_call, &calls), OAR_STATUS_OK);
    EXPECT_EQ(Api()->stream_synchronize(s), OAR_STATUS_ABORTED);
    EXPECT_NE(last_error.find(names().synchronize_fault), std::string::npos) << last_error;
    EXPECT_EQ(out, std::vector<uint8_t>(64, 0));  // nothing after the fault ran
    // The runtime never runs the callback after the fault: the plugin calls it
    // with the failure, once.
    ASSERT_EQ(calls.statuses.size(), 1u);
    EXPECT_EQ(calls.statuses[0], OAR_STATUS_ABORTED);
    // The stream stays failed, for queries, events recorded afterwards and new work.
    bool idle = false;
    EXPECT_EQ(Api()->stream_query(s, &idle), OAR_STATUS_ABORTED);
    EXPECT_EQ(Api()->stream_synchronize(s), OAR_STATUS_ABORTED);
    ASSERT_EQ(Api()->event_record(e, s), OAR_STATUS_OK);
    EXPECT_EQ(Api()->event_synchronize(e), OAR_STATUS_ABORTED);
    EXPECT_EQ(Api()->memory_copy_h2d(s, m, 0, in.data(), 64), OAR_STATUS_ABORTED);
    Calls late;
    ASSERT_EQ(Api()->stream_add_host_callback(s, record_call, &late), OAR_STATUS_OK);
    ASSERT_EQ(late.statuses.size(), 1u);
    EXPECT_EQ(late.statuses[0], OAR_STATUS_ABORTED);
    EXPECT_EQ(Api()->device_synchronize(device), OAR_STATUS_ABORTED);
    // Teardown of a faulted device still releases everything.
    EXPECT_EQ(Api()->event_destroy(e), OAR_STATUS_OK);
    EXPECT_EQ(Api()->memory_free(device, m), OAR_STATUS_OK);
    EXPECT_EQ(Api()->stream_destroy(s), OAR_STATUS_OK);
    EXPECT_EQ(Api()->device_close(device), OAR_STATUS_OK);
    EXPECT_EQ(this->fake_live(), 0) << this->fake_log();
    EXPECT_EQ(calls.statuses.size(), 1u);  // still once
  }

  // AFaultOnOneStreamFailsTheOthersOfTheDeviceWhenTheyLookAgain
  void a_fault_on_one_stream_fails_the_others_when_they_look_again() {
    setenv(names().fault_after_switch, "0", 1);
    this->start();
    oar_device_t device = this->open();
    oar_stream_t a = this->stream(device), b = this->stream(device);
    oar_memory_t m = this->allocate(device, 8);
    ASSERT_EQ(Api()->memory_fill(a, m, 0, 1, 8), OAR_STATUS_OK);
    EXPECT_EQ(Api()->stream_synchronize(a), OAR_STATUS_ABORTED);
    // The sticky error poisons the context (CUDA) or device (HIP): b reports it too.
    EXPECT_EQ(Api()->stream_synchronize(b), OAR_STATUS_ABORTED);
    EXPECT_NE(last_error.find(names().synchronize_fault), std::string::npos) << last_error;
    EXPECT_EQ(Api()->device_close(device), OAR_STATUS_OK);
    EXPECT_EQ(this->fake_live(), 0) << this->fake_log();
  }

  // ArgumentsAreChecked
  void arguments_are_checked() {
    this->start();
    oar_device_t device = this->open();
    oar_stream_desc_t desc{OAR_STREAM_DESC_STRUCT_SIZE, 0, 1};
    oar_stream_t s = nullptr;
    EXPECT_EQ(Api()->stream_create(device, &desc, &s), OAR_STATUS_INVALID_ARGUMENT);
    oar_event_t e = nullptr;
    EXPECT_EQ(Api()->event_create(device, 4, &e), OAR_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(Api()->stream_destroy(nullptr), OAR_STATUS_OK);
    EXPECT_EQ(Api()->memory_free(device, nullptr), OAR_STATUS_OK);
    EXPECT_EQ(Api()->device_close(nullptr), OAR_STATUS_OK);
    EXPECT_EQ(Api()->device_close(device), OAR_STATUS_OK);
  }
};

}  // namespace oar_gpu_test
