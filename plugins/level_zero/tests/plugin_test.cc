// The level_zero plugin's runtime logic against the fake loader
// (fake_loader.cc): the plugin is loaded through its C table, as the core
// loads it, and the fake's switches (environment variables read at zeInit)
// select the case. Nothing here computes on a GPU: the fake is no device.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu_plugin_test_util.h"
#include "oar/oar.h"

namespace {

using oar_gpu_test::kHost;
using oar_gpu_test::last_error;
using oar_gpu_test::logs;

const oar_plugin_api_t* api() {
  static const oar_plugin_api_t* table = oar_gpu_test::load_plugin(OAR_LEVEL_ZERO_PLUGIN_PATH);
  return table;
}

// The fake's inspection entry points (the fake stays loaded: we hold it).
struct Fake {
  Fake() {
    void* library = dlopen(OAR_LEVEL_ZERO_FAKE_LOADER_PATH, RTLD_NOW | RTLD_LOCAL);
    log = reinterpret_cast<const char* (*)()>(dlsym(library, "oar_ze_fake_log"));
    live = reinterpret_cast<int (*)()>(dlsym(library, "oar_ze_fake_live"));
    launches = reinterpret_cast<const char* (*)()>(dlsym(library, "oar_ze_fake_launches"));
    reset = reinterpret_cast<void (*)()>(dlsym(library, "oar_ze_fake_reset"));
  }
  const char* (*log)() = nullptr;
  int (*live)() = nullptr;
  const char* (*launches)() = nullptr;
  void (*reset)() = nullptr;
};
Fake& fake() {
  static Fake f;
  return f;
}

const char* const kSwitches[] = {"OAR_ZE_FAKE_INIT_RESULT", "OAR_ZE_FAKE_DEVICES",
                                 "OAR_ZE_FAKE_FP64", "OAR_ZE_FAKE_LOST_AFTER",
                                 "OAR_ZE_FAKE_MODULE_RESULT"};

struct KernelDef {
  std::string op;
  std::vector<DLDataType> dtypes;
  oar_kernel_fn fn = nullptr;
  void* user_data = nullptr;
};

oar_status_t capture(void* context, const oar_kernel_def_t* def) {
  KernelDef d;
  d.op = def->op_name;
  d.dtypes.assign(def->dtypes, def->dtypes + def->num_inputs + def->num_outputs);
  d.fn = def->fn;
  d.user_data = def->user_data;
  static_cast<std::vector<KernelDef>*>(context)->push_back(d);
  return OAR_STATUS_OK;
}

class LevelZeroPluginTest : public oar_gpu_test::PluginTest<api> {
 protected:
  void SetUp() override {
    ASSERT_NE(api(), nullptr) << dlerror();
    ASSERT_NE(fake().log, nullptr);
    for (const char* name : kSwitches) unsetenv(name);
    setenv("OAR_LEVEL_ZERO_LOADER", OAR_LEVEL_ZERO_FAKE_LOADER_PATH, 1);
    logs.clear();
    fake().reset();
  }
  void TearDown() override {
    if (initialized_) {
      EXPECT_EQ(api()->finalize(), OAR_STATUS_OK);
    }
    EXPECT_EQ(fake().live(), 0) << "objects the plugin left alive; destroyed:\n" << fake().log();
    unsetenv("OAR_LEVEL_ZERO_LOADER");
  }
};

TEST_F(LevelZeroPluginTest, NoLoaderMeansZeroDevicesAndSaysWhy) {
  setenv("OAR_LEVEL_ZERO_LOADER", "/nonexistent/libze_loader.so.1", 1);
  start();
  EXPECT_EQ(count(), 0);
  EXPECT_NE(all_logs().find("level_zero: no Level Zero loader: /nonexistent/libze_loader.so.1 "
                            "not found"),
            std::string::npos)
      << all_logs();
  EXPECT_NE(all_logs().find("The plugin serves 0 devices."), std::string::npos);
  oar_device_t device = nullptr;
  EXPECT_EQ(api()->device_open(0, &device), OAR_STATUS_OUT_OF_RANGE);
}

TEST_F(LevelZeroPluginTest, ZeInitFailureIsTheReason) {
  setenv("OAR_ZE_FAKE_INIT_RESULT", "0x78000001", 1);  // ZE_RESULT_ERROR_UNINITIALIZED
  start();
  EXPECT_EQ(count(), 0);
  EXPECT_NE(all_logs().find("level_zero: zeInit failed: ZE_RESULT_ERROR_UNINITIALIZED"),
            std::string::npos)
      << all_logs();
}

TEST_F(LevelZeroPluginTest, NoDeviceIsTheReason) {
  setenv("OAR_ZE_FAKE_DEVICES", "0", 1);
  start();
  EXPECT_EQ(count(), 0);
  EXPECT_NE(all_logs().find("level_zero: no device"), std::string::npos) << all_logs();
}

TEST_F(LevelZeroPluginTest, EnumeratesDevicesWithTheirProperties) {
  setenv("OAR_ZE_FAKE_DEVICES", "2", 1);
  setenv("OAR_ZE_FAKE_FP64", "0", 1);
  start();
  ASSERT_EQ(count(), 2);
  oar_device_properties_t p{};
  p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
  ASSERT_EQ(api()->device_properties(1, &p), OAR_STATUS_OK);
  EXPECT_STREQ(p.name, "OAR fake Level Zero device 1 (no GPU)");
  EXPECT_STREQ(p.vendor, "Intel");
  EXPECT_STREQ(p.driver_version, "Level Zero 1.4, driver 1.2.3");
  EXPECT_EQ(p.kind, OAR_DEVICE_KIND_GPU);
  EXPECT_EQ(p.dlpack_device_type, 14);  // kDLOneAPI
  EXPECT_EQ(p.total_memory, 1ull << 30);
  EXPECT_EQ(p.max_allocation_size, 1ull << 28);
  EXPECT_EQ(p.compute_units, 16u);
  EXPECT_EQ(p.memory_kinds, uint32_t(OAR_MEMORY_KIND_DEVICE | OAR_MEMORY_KIND_HOST_PINNED |
                                     OAR_MEMORY_KIND_UNIFIED));
  EXPECT_EQ(p.dtypes, uint32_t(OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16));  // no fp64
  EXPECT_EQ(p.native_dtypes, uint32_t(OAR_DTYPE_SUPPORT_F16));
  EXPECT_EQ(p.features,
            uint32_t(OAR_DEVICE_FEATURE_TIMING_EVENTS | OAR_DEVICE_FEATURE_ASYNC_COPIES |
                     OAR_DEVICE_FEATURE_HOST_CALLBACKS));
  EXPECT_EQ(api()->device_properties(2, &p), OAR_STATUS_OUT_OF_RANGE);
}

TEST_F(LevelZeroPluginTest, UsmMemoryOfEveryKindCopiesAndFills) {
  start();
  oar_device_t device = open();
  oar_stream_t s = stream(device);
  oar_memory_t dev = allocate(device, 64);
  oar_memory_t host = allocate(device, 64, OAR_MEMORY_KIND_HOST_PINNED);
  oar_memory_t shared = allocate(device, 64, OAR_MEMORY_KIND_UNIFIED);
  void* address = nullptr;
  EXPECT_EQ(api()->memory_host_address(device, dev, &address), OAR_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(api()->memory_host_address(device, shared, &address), OAR_STATUS_OK);
  EXPECT_EQ(address, static_cast<void*>(shared));
  std::vector<uint8_t> in(64), out(64, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 3 + 1);
  ASSERT_EQ(api()->memory_copy_h2d(s, dev, 0, in.data(), 64), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->memory_copy_d2d(s, shared, 0, dev, 0, 64), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->memory_fill(s, shared, 8, 0xab, 4), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->memory_copy_d2d(s, host, 0, shared, 0, 64), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->memory_copy_d2h(s, out.data(), host, 0, 64), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->stream_synchronize(s), OAR_STATUS_OK) << last_error;
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(out[i], i >= 8 && i < 12 ? 0xab : in[i]) << "byte " << i;
  }
  bool idle = false;
  EXPECT_EQ(api()->stream_query(s, &idle), OAR_STATUS_OK);
  EXPECT_TRUE(idle);
  // Ranges are checked before anything is appended.
  EXPECT_EQ(api()->memory_copy_h2d(s, dev, 60, in.data(), 8), OAR_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(api()->memory_copy_d2d(s, dev, 0, dev, 4, 8), OAR_STATUS_INVALID_ARGUMENT);
  oar_memory_t too_big = nullptr;
  EXPECT_EQ(api()->memory_allocate(device, (1ull << 28) + 1, OAR_MEMORY_KIND_DEVICE, &too_big),
            OAR_STATUS_INVALID_ARGUMENT);
  for (oar_memory_t m : {dev, host, shared})
    EXPECT_EQ(api()->memory_free(device, m), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_destroy(s), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
}

struct Gate {
  std::atomic<bool> open{false};
  std::atomic<int> calls{0};
  std::atomic<oar_status_t> status{OAR_STATUS_INTERNAL};
  std::chrono::milliseconds sleep{0};
};

void gated(void* user_data, oar_status_t status) {
  auto* gate = static_cast<Gate*>(user_data);
  while (!gate->open) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(gate->sleep);
  gate->status = status;
  ++gate->calls;
}

TEST_F(LevelZeroPluginTest, HostCallbackRunsOnceAndHoldsLaterWork) {
  start();
  oar_device_t device = open();
  oar_stream_t s = stream(device);
  oar_memory_t m = allocate(device, 4);
  Gate gate;
  ASSERT_EQ(api()->stream_add_host_callback(s, gated, &gate), OAR_STATUS_OK) << last_error;
  uint32_t value = 7, out = 0;
  ASSERT_EQ(api()->memory_copy_h2d(s, m, 0, &value, 4), OAR_STATUS_OK);
  ASSERT_EQ(api()->memory_copy_d2h(s, &out, m, 0, 4), OAR_STATUS_OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  bool idle = true;
  ASSERT_EQ(api()->stream_query(s, &idle), OAR_STATUS_OK);
  EXPECT_FALSE(idle) << "work after a blocked callback ran";
  EXPECT_EQ(out, 0u);
  gate.open = true;
  ASSERT_EQ(api()->stream_synchronize(s), OAR_STATUS_OK) << last_error;
  EXPECT_EQ(out, 7u);
  EXPECT_EQ(gate.calls, 1);
  EXPECT_EQ(gate.status, OAR_STATUS_OK);
  EXPECT_EQ(api()->memory_free(device, m), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);  // closes the stream too
}

TEST_F(LevelZeroPluginTest, TimingEventsMeasureTheWorkBetweenThem) {
  start();
  oar_device_t device = open();
  oar_stream_t s = stream(device);
  oar_stream_t other = stream(device);
  oar_event_t begin = event(device, OAR_EVENT_FLAG_TIMING);
  oar_event_t end = event(device, OAR_EVENT_FLAG_TIMING);
  oar_event_t plain = event(device);
  float ms = -1.0f;
  EXPECT_EQ(api()->event_elapsed_ms(begin, end, &ms), OAR_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(api()->stream_wait_event(other, begin), OAR_STATUS_FAILED_PRECONDITION);
  Gate gate;
  gate.open = true;
  gate.sleep = std::chrono::milliseconds(30);
  ASSERT_EQ(api()->event_record(begin, s), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->stream_add_host_callback(s, gated, &gate), OAR_STATUS_OK);
  ASSERT_EQ(api()->event_record(end, s), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->event_record(plain, s), OAR_STATUS_OK);
  ASSERT_EQ(api()->stream_wait_event(other, end), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->stream_synchronize(other), OAR_STATUS_OK) << last_error;
  bool done = false;
  ASSERT_EQ(api()->event_query(end, &done), OAR_STATUS_OK);
  EXPECT_TRUE(done);  // the other stream waited for it
  ASSERT_EQ(api()->event_synchronize(plain), OAR_STATUS_OK);
  ASSERT_EQ(api()->event_elapsed_ms(begin, end, &ms), OAR_STATUS_OK) << last_error;
  EXPECT_GE(ms, 25.0f);
  EXPECT_LT(ms, 5000.0f);
  EXPECT_EQ(api()->event_elapsed_ms(begin, plain, &ms), OAR_STATUS_FAILED_PRECONDITION);
  for (oar_event_t e : {begin, end, plain}) EXPECT_EQ(api()->event_destroy(e), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_destroy(s), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_destroy(other), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
}

TEST_F(LevelZeroPluginTest, LostDeviceFailsTheStreamAndWhatFollows) {
  setenv("OAR_ZE_FAKE_LOST_AFTER", "3", 1);
  start();
  oar_device_t device = open();
  oar_stream_t s = stream(device);
  oar_memory_t m = allocate(device, 16);
  std::vector<uint8_t> bytes(16, 1);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(api()->memory_copy_h2d(s, m, 0, bytes.data(), 16), OAR_STATUS_OK);
  }
  EXPECT_EQ(api()->stream_synchronize(s), OAR_STATUS_ABORTED);
  EXPECT_NE(last_error.find("ZE_RESULT_ERROR_DEVICE_LOST"), std::string::npos) << last_error;
  bool idle = false;
  EXPECT_EQ(api()->stream_query(s, &idle), OAR_STATUS_ABORTED);
  EXPECT_EQ(api()->memory_fill(s, m, 0, 0, 16), OAR_STATUS_ABORTED);
  oar_event_t e = event(device);
  EXPECT_EQ(api()->event_record(e, s), OAR_STATUS_OK);
  EXPECT_EQ(api()->event_synchronize(e), OAR_STATUS_ABORTED);  // it carries the failure
  Gate gate;
  gate.open = true;
  ASSERT_EQ(api()->stream_add_host_callback(s, gated, &gate), OAR_STATUS_OK);
  oar_device_t second = nullptr;  // the same device, opened again: its own stream fails too
  ASSERT_EQ(api()->device_open(0, &second), OAR_STATUS_OK);
  EXPECT_EQ(api()->stream_synchronize(s), OAR_STATUS_ABORTED);
  for (int i = 0; i < 1000 && gate.calls == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(gate.calls, 1);
  EXPECT_EQ(gate.status, OAR_STATUS_ABORTED);
  EXPECT_EQ(api()->device_close(second), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);  // stream, event, memory: still freed
}

TEST_F(LevelZeroPluginTest, ShutdownReleasesInOrderWhatTheHostLeaked) {
  start();
  oar_device_t device = open();
  oar_stream_t s = stream(device);
  (void)event(device, OAR_EVENT_FLAG_TIMING);
  (void)allocate(device, 32);
  (void)s;
  // finalize, with the device, its stream, event and memory still open
  ASSERT_EQ(api()->finalize(), OAR_STATUS_OK);
  initialized_ = false;
  const std::string order = fake().log();
  const size_t list = order.find("command list"), memory = order.find("memory"),
               context = order.find("context");
  ASSERT_NE(list, std::string::npos) << order;
  ASSERT_NE(memory, std::string::npos) << order;
  ASSERT_NE(context, std::string::npos) << order;
  EXPECT_LT(list, memory) << order;
  EXPECT_LT(memory, context) << order;
  EXPECT_EQ(order.rfind("context"), order.size() - std::strlen("context\n")) << order;
  EXPECT_NE(all_logs().find("closed with 1 stream(s), 1 event(s) and 1 allocation(s)"),
            std::string::npos)
      << all_logs();
}

class LevelZeroKernelTest : public LevelZeroPluginTest {
 protected:
  void start_and_register() {
    start();
    oar_kernel_registrar_t registrar{OAR_KERNEL_REGISTRAR_STRUCT_SIZE, &defs_, capture};
    ASSERT_EQ(api()->register_kernels(&registrar), OAR_STATUS_OK) << last_error;
    device_ = open();
    stream_ = stream(device_);
  }
  const KernelDef* find(const std::string& op, uint8_t code, uint8_t bits) const {
    for (const auto& d : defs_) {
      if (d.op == op && d.dtypes[0].code == code && d.dtypes[0].bits == bits) return &d;
    }
    return nullptr;
  }
  DLTensor tensor(int64_t* shape, DLDataType dtype, uint64_t offset = 0) {
    DLTensor t{};
    t.data = allocate(device_, uint64_t(shape[0]) * dtype.bits / 8 + offset);
    memories_.push_back(t.data);
    t.byte_offset = offset;
    t.device = {DLDeviceType(14), 0};
    t.ndim = 1;
    t.dtype = dtype;
    t.shape = shape;
    return t;
  }
  oar_status_t call(const KernelDef& def, DLTensor x, DLTensor y,
                    std::vector<oar_attr_t> attrs = {}) {
    oar_kernel_call_t c{};
    c.struct_size = OAR_KERNEL_CALL_STRUCT_SIZE;
    c.device = device_;
    c.stream = stream_;
    c.inputs = &x;
    c.num_inputs = 1;
    c.outputs = &y;
    c.num_outputs = 1;
    c.attrs = attrs.data();
    c.num_attrs = attrs.size();
    c.user_data = def.user_data;
    return def.fn(&c);
  }
  void TearDown() override {
    if (initialized_) {
      for (void* m : memories_) {
        EXPECT_EQ(api()->memory_free(device_, static_cast<oar_memory_t>(m)), OAR_STATUS_OK);
      }
      EXPECT_EQ(api()->stream_destroy(stream_), OAR_STATUS_OK);
      EXPECT_EQ(api()->device_close(device_), OAR_STATUS_OK);
    }
    LevelZeroPluginTest::TearDown();
  }
  std::vector<KernelDef> defs_;
  std::vector<void*> memories_;
  oar_device_t device_ = nullptr;
  oar_stream_t stream_ = nullptr;
};

TEST_F(LevelZeroKernelTest, UnaryOperatorsLaunchTheEmbeddedSpirvKernels) {
  start_and_register();
  const KernelDef* neg = find("neg", kDLFloat, 32);
  const KernelDef* gelu = find("gelu", kDLBfloat, 16);
  ASSERT_NE(neg, nullptr);
  ASSERT_NE(gelu, nullptr);
  int64_t shape[] = {100};
  DLTensor x = tensor(shape, {kDLFloat, 32, 1}, 8), y = tensor(shape, {kDLFloat, 32, 1});
  ASSERT_EQ(call(*neg, x, y), OAR_STATUS_OK) << last_error;
  DLTensor a = tensor(shape, {kDLBfloat, 16, 1}), b = tensor(shape, {kDLBfloat, 16, 1});
  oar_attr_t tanh{};
  tanh.name = "approximate";
  tanh.type = OAR_ATTR_TYPE_STRING;
  tanh.value.s = "tanh";
  ASSERT_EQ(call(*gelu, a, b, {tanh}), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_OK) << last_error;
  // The opencl plugin's layout: (x, x offset, y, y offset, n); 100 items in
  // groups of the suggested 4.
  EXPECT_EQ(std::string(fake().launches()),
            "u_neg groups=25 group=4 args=8,8,8,8,8,\n"
            "u_gelu_tanh groups=25 group=4 args=8,8,8,8,8,\n");
  // Memory of no allocation is refused before anything is appended.
  DLTensor stray = y;
  stray.data = reinterpret_cast<void*>(uintptr_t(0x1000));
  EXPECT_EQ(call(*neg, x, stray), OAR_STATUS_INVALID_ARGUMENT);
}

TEST_F(LevelZeroKernelTest, F64NeedsFp64AndModuleFailuresCarryTheBuildLog) {
  setenv("OAR_ZE_FAKE_FP64", "0", 1);
  start_and_register();
  int64_t shape[] = {4};
  const KernelDef* neg64 = find("neg", kDLFloat, 64);
  ASSERT_NE(neg64, nullptr);
  DLTensor x = tensor(shape, {kDLFloat, 64, 1}), y = tensor(shape, {kDLFloat, 64, 1});
  EXPECT_EQ(call(*neg64, x, y), OAR_STATUS_UNIMPLEMENTED);
  EXPECT_NE(last_error.find("no fp64"), std::string::npos) << last_error;
}

TEST_F(LevelZeroKernelTest, ModuleBuildFailureCarriesTheBuildLog) {
  setenv("OAR_ZE_FAKE_MODULE_RESULT", "0x70000004", 1);  // ZE_RESULT_ERROR_MODULE_BUILD_FAILURE
  start_and_register();
  int64_t shape[] = {4};
  const KernelDef* neg = find("neg", kDLFloat, 32);
  ASSERT_NE(neg, nullptr);
  DLTensor x = tensor(shape, {kDLFloat, 32, 1}), y = tensor(shape, {kDLFloat, 32, 1});
  EXPECT_EQ(call(*neg, x, y), OAR_STATUS_INTERNAL);
  EXPECT_NE(last_error.find("zeModuleCreate(kernels/elementwise.cl, f32) failed: "
                            "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE: fake build log"),
            std::string::npos)
      << last_error;
}

// The SPIR-V modules the plugin embeds (modules.txt: "<source> <dtype>
// <module.spv> <source.i>" a line, the .i being the source as clang
// preprocessed it for that dtype): each module's entry points are exactly the
// __kernel functions of its source, so no kernel of the opencl sources is
// missing from the level_zero plugin. (spirv-val checks each module when it
// is built: a module it refuses fails the build.)
std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::set<std::string> spirv_entry_points(const std::string& bytes) {
  std::set<std::string> names;
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  if (words.size() < 5 || words[0] != 0x07230203u) return names;
  for (size_t at = 5; at < words.size();) {
    const uint32_t count = words[at] >> 16, opcode = words[at] & 0xffffu;
    if (count == 0 || at + count > words.size()) break;
    if (opcode == 15 && count > 3) {  // OpEntryPoint: model, id, name
      const char* name = reinterpret_cast<const char*>(&words[at + 3]);
      names.insert(std::string(name, strnlen(name, (count - 3) * 4)));
    }
    at += count;
  }
  return names;
}

std::set<std::string> declared_kernels(const std::string& source) {
  std::set<std::string> names;
  static const std::regex kernel(R"(__kernel\b[^;{]*?\bvoid\s+(\w+)\s*\()");
  for (std::sregex_iterator it(source.begin(), source.end(), kernel), end; it != end; ++it) {
    names.insert((*it)[1].str());
  }
  return names;
}

TEST(LevelZeroSpirvModules, EveryKernelOfTheOpenclSourcesIsAnEntryPoint) {
  std::ifstream list(OAR_LEVEL_ZERO_MODULE_LIST);
  ASSERT_TRUE(list) << OAR_LEVEL_ZERO_MODULE_LIST;
  std::set<std::string> sources;
  size_t modules = 0, kernels = 0;
  for (std::string line; std::getline(list, line);) {
    std::istringstream fields(line);
    std::string source, dtype, module, preprocessed;
    ASSERT_TRUE(fields >> source >> dtype >> module >> preprocessed) << line;
    const std::set<std::string> want = declared_kernels(read_file(preprocessed));
    const std::set<std::string> have = spirv_entry_points(read_file(module));
    EXPECT_FALSE(want.empty()) << source << "/" << dtype << ": no __kernel in " << preprocessed;
    EXPECT_EQ(want, have) << source << "/" << dtype << ": " << module;
    sources.insert(source);
    ++modules;
    kernels += have.size();
  }
  std::istringstream expected(OAR_LEVEL_ZERO_SOURCES);
  for (std::string source; expected >> source;) {
    EXPECT_EQ(sources.count(source), 1u) << "no module of kernels/" << source << ".cl";
  }
  EXPECT_EQ(modules, 71u);  // 5 sources x 10 dtypes, reduction x 9, nn gemm grad x 4
  std::cout << modules << " modules, " << kernels << " entry points\n";
}

TEST(LevelZeroSpirvModules, TheCheckSeesAMissingKernel) {
  // The comparison above fails for a module that lacks a declared kernel.
  const std::string source =
      "__kernel void a(int x) {}\n__kernel __attribute__((x(1))) void b() {}";
  EXPECT_EQ(declared_kernels(source), (std::set<std::string>{"a", "b"}));
  EXPECT_NE(declared_kernels(source), (std::set<std::string>{"a"}));
}

}  // namespace
