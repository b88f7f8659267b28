// Objects used after their Runtime is destroyed, or default-constructed (or
// moved from): every call that needs a device throws oar::Error
// FAILED_PRECONDITION, nothing crashes and no freed memory is handed out.
// What stays usable (reading a tensor's shape, copying, moving, destroying) is
// listed in docs/runtime.md. One test per public class of include/oar/*.hpp.
#include <cstring>

#include "cpu_fixture.h"
#include "oar/memory_stats.hpp"
#include "oar/ops.hpp"
#include "oar/validate.hpp"

namespace oar::testing {
namespace {

// Runs |body| expecting FAILED_PRECONDITION whose message contains |cause|.
template <typename Body>
void expect_empty(const char* cause, Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_FAILED_PRECONDITION) << e.what();
    EXPECT_NE(std::string(e.what()).find(cause), std::string::npos) << e.what();
    return;
  }
  ADD_FAILURE() << "expected oar::Error FAILED_PRECONDITION (" << cause << ")";
}

constexpr const char* kDestroyed = "runtime was destroyed";
constexpr const char* kDefault = "default-constructed";

// Everything a framework may still hold when its runtime goes away.
struct Leftovers {
  Stream stream;
  Event event;
  Event timing;
  Buffer cached;
  Buffer uncached;
  Tensor tensor;
  Tensor view;
  Tensor imported;
  DLManagedTensor* exported = nullptr;
};

Leftovers make_and_destroy_runtime() {
  Leftovers left;
  Runtime runtime(cpu_only());
  Device& cpu = runtime.device("cpu:0");
  left.stream = cpu.create_stream();
  left.event = cpu.create_event();
  left.timing = cpu.create_event(OAR_EVENT_FLAG_TIMING);
  left.event.record(left.stream);
  left.timing.record(left.stream);
  left.cached = cpu.allocate(256, &left.stream);
  left.uncached = cpu.allocate_uncached(256, OAR_MEMORY_KIND_HOST_PINNED);
  left.tensor = Tensor::empty(cpu, {2, 3}, dtype::f32, &left.stream);
  left.view = left.tensor.transpose(0, 1);
  left.exported = left.tensor.to_dlpack();
  left.imported = Tensor::from_dlpack(runtime, left.tensor.to_dlpack());
  left.stream.synchronize();
  return left;
}

TEST(LifetimeTest, StreamAfterItsRuntimeThrows) {
  Leftovers left = make_and_destroy_runtime();
  EXPECT_FALSE(left.stream.valid());
  Buffer none;
  std::vector<uint8_t> host(16);
  expect_empty(kDestroyed, [&] { left.stream.synchronize(); });
  expect_empty(kDestroyed, [&] { left.stream.query(); });
  expect_empty(kDestroyed, [&] { left.stream.device(); });
  expect_empty(kDestroyed, [&] { left.stream.wait(left.event); });
  expect_empty(kDestroyed, [&] { left.stream.add_callback([](oar_status_t) {}); });
  expect_empty(kDestroyed, [&] { left.stream.copy_from_host(none, 0, host.data(), 0); });
  expect_empty(kDestroyed, [&] { left.stream.copy_to_host(host.data(), none, 0, 0); });
  expect_empty(kDestroyed, [&] { left.stream.copy(none, 0, none, 0, 0); });
  expect_empty(kDestroyed, [&] { left.stream.fill(none, 0, 0, 0); });
  if (left.exported != nullptr) left.exported->deleter(left.exported);
}

TEST(LifetimeTest, DefaultConstructedStreamThrows) {
  Stream stream;
  Buffer none;
  expect_empty(kDefault, [&] { stream.synchronize(); });
  expect_empty(kDefault, [&] { stream.query(); });
  expect_empty(kDefault, [&] { stream.device(); });
  expect_empty(kDefault, [&] { stream.fill(none, 0, 0, 0); });
  Stream moved = std::move(stream);
  expect_empty(kDefault, [&] { moved.synchronize(); });
}

TEST(LifetimeTest, EventAfterItsRuntimeThrows) {
  Leftovers left = make_and_destroy_runtime();
  EXPECT_FALSE(left.event.valid());
  expect_empty(kDestroyed, [&] { left.event.query(); });
  expect_empty(kDestroyed, [&] { left.event.synchronize(); });
  expect_empty(kDestroyed, [&] { left.event.record(left.stream); });
  expect_empty(kDestroyed, [&] { left.timing.elapsed_ms_since(left.event); });
  expect_empty(kDestroyed, [&] { left.event.device(); });
  if (left.exported != nullptr) left.exported->deleter(left.exported);
}

TEST(LifetimeTest, DefaultConstructedEventThrows) {
  Event event;
  Stream stream;
  expect_empty(kDefault, [&] { event.query(); });
  expect_empty(kDefault, [&] { event.synchronize(); });
  expect_empty(kDefault, [&] { event.record(stream); });
  expect_empty(kDefault, [&] { event.elapsed_ms_since(event); });
}

TEST(LifetimeTest, BufferAfterItsRuntimeThrows) {
  Leftovers left = make_and_destroy_runtime();
  EXPECT_FALSE(left.cached.valid());
  EXPECT_FALSE(left.uncached.valid());
  EXPECT_TRUE(left.cached.released_by_runtime());
  expect_empty(kDestroyed, [&] { left.cached.device(); });
  expect_empty(kDestroyed, [&] { left.uncached.host_address(); });
  expect_empty(kDestroyed, [&] { left.cached.record_stream(left.stream); });
  if (left.exported != nullptr) left.exported->deleter(left.exported);
}

TEST(LifetimeTest, DefaultConstructedBufferThrows) {
  Buffer buffer;
  Stream stream;
  expect_empty(kDefault, [&] { buffer.device(); });
  expect_empty(kDefault, [&] { buffer.host_address(); });
  expect_empty(kDefault, [&] { buffer.record_stream(stream); });
  EXPECT_FALSE(buffer.released_by_runtime());
}

TEST(LifetimeTest, BufferFromALiveRuntimeRefusesAStreamThatOutlivedAnother) {
  Leftovers left = make_and_destroy_runtime();
  Runtime runtime(cpu_only());
  Buffer live = runtime.device("cpu").allocate(64);
  expect_empty(kDestroyed, [&] { live.record_stream(left.stream); });
  if (left.exported != nullptr) left.exported->deleter(left.exported);
}

TEST(LifetimeTest, TensorAfterItsRuntimeCanBeCopiedAndReadButNotUsed) {
  Leftovers left = make_and_destroy_runtime();
  Tensor copy = left.tensor;  // used to crash: the copy re-read the dead buffer's device
  Tensor assigned;
  assigned = left.view;
  EXPECT_EQ(copy.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(assigned.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(copy.numel(), 6);
  EXPECT_EQ(copy.nbytes(), 24u);
  EXPECT_TRUE(copy.defined());
  std::vector<float> host(6);
  Stream stream;
  expect_empty(kDestroyed, [&] { copy.dl(); });
  expect_empty(kDestroyed, [&] { copy.device(); });
  expect_empty(kDestroyed, [&] { copy.to_dlpack(); });  // used to hand out freed memory
  expect_empty(kDestroyed, [&] { left.imported.dl(); });
  expect_empty(kDestroyed, [&] { copy.copy_from_host(stream, host.data()); });
  expect_empty(kDestroyed, [&] { copy.copy_to_host(stream, host.data()); });
  expect_empty(kDestroyed, [&] { Tensor::view(copy.buffer(), {1}, dtype::f32); });
  expect_empty(kDestroyed, [&] { ops::relu(left.stream, copy); });
  expect_empty(kDestroyed, [&] { dispatch(left.stream, OpId("relu"), {&copy}, {&left.view}); });
  // A consumer's export outlives the runtime: its deleter still works, and
  // the export says nothing about memory (the runtime freed it).
  ASSERT_NE(left.exported, nullptr);
  left.exported->deleter(left.exported);
}

TEST(LifetimeTest, DefaultConstructedTensorThrows) {
  Tensor tensor;
  Stream stream;
  std::vector<float> host(1);
  EXPECT_FALSE(tensor.defined());
  EXPECT_EQ(tensor.numel(), 1);  // a scalar shape: no dimensions
  Tensor copy = tensor;
  EXPECT_FALSE(copy.defined());
  expect_empty(kDefault, [&] { tensor.dl(); });
  expect_empty(kDefault, [&] { tensor.device(); });
  expect_empty(kDefault, [&] { tensor.to_dlpack(); });
  expect_empty(kDefault, [&] { tensor.copy_from_host(stream, host.data()); });
  expect_empty(kDefault, [&] { tensor.copy_to_host(stream, host.data()); });
}

TEST(LifetimeTest, DispatchWithAnEmptyStreamOrTensorThrows) {
  Runtime runtime(cpu_only());
  Device& cpu = runtime.device("cpu");
  Tensor live = Tensor::empty(cpu, {4}, dtype::f32);
  Tensor undefined;
  Stream empty;
  expect_empty(kDefault, [&] { dispatch(empty, OpId("relu"), {&live}, {&live}); });
  expect_empty(kDefault,
               [&] { dispatch(cpu.default_stream(), OpId("relu"), {&undefined}, {&live}); });
  expect_empty(kDefault, [&] { ops::relu(empty, live); });
  expect_empty(kDefault, [&] { ops::call(cpu.default_stream(), "relu", {&undefined}); });
}

// A Device belongs to its Runtime: references die with it (like references
// into a container). What can be observed is a device the runtime is closing
// (its destructor's first step): every call that needs the plugin throws.
TEST(LifetimeTest, ClosedDeviceThrowsAndKeepsItsDescription) {
  Runtime runtime(cpu_only());
  Device& cpu = runtime.device("cpu");
  Tensor t = Tensor::empty(cpu, {4}, dtype::f32);
  cpu.close();
  EXPECT_FALSE(t.buffer()->valid());
  EXPECT_EQ(cpu.name(), "cpu:0");
  EXPECT_EQ(cpu.plugin_name(), "cpu");
  const char* closed = "is closed";
  expect_empty(closed, [&] { cpu.default_stream(); });
  expect_empty(closed, [&] { cpu.create_stream(); });
  expect_empty(closed, [&] { cpu.create_event(); });
  expect_empty(closed, [&] { cpu.allocate(64); });
  expect_empty(closed, [&] { cpu.allocate_uncached(64); });
  expect_empty(closed, [&] { cpu.synchronize(); });
  expect_empty(closed, [&] { cpu.handle(); });
  EXPECT_EQ(cpu.memory_stats().active_blocks, 0u);
  cpu.empty_cache();
  cpu.reset_peak_memory_stats();
}

TEST(LifetimeTest, RuntimeWithoutPluginsHasNoDevicesAndSaysSo) {
  RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  Runtime runtime(options);
  EXPECT_TRUE(runtime.devices().empty());
  EXPECT_TRUE(runtime.plugins().empty());
  EXPECT_EQ(runtime.find_device("cpu"), nullptr);
  try {
    runtime.device("cpu");
    FAIL() << "expected NOT_FOUND";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_NOT_FOUND);
  }
}

TEST(LifetimeTest, ValueTypesAreUsableDefaultConstructed) {
  MemoryStats stats;
  EXPECT_EQ(stats.allocated_bytes, 0u);
  MemoryInfo info;
  EXPECT_EQ(info.total, 0u);
  PluginRecord record;
  EXPECT_EQ(record.state, PluginState::kSkipped);
  Error error(OAR_STATUS_INTERNAL, "x");
  EXPECT_EQ(error.code(), OAR_STATUS_INTERNAL);
  OpId op("relu");
  EXPECT_NE(op.schema(), nullptr);
  Attr attr("axis", 1);
  EXPECT_EQ(attr.attr.value.i, 1);
  EXPECT_NO_THROW(validation_reports());
}

}  // namespace
}  // namespace oar::testing
