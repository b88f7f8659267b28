// The validation layer over the real cpu plugin. Each check is provoked
// through the C ABI (the table the core calls, device.api()); each test asserts
// the status code and that the report names the call and the object.
#include "oar/validate.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/loader/plugin.h"
#include "cpu_fixture.h"
#include "oar/ops.hpp"

namespace oar::testing {
namespace {

std::string hex(const void* pointer) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", pointer);
  return text;
}

RuntimeOptions validating() {
  RuntimeOptions options = cpu_only();
  options.validate = true;
  return options;
}

class ValidateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_validation_reports();
    runtime_ = std::make_unique<Runtime>(validating());
    ASSERT_EQ(runtime_->devices().size(), 1u) << "the cpu plugin did not load";
    device_ = runtime_->devices()[0];
    api_ = &device_->api();
    handle_ = device_->handle();
    stream_ = device_->default_stream().handle();
  }

  // The one report the last refused call made; asserts there was exactly one.
  static std::string only_report() {
    std::vector<std::string> reports = validation_reports();
    EXPECT_EQ(reports.size(), 1u) << ::testing::PrintToString(reports);
    clear_validation_reports();
    return reports.empty() ? std::string() : reports.back();
  }

  oar_memory_t allocate(uint64_t size, oar_device_t device = nullptr) {
    oar_memory_t memory = nullptr;
    EXPECT_EQ(api_->memory_allocate(device != nullptr ? device : handle_, size,
                                    OAR_MEMORY_KIND_DEVICE, &memory),
              OAR_STATUS_OK);
    return memory;
  }

  std::unique_ptr<Runtime> runtime_;
  Device* device_ = nullptr;
  const oar_plugin_api_t* api_ = nullptr;
  oar_device_t handle_ = nullptr;
  oar_stream_t stream_ = nullptr;
};

TEST_F(ValidateTest, FreedMemoryIsRefusedBeforeThePluginSeesIt) {
  oar_memory_t memory = allocate(4096);
  ASSERT_EQ(api_->memory_free(handle_, memory), OAR_STATUS_OK);
  uint8_t bytes[16] = {};
  EXPECT_EQ(api_->memory_copy_h2d(stream_, memory, 0, bytes, sizeof(bytes)),
            OAR_STATUS_INVALID_ARGUMENT);
  std::string report = only_report();
  EXPECT_NE(report.find("validation: memory_copy_h2d(stream " + hex(stream_)), std::string::npos)
      << report;
  EXPECT_NE(report.find("memory " + hex(memory) + " (4096 bytes"), std::string::npos) << report;
  EXPECT_NE(report.find("was freed (by memory_free)"), std::string::npos) << report;
  // The message travels the core's normal error flow.
  EXPECT_NE(device_->plugin()
                .status(OAR_STATUS_INVALID_ARGUMENT, "memory_copy_h2d")
                .message()
                .find(report),
            std::string::npos);

  // A double free is refused too.
  EXPECT_EQ(api_->memory_free(handle_, memory), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(only_report().find("validation: memory_free(device " + hex(handle_)),
            std::string::npos);
}

TEST_F(ValidateTest, FreedStreamAndEventAreRefused) {
  oar_stream_t stream = nullptr;
  ASSERT_EQ(api_->stream_create(handle_, nullptr, &stream), OAR_STATUS_OK);
  ASSERT_EQ(api_->stream_destroy(stream), OAR_STATUS_OK);
  EXPECT_EQ(api_->stream_synchronize(stream), OAR_STATUS_INVALID_ARGUMENT);
  std::string report = only_report();
  EXPECT_NE(report.find("validation: stream_synchronize(stream " + hex(stream) + "): stream " +
                        hex(stream) + " of cpu:0"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("was freed (by stream_destroy)"), std::string::npos) << report;

  oar_event_t event = nullptr;
  ASSERT_EQ(api_->event_create(handle_, 0, &event), OAR_STATUS_OK);
  ASSERT_EQ(api_->event_destroy(event), OAR_STATUS_OK);
  EXPECT_EQ(api_->event_record(event, stream_), OAR_STATUS_INVALID_ARGUMENT);
  report = only_report();
  EXPECT_NE(report.find("validation: event_record(event " + hex(event)), std::string::npos)
      << report;
  EXPECT_NE(report.find("was freed (by event_destroy)"), std::string::npos) << report;
}

TEST_F(ValidateTest, ForeignHandlesAreRefused) {
  int garbage = 0;
  auto* fake = reinterpret_cast<oar_stream_t>(&garbage);
  EXPECT_EQ(api_->stream_synchronize(fake), OAR_STATUS_INVALID_ARGUMENT);
  std::string report = only_report();
  EXPECT_NE(
      report.find("validation: stream_synchronize(stream " + hex(fake) + "): stream " + hex(fake) +
                  " is not a live stream of plugin 'cpu' (the plugin never "
                  "returned it)"),
      std::string::npos)
      << report;

  // A handle of another kind: an event passed as memory, a stream as an event.
  oar_event_t event = nullptr;
  ASSERT_EQ(api_->event_create(handle_, 0, &event), OAR_STATUS_OK);
  EXPECT_EQ(api_->memory_free(handle_, reinterpret_cast<oar_memory_t>(event)),
            OAR_STATUS_INVALID_ARGUMENT);
  report = only_report();
  EXPECT_NE(report.find("memory " + hex(event) +
                        " is not a live memory of plugin 'cpu' (it is "
                        "the event " +
                        hex(event)),
            std::string::npos)
      << report;
  EXPECT_EQ(api_->stream_wait_event(stream_, reinterpret_cast<oar_event_t>(stream_)),
            OAR_STATUS_INVALID_ARGUMENT);
  report = only_report();
  EXPECT_NE(report.find("validation: stream_wait_event(stream " + hex(stream_)), std::string::npos)
      << report;
  EXPECT_NE(report.find("is not a live event of plugin 'cpu' (it is the stream"), std::string::npos)
      << report;
  EXPECT_EQ(api_->event_destroy(event), OAR_STATUS_OK);
  EXPECT_TRUE(validation_reports().empty());
}

TEST_F(ValidateTest, CopiesOutOfAnAllocationAreRefusedAsOutOfRange) {
  // OUT_OF_RANGE: the code memory.h documents for a range leaving its allocation.
  oar_memory_t memory = allocate(8192);
  std::vector<uint8_t> host(16384);
  EXPECT_EQ(api_->memory_copy_h2d(stream_, memory, 4096, host.data(), 8192),
            OAR_STATUS_OUT_OF_RANGE);
  std::string report = only_report();
  EXPECT_NE(report.find("validation: memory_copy_h2d(stream " + hex(stream_) + ", memory " +
                        hex(memory) + ", offset 4096, host " + hex(host.data()) +
                        ", size 8192): range [4096, 12288) leaves the 8192-byte allocation " +
                        hex(memory) + " (allocated on cpu:0"),
            std::string::npos)
      << report;

  EXPECT_EQ(api_->memory_copy_d2h(stream_, host.data(), memory, 8193, 0), OAR_STATUS_OUT_OF_RANGE);
  EXPECT_NE(only_report().find("range [8193, 8193) leaves the 8192-byte allocation"),
            std::string::npos);

  // offset + size overflows 64 bits: still refused.
  EXPECT_EQ(api_->memory_fill(stream_, memory, UINT64_MAX, 0, 2), OAR_STATUS_OUT_OF_RANGE);
  report = only_report();
  EXPECT_NE(report.find("validation: memory_fill(stream "), std::string::npos) << report;
  EXPECT_NE(report.find("range [18446744073709551615, 2^64 + 1)"), std::string::npos) << report;

  oar_memory_t small = allocate(100);
  EXPECT_EQ(api_->memory_copy_d2d(stream_, memory, 0, small, 50, 51), OAR_STATUS_OUT_OF_RANGE);
  EXPECT_NE(only_report().find("range [50, 101) leaves the 100-byte allocation " + hex(small)),
            std::string::npos);

  // Exactly to the end is fine.
  EXPECT_EQ(api_->memory_copy_h2d(stream_, memory, 4096, host.data(), 4096), OAR_STATUS_OK);
  EXPECT_EQ(api_->stream_synchronize(stream_), OAR_STATUS_OK);
  EXPECT_TRUE(validation_reports().empty());
  EXPECT_EQ(api_->memory_free(handle_, small), OAR_STATUS_OK);
  EXPECT_EQ(api_->memory_free(handle_, memory), OAR_STATUS_OK);
}

TEST_F(ValidateTest, AStreamWithAnotherDevicesMemoryIsRefused) {
  // The cpu plugin opens a new device handle per device_open.
  oar_device_t other = nullptr;
  ASSERT_EQ(api_->device_open(0, &other), OAR_STATUS_OK);
  ASSERT_NE(other, handle_);
  oar_stream_t other_stream = nullptr;
  ASSERT_EQ(api_->stream_create(other, nullptr, &other_stream), OAR_STATUS_OK);
  oar_memory_t memory = allocate(4096);
  uint8_t bytes[64] = {};
  EXPECT_EQ(api_->memory_copy_h2d(other_stream, memory, 0, bytes, sizeof(bytes)),
            OAR_STATUS_INVALID_ARGUMENT);
  std::string report = only_report();
  EXPECT_NE(report.find("validation: memory_copy_h2d(stream " + hex(other_stream)),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("memory " + hex(memory) +
                        " (4096 bytes of kind 1, allocated on cpu:0 "
                        "[device " +
                        hex(handle_) + "]) is not on the device of stream " + hex(other_stream) +
                        " of cpu:0 [device " + hex(other) + "]"),
            std::string::npos)
      << report;

  // An event of one device recorded on a stream of another.
  oar_event_t event = nullptr;
  ASSERT_EQ(api_->event_create(handle_, 0, &event), OAR_STATUS_OK);
  EXPECT_EQ(api_->event_record(event, other_stream), OAR_STATUS_INVALID_ARGUMENT);
  report = only_report();
  EXPECT_NE(report.find("validation: event_record(event " + hex(event) + ", stream " +
                        hex(other_stream) + "): event " + hex(event)),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("is not on the device of stream " + hex(other_stream)), std::string::npos)
      << report;

  // Freeing memory through another device than its own.
  EXPECT_EQ(api_->memory_free(other, memory), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(only_report().find("is not memory of device " + hex(other)), std::string::npos);

  EXPECT_EQ(api_->event_destroy(event), OAR_STATUS_OK);
  EXPECT_EQ(api_->memory_free(handle_, memory), OAR_STATUS_OK);
  EXPECT_EQ(api_->stream_destroy(other_stream), OAR_STATUS_OK);
  EXPECT_EQ(api_->device_close(other), OAR_STATUS_OK);
  EXPECT_TRUE(validation_reports().empty());
}

TEST_F(ValidateTest, WaitingOnAnEventNeverRecordedIsRefused) {
  oar_event_t event = nullptr;
  ASSERT_EQ(api_->event_create(handle_, 0, &event), OAR_STATUS_OK);
  EXPECT_EQ(api_->stream_wait_event(stream_, event), OAR_STATUS_FAILED_PRECONDITION);
  std::string report = only_report();
  EXPECT_NE(
      report.find("validation: stream_wait_event(stream " + hex(stream_) + ", event " + hex(event) +
                  "): event " + hex(event) + " of cpu:0 [device " + hex(handle_) +
                  "], never recorded is waited on before it was ever recorded"),
      std::string::npos)
      << report;
  ASSERT_EQ(api_->event_record(event, stream_), OAR_STATUS_OK);
  EXPECT_EQ(api_->stream_wait_event(stream_, event), OAR_STATUS_OK);
  EXPECT_EQ(api_->event_destroy(event), OAR_STATUS_OK);
  EXPECT_TRUE(validation_reports().empty());

  // Through the C++ API the message arrives as an oar::Error.
  Event unrecorded = device_->create_event();
  try {
    device_->default_stream().wait(unrecorded);
    ADD_FAILURE() << "expected oar::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_FAILED_PRECONDITION);
    EXPECT_NE(std::string(e.what()).find("validation: stream_wait_event("), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("event " + hex(unrecorded.handle())), std::string::npos)
        << e.what();
  }
  clear_validation_reports();
}

TEST_F(ValidateTest, TimingAnEventNeverRecordedIsRefused) {
  if (api_->event_elapsed_ms == nullptr) GTEST_SKIP() << "no event_elapsed_ms";
  oar_event_t start = nullptr;
  oar_event_t end = nullptr;
  ASSERT_EQ(api_->event_create(handle_, OAR_EVENT_FLAG_TIMING, &start), OAR_STATUS_OK);
  ASSERT_EQ(api_->event_create(handle_, OAR_EVENT_FLAG_TIMING, &end), OAR_STATUS_OK);
  ASSERT_EQ(api_->event_record(start, stream_), OAR_STATUS_OK);
  float ms = 0;
  EXPECT_EQ(api_->event_elapsed_ms(start, end, &ms), OAR_STATUS_FAILED_PRECONDITION);
  std::string report = only_report();
  EXPECT_NE(report.find("validation: event_elapsed_ms(start " + hex(start) + ", end " + hex(end) +
                        "): event " + hex(end)),
            std::string::npos)
      << report;
  EXPECT_EQ(api_->event_destroy(start), OAR_STATUS_OK);
  EXPECT_EQ(api_->event_destroy(end), OAR_STATUS_OK);
}

TEST_F(ValidateTest, ObjectsLeftAtDeviceCloseAreReported) {
  oar_device_t other = nullptr;
  ASSERT_EQ(api_->device_open(0, &other), OAR_STATUS_OK);
  oar_memory_t memory = allocate(64, other);
  oar_stream_t stream = nullptr;
  ASSERT_EQ(api_->stream_create(other, nullptr, &stream), OAR_STATUS_OK);
  oar_event_t event = nullptr;
  ASSERT_EQ(api_->event_create(other, 0, &event), OAR_STATUS_OK);
  ASSERT_EQ(api_->memory_free(other, memory), OAR_STATUS_OK);  // not a leak
  memory = allocate(64, other);                                // a leak
  EXPECT_EQ(api_->device_close(other), OAR_STATUS_OK);
  std::vector<std::string> reports = validation_reports();
  ASSERT_EQ(reports.size(), 3u) << ::testing::PrintToString(reports);
  std::string all;
  for (const std::string& r : reports) {
    EXPECT_EQ(r.rfind("validation: device_close(device " + hex(other) + "): leaked ", 0), 0u) << r;
    all += r + "\n";
  }
  EXPECT_NE(all.find("leaked memory " + hex(memory) +
                     " (64 bytes of kind 1, allocated on cpu:0 "
                     "[device " +
                     hex(other) + "]), created by memory_allocate"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("leaked stream " + hex(stream) + " of cpu:0"), std::string::npos) << all;
  EXPECT_NE(all.find("leaked event " + hex(event) + " of cpu:0"), std::string::npos) << all;
  EXPECT_NE(all.find("created by stream_create"), std::string::npos) << all;
  clear_validation_reports();
  // The closed device's objects now count as freed.
  EXPECT_EQ(api_->stream_synchronize(stream), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(only_report().find("was freed (by device_close, as a leak)"), std::string::npos);
  EXPECT_EQ(api_->device_synchronize(other), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(only_report().find("was freed (by device_close)"), std::string::npos);
}

TEST_F(ValidateTest, TheFrameworksLeaksAreReportedAtShutdown) {
  Buffer buffer = device_->allocate(1024);
  Stream stream = device_->create_stream();
  Event event = device_->create_event();
  oar_stream_t stream_handle = stream.handle();
  oar_event_t event_handle = event.handle();
  runtime_.reset();
  std::vector<std::string> reports = validation_reports();
  std::string all;
  for (const std::string& r : reports) all += r + "\n";
  EXPECT_EQ(reports.size(), 3u) << all;
  EXPECT_NE(all.find("validation: shutdown of cpu:0: leaked buffer of 1024 bytes"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("validation: shutdown of cpu:0: leaked stream " + hex(stream_handle)),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("validation: shutdown of cpu:0: leaked event " + hex(event_handle)),
            std::string::npos)
      << all;
  // The runtime released them, so the core itself leaked nothing.
  EXPECT_EQ(all.find("device_close"), std::string::npos) << all;
  EXPECT_FALSE(buffer.valid());
  EXPECT_FALSE(stream.valid());
  clear_validation_reports();
}

TEST_F(ValidateTest, ACorrectProgramReportsNothing) {
  {
    Stream& stream = device_->default_stream();
    Stream side = device_->create_stream();
    Buffer a = device_->allocate(4096);
    Buffer b = device_->allocate(4096, &side);
    Buffer direct = device_->allocate_uncached(256, OAR_MEMORY_KIND_DEVICE);
    std::vector<uint8_t> host(4096, 7);
    stream.copy_from_host(a, 0, host.data(), host.size());
    stream.fill(a, 100, 1, 50);
    Event ready = device_->create_event();
    ready.record(stream);
    side.wait(ready);
    side.copy(b, 0, a, 0, 4096);
    side.copy_from_host(direct, 0, host.data(), 256);
    side.synchronize();
    std::vector<uint8_t> back(4096);
    device_->download(back.data(), b, 0, back.size());
    EXPECT_EQ(back[0], 7);
    EXPECT_EQ(back[120], 1);

    std::vector<float> values = {1, 2, 3, 4};
    Tensor x = Tensor::empty(*device_, {4}, dtype::f32);
    x.copy_from_host(stream, values.data());
    Tensor y = ops::add(stream, x, x);
    y.copy_to_host(stream, values.data());
    stream.synchronize();
    EXPECT_EQ(values[3], 8.0f);
    device_->empty_cache();
  }
  runtime_.reset();
  EXPECT_TRUE(validation_reports().empty()) << ::testing::PrintToString(validation_reports());
}

// The table the plugin itself exports (the library stays loaded: a Runtime
// holds it, and dlopen returns that same copy).
const oar_plugin_api_t* plugin_table(const Runtime& runtime) {
  void* library = dlopen(runtime.plugins()[0].library_path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) return nullptr;
  auto query = reinterpret_cast<oar_plugin_query_fn>(dlsym(library, OAR_PLUGIN_ENTRY_SYMBOL));
  dlclose(library);
  return query != nullptr ? query(OAR_ABI_MAJOR, OAR_ABI_MINOR) : nullptr;
}

TEST(ValidateOffTest, TheTableIsThePluginsOwnWhenOff) {
  Runtime runtime(cpu_only());
  ASSERT_EQ(runtime.devices().size(), 1u);
  const oar_plugin_api_t* own = plugin_table(runtime);
  ASSERT_NE(own, nullptr);
  const oar_plugin_api_t& api = runtime.devices()[0]->api();
  EXPECT_EQ(api.memory_copy_h2d, own->memory_copy_h2d);
  EXPECT_EQ(api.memory_copy_d2h, own->memory_copy_d2h);
  EXPECT_EQ(api.stream_wait_event, own->stream_wait_event);
  EXPECT_EQ(api.event_record, own->event_record);
  EXPECT_EQ(api.memory_allocate, own->memory_allocate);
  EXPECT_EQ(api.device_open, own->device_open);
  EXPECT_EQ(runtime.devices()[0]->plugin().validating(), false);
}

TEST(ValidateOffTest, TheTableIsWrappedWhenOn) {
  Runtime runtime(validating());
  ASSERT_EQ(runtime.devices().size(), 1u);
  const oar_plugin_api_t* own = plugin_table(runtime);
  ASSERT_NE(own, nullptr);
  const oar_plugin_api_t& api = runtime.devices()[0]->api();
  EXPECT_NE(api.memory_copy_h2d, own->memory_copy_h2d);
  EXPECT_NE(api.stream_wait_event, own->stream_wait_event);
  // Slots the layer does not check stay the plugin's.
  EXPECT_EQ(api.device_count, own->device_count);
  EXPECT_EQ(api.initialize, own->initialize);
}

TEST(ValidateOffTest, OarValidateTurnsItOn) {
  RuntimeOptions options = cpu_only();
  options.use_environment = true;
  setenv("OAR_VALIDATE", "1", 1);
  Runtime on(options);
  unsetenv("OAR_VALIDATE");
  ASSERT_EQ(on.devices().size(), 1u);
  EXPECT_TRUE(on.devices()[0]->plugin().validating());
}

}  // namespace
}  // namespace oar::testing
