// The sim plugin through the C++ runtime: memory the host cannot touch, copy
// directions, profiles, the allocator's OOM path, fault injection, peer copies.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "oar/oar.hpp"
#include "oar/ops.hpp"

namespace {

using oar::Buffer;
using oar::Device;
using oar::Runtime;
using oar::RuntimeOptions;
using oar::Stream;
using oar::Tensor;

// A runtime that loads only this build's sim plugin, with |profile| and
// |faults| (and any extra variables) set while the plugin initializes.
std::unique_ptr<Runtime> make_runtime(const std::string& profile, const std::string& faults = "",
                                      const std::string& launch_us = "") {
  if (!profile.empty()) setenv("OAR_SIM_PROFILE", profile.c_str(), 1);
  if (!faults.empty()) setenv("OAR_SIM_FAULTS", faults.c_str(), 1);
  if (!launch_us.empty()) setenv("OAR_SIM_LAUNCH_US", launch_us.c_str(), 1);
  RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = {OAR_TEST_SIM_MANIFEST};
  auto runtime = std::make_unique<Runtime>(options);
  unsetenv("OAR_SIM_PROFILE");
  unsetenv("OAR_SIM_FAULTS");
  unsetenv("OAR_SIM_LAUNCH_US");
  return runtime;
}

oar_status_t status_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const oar::Error& e) {
    return e.code();
  }
  return OAR_STATUS_OK;
}

std::string message_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const oar::Error& e) {
    return e.what();
  }
  return "";
}

std::vector<float> iota(size_t n, float start) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

Tensor upload(Device& device, Stream& stream, const std::vector<float>& values) {
  Tensor t = Tensor::empty(device, {int64_t(values.size())}, oar::dtype::f32, &stream);
  t.copy_from_host(stream, values.data());
  stream.synchronize();  // |values| may be a temporary
  return t;
}

std::vector<float> download(Stream& stream, const Tensor& t) {
  std::vector<float> values(size_t(t.numel()));
  t.copy_to_host(stream, values.data());
  stream.synchronize();
  return values;
}

TEST(SimTest, DefaultProfileHasTwoGpuLikeDevicesWithRealMemoryAccounting) {
  auto runtime = make_runtime("");
  ASSERT_EQ(runtime->devices().size(), 2u);
  Device& device = *runtime->devices()[0];
  EXPECT_EQ(device.properties().kind, OAR_DEVICE_KIND_GPU);
  EXPECT_TRUE(device.has_feature(OAR_DEVICE_FEATURE_PEER_ACCESS));
  auto before = device.memory_info();
  Buffer buffer = device.allocate_uncached(64 << 20);
  auto during = device.memory_info();
  EXPECT_EQ(before.free - during.free, uint64_t(64) << 20);
}

TEST(SimTest, HostDereferenceOfDeviceMemoryFaults) {
  auto runtime = make_runtime("gpu");
  Device& device = *runtime->devices()[0];
  Buffer buffer = device.allocate_uncached(4096);
  std::vector<char> data(4096, 7);
  device.upload(buffer, 0, data.data(), data.size());
  std::vector<char> back(4096, 0);
  device.download(back.data(), buffer, 0, back.size());
  EXPECT_EQ(back, data);  // the engine can touch it
  EXPECT_THROW(buffer.host_address(), oar::Error);

  auto* address = reinterpret_cast<volatile char*>(buffer.memory()) + buffer.offset();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The kernel's verdict, not a sanitizer's handler, decides how it dies.
    signal(SIGSEGV, SIG_DFL);
    char value = *address;  // must fault
    _exit(value == 7 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the host read device memory without faulting";
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
}

TEST(SimTest, CopyWithTheWrongDirectionIsInvalidArgument) {
  auto runtime = make_runtime("gpu");
  Device& device = *runtime->devices()[0];
  const oar_plugin_api_t& api = device.api();
  Stream stream = device.create_stream();
  Buffer a = device.allocate_uncached(256);
  Buffer b = device.allocate_uncached(256);
  std::vector<char> host(256, 1);
  // h2d from device memory, d2h from host memory, d2h into device memory,
  // d2d from host memory.
  EXPECT_EQ(api.memory_copy_h2d(stream.handle(), a.memory(), 0, b.memory(), 256),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(api.memory_copy_d2h(stream.handle(), host.data(),
                                static_cast<oar_memory_t>(static_cast<void*>(host.data())), 0, 256),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(api.memory_copy_d2h(stream.handle(), b.memory(), a.memory(), 0, 256),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(api.memory_copy_h2d(stream.handle(),
                                static_cast<oar_memory_t>(static_cast<void*>(host.data())), 0,
                                host.data(), 256),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(api.memory_copy_d2d(stream.handle(), a.memory(), 0,
                                static_cast<oar_memory_t>(static_cast<void*>(host.data())), 0, 256),
            OAR_STATUS_INVALID_ARGUMENT);
  // The right directions work.
  EXPECT_EQ(api.memory_copy_h2d(stream.handle(), a.memory(), 0, host.data(), 256), OAR_STATUS_OK);
  EXPECT_EQ(api.memory_copy_d2d(stream.handle(), b.memory(), 0, a.memory(), 0, 256), OAR_STATUS_OK);
  std::vector<char> back(256, 0);
  EXPECT_EQ(api.memory_copy_d2h(stream.handle(), back.data(), b.memory(), 0, 256), OAR_STATUS_OK);
  stream.synchronize();
  EXPECT_EQ(back, host);
}

TEST(SimTest, NpuProfileHasNoF64And64ByteAlignment) {
  auto runtime = make_runtime("npu");
  ASSERT_EQ(runtime->devices().size(), 1u);
  const oar_device_properties_t& p = runtime->devices()[0]->properties();
  EXPECT_EQ(p.kind, OAR_DEVICE_KIND_NPU);
  EXPECT_EQ(p.dtypes & OAR_DTYPE_SUPPORT_F64, 0u);
  EXPECT_EQ(p.dtypes, uint32_t(OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16));
  EXPECT_EQ(p.native_dtypes, p.dtypes);
  EXPECT_EQ(p.min_alignment, 64u);
  EXPECT_EQ(p.max_allocation_size, uint64_t(256) << 20);
  EXPECT_NE(status_of([&] { runtime->devices()[0]->allocate_uncached(uint64_t(300) << 20); }),
            OAR_STATUS_OK);
}

TEST(SimTest, UnknownProfileFailsToInitializeNamingTheValidOnes) {
  auto runtime = make_runtime("warp-drive");
  EXPECT_TRUE(runtime->devices().empty());
  ASSERT_EQ(runtime->plugins().size(), 1u);
  EXPECT_NE(runtime->plugins()[0].reason.find("gpu, npu, tiny"), std::string::npos)
      << runtime->plugins()[0].reason;
}

TEST(SimTest, TinyProfileRunsOutOfMemoryAndTheAllocatorRecovers) {
  auto runtime = make_runtime("tiny");
  Device& device = *runtime->devices()[0];
  EXPECT_EQ(device.properties().total_memory, uint64_t(128) << 20);
  EXPECT_EQ(status_of([&] { device.allocate_uncached(uint64_t(100) << 20); }), OAR_STATUS_OK);
  {
    Buffer big = device.allocate_uncached(uint64_t(100) << 20);
    EXPECT_EQ(status_of([&] { device.allocate_uncached(uint64_t(100) << 20); }),
              OAR_STATUS_RESOURCE_EXHAUSTED);
  }
  // Fill the cache with freed 16 MiB blocks, then ask for 64 MiB: it fits only
  // once the cache is released.
  {
    std::vector<Buffer> buffers;
    for (int i = 0; i < 6; ++i) buffers.push_back(device.allocate(uint64_t(16) << 20));
  }
  device.synchronize();
  oar::MemoryStats before = device.memory_stats();
  EXPECT_GE(before.reserved_bytes, uint64_t(96) << 20);
  Buffer large = device.allocate(uint64_t(64) << 20);
  oar::MemoryStats after = device.memory_stats();
  EXPECT_EQ(after.oom_count, 0u);
  EXPECT_GT(after.backend_allocations, before.backend_allocations);
  EXPECT_LT(after.reserved_bytes, before.reserved_bytes + (uint64_t(64) << 20));
}

TEST(SimTest, InjectedAllocationFailureIsResourceExhausted) {
  auto runtime = make_runtime("gpu", "alloc:1.0,seed:1");
  Device& device = *runtime->devices()[0];
  EXPECT_EQ(status_of([&] { device.allocate_uncached(4096); }), OAR_STATUS_RESOURCE_EXHAUSTED);
}

TEST(SimTest, InjectedKernelFailureFailsItsStreamOnly) {
  auto runtime = make_runtime("gpu", "kernel:1.0,seed:7,device:0");
  Device& device = *runtime->devices()[0];
  Stream failing = device.create_stream();
  Stream other = device.create_stream();
  Tensor a = upload(device, failing, iota(64, 0));
  Tensor b = upload(device, failing, iota(64, 100));
  Tensor kept = upload(device, other, iota(64, 5));
  Tensor y = oar::ops::add(failing, a, b);
  EXPECT_EQ(status_of([&] { failing.synchronize(); }), OAR_STATUS_INTERNAL);
  oar::Event later = device.create_event();
  later.record(failing);
  EXPECT_EQ(status_of([&] { later.synchronize(); }), OAR_STATUS_INTERNAL);
  // Another stream of the device still copies; another device still computes.
  EXPECT_EQ(download(other, kept), iota(64, 5));
  Device& second = *runtime->devices()[1];
  Stream s = second.create_stream();
  Tensor c = upload(second, s, iota(8, 1));
  Tensor sum = oar::ops::add(s, c, c);
  std::vector<float> expected = iota(8, 1);
  for (float& v : expected) v *= 2;
  EXPECT_EQ(download(s, sum), expected);
}

TEST(SimTest, InjectedCopyFailureFailsItsStreamOnly) {
  auto runtime = make_runtime("gpu", "copy:1.0,seed:3,device:0");
  Device& device = *runtime->devices()[0];
  Stream failing = device.create_stream();
  Stream other = device.create_stream();
  Tensor a = Tensor::empty(device, {16}, oar::dtype::f32, &failing);
  std::vector<float> values = iota(16, 0);
  a.copy_from_host(failing, values.data());
  EXPECT_EQ(status_of([&] { failing.synchronize(); }), OAR_STATUS_DATA_LOSS);
  bool idle = false;
  EXPECT_EQ(status_of([&] { idle = failing.query(); }), OAR_STATUS_DATA_LOSS);
  oar::Event later = device.create_event();
  later.record(failing);
  EXPECT_EQ(status_of([&] { later.synchronize(); }), OAR_STATUS_DATA_LOSS);
  EXPECT_NO_THROW(other.synchronize());
  // The other device keeps its data.
  Device& second = *runtime->devices()[1];
  Stream s = second.create_stream();
  Tensor kept = upload(second, s, iota(32, 9));
  EXPECT_EQ(download(s, kept), iota(32, 9));
}

TEST(SimTest, DeviceLostAfterNOperations) {
  auto runtime = make_runtime("gpu", "lost_after:3,device:0");
  Device& device = *runtime->devices()[0];
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate_uncached(64);
  std::vector<char> host(64, 3);
  stream.copy_from_host(buffer, 0, host.data(), 64);  // 1
  stream.fill(buffer, 0, 4, 32);                      // 2
  stream.copy_to_host(host.data(), buffer, 0, 64);    // 3
  EXPECT_NO_THROW(stream.synchronize());
  EXPECT_EQ(host[0], 4);
  EXPECT_EQ(host[63], 3);
  stream.copy_from_host(buffer, 0, host.data(), 64);  // 4: lost
  std::string message = message_of([&] { stream.synchronize(); });
  EXPECT_NE(message.find("device lost"), std::string::npos) << message;
  EXPECT_EQ(status_of([&] { stream.synchronize(); }), OAR_STATUS_UNAVAILABLE);
  // Nothing new starts on the lost device: no stream, no event (issue 12: a
  // new stream reported success), no allocation.
  EXPECT_EQ(status_of([&] { device.create_stream(); }), OAR_STATUS_UNAVAILABLE);
  EXPECT_EQ(status_of([&] { device.create_event(0); }), OAR_STATUS_UNAVAILABLE);
  EXPECT_EQ(status_of([&] { device.allocate_uncached(64); }), OAR_STATUS_UNAVAILABLE);
  // The other device works.
  Device& second = *runtime->devices()[1];
  Stream s = second.create_stream();
  Tensor kept = upload(second, s, iota(32, 2));
  EXPECT_EQ(download(s, kept), iota(32, 2));
}

TEST(SimTest, BadFaultSpecificationFailsToInitialize) {
  // device:4294967296 meant device 0 (its low 31 bits); a repeated key was
  // taken silently (issue 12).
  for (const char* faults : {"kernel:2", "sparks:0.5", "device:4294967296", "seed:1,seed:2",
                             "alloc:0.1,alloc:0.2", "kernel:nan", "copy: 0.5", "lost_after:-1"}) {
    auto runtime = make_runtime("gpu", faults);
    EXPECT_TRUE(runtime->devices().empty()) << "OAR_SIM_FAULTS=" << faults;
    ASSERT_EQ(runtime->plugins().size(), 1u);
    EXPECT_EQ(runtime->plugins()[0].code, OAR_STATUS_INVALID_ARGUMENT) << faults;
    EXPECT_NE(runtime->plugins()[0].reason.find("OAR_SIM_FAULTS"), std::string::npos)
        << runtime->plugins()[0].reason;
  }
  auto runtime = make_runtime("gpu", "device:1,seed:7,alloc:0");
  EXPECT_EQ(runtime->devices().size(), 2u);
}

// OAR_SIM_COPY_GBPS=1e-300 and OAR_SIM_LAUNCH_US=1e300 meant "unlimited"
// through an undefined float-to-integer conversion (issue 12): a value out
// of range is refused by name.
TEST(SimTest, ModelledTimesOutOfRangeFailToInitialize) {
  struct Case {
    const char* variable;
    const char* value;
  };
  for (Case c : {Case{"OAR_SIM_COPY_GBPS", "1e-300"}, Case{"OAR_SIM_COPY_GBPS", "inf"},
                 Case{"OAR_SIM_COPY_GBPS", "-1"}, Case{"OAR_SIM_LAUNCH_US", "1e300"},
                 Case{"OAR_SIM_LAUNCH_US", "nan"}, Case{"OAR_SIM_LAUNCH_US", " 5"}}) {
    setenv(c.variable, c.value, 1);
    auto runtime = make_runtime("gpu");
    unsetenv(c.variable);
    EXPECT_TRUE(runtime->devices().empty()) << c.variable << "=" << c.value;
    ASSERT_EQ(runtime->plugins().size(), 1u);
    EXPECT_NE(runtime->plugins()[0].reason.find(c.variable), std::string::npos)
        << runtime->plugins()[0].reason;
  }
  setenv("OAR_SIM_COPY_GBPS", "1e-6", 1);  // the slowest copy model there is
  auto runtime = make_runtime("gpu");
  unsetenv("OAR_SIM_COPY_GBPS");
  EXPECT_EQ(runtime->devices().size(), 2u);
}

// Host memory imported as if it were sim device memory: the cpu kernel under
// the sim would read and write it as device memory (issue 12).
TEST(SimTest, KernelRefusesHostMemoryPassedAsDeviceMemory) {
  auto runtime = make_runtime("gpu");
  Device& device = *runtime->devices()[0];
  Stream stream = device.create_stream();
  static std::vector<float> host(16, 1.0f);
  static int64_t shape[1] = {16};
  auto* managed = new DLManagedTensor{};
  managed->dl_tensor.data = host.data();
  managed->dl_tensor.device = device.dlpack_device();
  managed->dl_tensor.ndim = 1;
  managed->dl_tensor.dtype = DLDataType{kDLFloat, 32, 1};
  managed->dl_tensor.shape = shape;
  managed->deleter = [](DLManagedTensor* self) { delete self; };
  Tensor imported = Tensor::from_dlpack(*runtime, managed);
  Tensor device_tensor = upload(device, stream, iota(16, 0));

  std::string message = message_of([&] { oar::ops::add(stream, imported, device_tensor); });
  EXPECT_NE(message.find("input 0 is not sim device memory"), std::string::npos) << message;
  message = message_of([&] { oar::ops::add(stream, device_tensor, imported); });
  EXPECT_NE(message.find("input 1 is not sim device memory"), std::string::npos) << message;
  // Memory of the device itself still works.
  std::vector<float> twice(16);
  for (size_t i = 0; i < twice.size(); ++i) twice[i] = 2.0f * float(i);
  EXPECT_EQ(download(stream, oar::ops::add(stream, device_tensor, device_tensor)), twice);
}

TEST(SimTest, PeerCopyBetweenGpuDevicesRoundTrips) {
  auto runtime = make_runtime("gpu");
  Device& first = *runtime->devices()[0];
  Device& second = *runtime->devices()[1];
  std::vector<char> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 7);
  Buffer a = first.allocate_uncached(1000);
  Buffer b = second.allocate_uncached(1000);
  Buffer c = first.allocate_uncached(1000);
  first.upload(a, 0, data.data(), data.size());
  Stream to_second = second.create_stream();
  to_second.copy(b, 0, a, 0, 1000);
  to_second.synchronize();
  Stream to_first = first.create_stream();
  to_first.copy(c, 0, b, 0, 1000);
  to_first.synchronize();
  std::vector<char> back(1000, 0);
  first.download(back.data(), c, 0, back.size());
  EXPECT_EQ(back, data);
}

TEST(SimTest, LaunchLatencyIsModelledAndTimed) {
  auto runtime = make_runtime("gpu", "", "20000");  // 20 ms per kernel
  Device& device = *runtime->devices()[0];
  Stream stream = device.create_stream();
  Tensor a = upload(device, stream, iota(16, 0));
  oar::Event start = device.create_event(OAR_EVENT_FLAG_TIMING);
  oar::Event end = device.create_event(OAR_EVENT_FLAG_TIMING);
  start.record(stream);
  Tensor y = oar::ops::add(stream, a, a);
  end.record(stream);
  end.synchronize();
  EXPECT_GE(end.elapsed_ms_since(start), 15.0f);
}

TEST(SimTest, HostCallbacksRunInOrder) {
  auto runtime = make_runtime("gpu");
  Device& device = *runtime->devices()[0];
  Stream stream = device.create_stream();
  Tensor a = upload(device, stream, iota(16, 0));
  std::vector<int> order;
  stream.add_callback([&](oar_status_t s) { order.push_back(s == OAR_STATUS_OK ? 1 : -1); });
  stream.add_callback([&](oar_status_t s) { order.push_back(s == OAR_STATUS_OK ? 2 : -2); });
  stream.synchronize();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

}  // namespace
