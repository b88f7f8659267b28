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
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
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

const char* const kSwitches[] = {"OAR_ZE_FAKE_INIT_RESULT",   "OAR_ZE_FAKE_DEVICES",
                                 "OAR_ZE_FAKE_FP64",          "OAR_ZE_FAKE_LOST_AFTER",
                                 "OAR_ZE_FAKE_MODULE_RESULT", "OAR_ZE_FAKE_INDEX_ERROR"};

// A pointer as the fake shows an 8-byte argument.
std::string ptr(const void* p) { return std::to_string(int64_t(reinterpret_cast<intptr_t>(p))); }

// One launch the fake recorded: "<kernel> groups=X,Y,Z group=x,y,z args=a;b;...".
struct Launch {
  std::string kernel, groups, group;
  std::vector<std::string> args;
};
std::vector<Launch> parse_launches(const std::string& text) {
  std::vector<Launch> all;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    Launch l;
    std::istringstream fields(line);
    std::string groups, group, args;
    fields >> l.kernel >> groups >> group >> args;
    l.groups = groups.substr(groups.find('=') + 1);
    l.group = group.substr(group.find('=') + 1);
    std::istringstream items(args.substr(args.find('=') + 1));
    std::string item;
    while (std::getline(items, item, ';')) l.args.push_back(item);
    all.push_back(l);
  }
  return all;
}
// A struct argument ("<n>B:<hex>") as its 64-bit words (the geometry structs
// of the .cl sources are all 64-bit fields).
std::vector<int64_t> words_of(const std::string& arg) {
  std::vector<int64_t> words;
  const std::string hex = arg.substr(arg.find(':') + 1);
  std::vector<unsigned char> bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<unsigned char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  words.resize(bytes.size() / 8);
  if (!words.empty()) std::memcpy(words.data(), bytes.data(), words.size() * 8);
  return words;
}

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
  const KernelDef* find(const std::string& op, const std::vector<DLDataType>& dtypes) const {
    for (const auto& d : defs_) {
      if (d.op != op || d.dtypes.size() != dtypes.size()) continue;
      bool same = true;
      for (size_t i = 0; i < dtypes.size(); ++i) {
        same = same && d.dtypes[i].code == dtypes[i].code && d.dtypes[i].bits == dtypes[i].bits;
      }
      if (same) return &d;
    }
    return nullptr;
  }
  // A contiguous tensor of |shape| in a new allocation.
  DLTensor nd(std::vector<int64_t> shape, DLDataType dtype, uint64_t offset = 0) {
    shapes_.push_back(std::move(shape));
    std::vector<int64_t>& kept = shapes_.back();
    uint64_t n = 1;
    for (int64_t e : kept) n *= uint64_t(e);
    DLTensor t{};
    t.data = allocate(device_, n * dtype.bits / 8 + offset);
    memories_.push_back(t.data);
    t.byte_offset = offset;
    t.device = {DLDeviceType(14), 0};
    t.ndim = int32_t(kept.size());
    t.dtype = dtype;
    t.shape = kept.data();
    return t;
  }
  oar_status_t run(const KernelDef& def, std::vector<DLTensor> inputs,
                   std::vector<DLTensor> outputs, std::vector<oar_attr_t> attrs = {}) {
    return oar_gpu_test::call_kernel(def.fn, def.user_data, device_, stream_, std::move(inputs),
                                     std::move(outputs), attrs);
  }
  std::vector<Launch> synchronized_launches() {
    EXPECT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_OK) << last_error;
    return parse_launches(fake().launches());
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
    return oar_gpu_test::call_kernel(def.fn, def.user_data, device_, stream_, {x}, {y}, attrs);
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
  std::deque<std::vector<int64_t>> shapes_;
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
  EXPECT_EQ(std::string(fake().launches()), "u_neg groups=25,1,1 group=4,1,1 args=" + ptr(x.data) +
                                                ";8;" + ptr(y.data) +
                                                ";0;100\n"
                                                "u_gelu_tanh groups=25,1,1 group=4,1,1 args=" +
                                                ptr(a.data) + ";0;" + ptr(b.data) + ";0;100\n");
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

namespace {

// "add(f32,f32,f32)": an operator and its signature.
std::string signature(const KernelDef& d) {
  std::string text = d.op + "(";
  for (size_t i = 0; i < d.dtypes.size(); ++i) {
    text += (i == 0 ? "" : ",") + std::to_string(d.dtypes[i].code) + ":" +
            std::to_string(d.dtypes[i].bits);
  }
  return text + ")";
}

TEST_F(LevelZeroKernelTest, RegistersEveryOperatorOfTheOpenclPlugin) {
  start_and_register();
  std::set<std::string> ours;
  std::set<std::string> ops;
  for (const auto& d : defs_) {
    ours.insert(signature(d));
    ops.insert(d.op);
  }
  EXPECT_EQ(ours.size(), defs_.size()) << "a signature registered twice";
  // One operator of each host source (plugins/opencl/kernels/*.cc).
  for (const char* op : {"add",
                         "cast",
                         "fill",
                         "copy",
                         "concat",
                         "index_select",
                         "sum",
                         "argmax",
                         "softmax",
                         "layer_norm",
                         "matmul",
                         "softmax_grad",
                         "layer_norm_grad",
                         "adamw",
                         "grad_norm",
                         "flip",
                         "tril",
                         "sort",
                         "logsumexp",
                         "where"}) {
    EXPECT_EQ(ops.count(op), 1u) << op;
  }
  EXPECT_NE(find("add", {{kDLInt, 32, 1}, {kDLInt, 32, 1}, {kDLInt, 32, 1}}), nullptr);
  EXPECT_NE(find("matmul", {{kDLFloat, 64, 1}, {kDLFloat, 64, 1}, {kDLFloat, 64, 1}}), nullptr);
#ifdef OAR_OPENCL_PLUGIN_PATH
  // The opencl plugin's set, registered without an OpenCL library (0 devices):
  // the same operators with the same signatures.
  const oar_plugin_api_t* opencl = oar_gpu_test::load_plugin(OAR_OPENCL_PLUGIN_PATH);
  ASSERT_NE(opencl, nullptr) << dlerror();
  setenv("OAR_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1", 1);
  ASSERT_EQ(opencl->initialize(&kHost), OAR_STATUS_OK) << last_error;
  std::vector<KernelDef> defs;
  oar_kernel_registrar_t registrar{OAR_KERNEL_REGISTRAR_STRUCT_SIZE, &defs, capture};
  ASSERT_EQ(opencl->register_kernels(&registrar), OAR_STATUS_OK) << last_error;
  EXPECT_EQ(opencl->finalize(), OAR_STATUS_OK);
  unsetenv("OAR_OPENCL_LIBRARY");
  std::set<std::string> theirs;
  for (const auto& d : defs) theirs.insert(signature(d));
  std::vector<std::string> only_ours, only_theirs;
  std::set_difference(ours.begin(), ours.end(), theirs.begin(), theirs.end(),
                      std::back_inserter(only_ours));
  std::set_difference(theirs.begin(), theirs.end(), ours.begin(), ours.end(),
                      std::back_inserter(only_theirs));
  EXPECT_TRUE(only_ours.empty()) << only_ours.size() << " only here, e.g. " << only_ours.front();
  EXPECT_TRUE(only_theirs.empty())
      << only_theirs.size() << " only in opencl, e.g. " << only_theirs.front();
#endif
}

TEST_F(LevelZeroKernelTest, BinaryOperatorPassesContiguousOperandsAndBroadcastGeometry) {
  start_and_register();
  const DLDataType f32{kDLFloat, 32, 1};
  const KernelDef* add = find("add", {f32, f32, f32});
  ASSERT_NE(add, nullptr);
  // Same shapes, contiguous: b_add_c (a, a offset, b, b offset, y, y offset, n).
  DLTensor a = nd({3, 4}, f32, 16), b = nd({3, 4}, f32), y = nd({3, 4}, f32, 4);
  ASSERT_EQ(run(*add, {a, b}, {y}), OAR_STATUS_OK) << last_error;
  // Broadcast [3,1] + [1,4] -> [3,4]: b_add_s (a, b, y, geo_t).
  DLTensor column = nd({3, 1}, f32, 8), row = nd({1, 4}, f32);
  ASSERT_EQ(run(*add, {column, row}, {y}), OAR_STATUS_OK) << last_error;
  std::vector<Launch> launches = synchronized_launches();
  ASSERT_EQ(launches.size(), 2u) << fake().launches();
  EXPECT_EQ(launches[0].kernel, "b_add_c");
  EXPECT_EQ(launches[0].args, (std::vector<std::string>{ptr(a.data), "16", ptr(b.data), "0",
                                                        ptr(y.data), "4", "12"}));
  EXPECT_EQ(launches[0].groups, "3,1,1");  // 12 items in groups of the suggested 4
  EXPECT_EQ(launches[0].group, "4,1,1");
  const Launch& s = launches[1];
  EXPECT_EQ(s.kernel, "b_add_s");
  ASSERT_EQ(s.args.size(), 4u);
  EXPECT_EQ(s.args[0], ptr(column.data));
  EXPECT_EQ(s.args[1], ptr(row.data));
  EXPECT_EQ(s.args[2], ptr(y.data));
  // geo_t: rank, numel, shape[8], strides[4][8] (y, a, b), offsets[4].
  const std::vector<int64_t> g = words_of(s.args[3]);
  ASSERT_EQ(g.size(), 2u + 8 + 32 + 4) << s.args[3];
  EXPECT_EQ(g[0], 2);
  EXPECT_EQ(g[1], 12);
  EXPECT_EQ(std::vector<int64_t>(g.begin() + 2, g.begin() + 4), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(std::vector<int64_t>(g.begin() + 10, g.begin() + 12), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(std::vector<int64_t>(g.begin() + 18, g.begin() + 20), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(std::vector<int64_t>(g.begin() + 26, g.begin() + 28), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(std::vector<int64_t>(g.begin() + 42, g.begin() + 45), (std::vector<int64_t>{4, 8, 0}));
}

TEST_F(LevelZeroKernelTest, ReductionPassesItsSplitOfTheAxes) {
  start_and_register();
  const DLDataType f32{kDLFloat, 32, 1};
  const KernelDef* sum = find("sum", {f32, f32});
  ASSERT_NE(sum, nullptr);
  DLTensor x = nd({5, 6}, f32), y = nd({5}, f32, 12);
  const int64_t axes[] = {1};
  oar_attr_t attr{};
  attr.name = "axes";
  attr.type = OAR_ATTR_TYPE_INT_ARRAY;
  attr.value.ints = {axes, 1};
  ASSERT_EQ(run(*sum, {x}, {y}, {attr}), OAR_STATUS_OK) << last_error;
  std::vector<Launch> launches = synchronized_launches();
  ASSERT_EQ(launches.size(), 1u) << fake().launches();
  EXPECT_EQ(launches[0].kernel, "r_sum");
  EXPECT_EQ(launches[0].groups, "5,1,1");  // one work-item per output, groups of 1 (5 is odd)
  EXPECT_EQ(launches[0].group, "1,1,1");
  ASSERT_EQ(launches[0].args.size(), 3u);
  EXPECT_EQ(launches[0].args[0], ptr(x.data));
  EXPECT_EQ(launches[0].args[1], ptr(y.data));
  // red_t: outer rank, shape[8], strides[8]; inner the same; outer_n,
  // inner_n, x offset, y offset.
  const std::vector<int64_t> r = words_of(launches[0].args[2]);
  ASSERT_EQ(r.size(), 2u * 17 + 4) << launches[0].args[2];
  EXPECT_EQ(r[0], 1);
  EXPECT_EQ(r[1], 5);
  EXPECT_EQ(r[9], 6);
  EXPECT_EQ(r[17], 1);
  EXPECT_EQ(r[18], 6);
  EXPECT_EQ(r[26], 1);
  EXPECT_EQ(std::vector<int64_t>(r.begin() + 34, r.end()), (std::vector<int64_t>{5, 6, 0, 12}));
}

TEST_F(LevelZeroKernelTest, MatmulLaunchesTheDefaultTilesInThreeDimensions) {
  start_and_register();
  const DLDataType f32{kDLFloat, 32, 1};
  const KernelDef* matmul = find("matmul", {f32, f32, f32});
  ASSERT_NE(matmul, nullptr);
  // A batch of 3 over a [70,5] x [5,130] product: gemm.cl's default tile
  // shape (16 x 16 work-items, 64 x 64 blocks) gives 3 x 2 x 3 groups.
  DLTensor a = nd({3, 70, 5}, f32), b = nd({5, 130}, f32, 4), y = nd({3, 70, 130}, f32);
  ASSERT_EQ(run(*matmul, {a, b}, {y}), OAR_STATUS_OK) << last_error;
  std::vector<Launch> launches = synchronized_launches();
  ASSERT_EQ(launches.size(), 1u) << fake().launches();
  EXPECT_EQ(launches[0].kernel, "gemm");
  EXPECT_EQ(launches[0].groups, "3,2,3");
  EXPECT_EQ(launches[0].group, "16,16,1");
  ASSERT_EQ(launches[0].args.size(), 4u);
  EXPECT_EQ(launches[0].args[0], ptr(a.data));
  EXPECT_EQ(launches[0].args[1], ptr(b.data));
  EXPECT_EQ(launches[0].args[2], ptr(y.data));
  // mm_t: m n k, a_m a_k b_k b_n, batch_rank, batch_shape[6], a_batch[6],
  // b_batch[6], a/b/y offsets.
  const std::vector<int64_t> p = words_of(launches[0].args[3]);
  ASSERT_EQ(p.size(), 3u + 4 + 1 + 18 + 3) << launches[0].args[3];
  EXPECT_EQ(std::vector<int64_t>(p.begin(), p.begin() + 8),
            (std::vector<int64_t>{70, 130, 5, 5, 1, 130, 1, 1}));
  EXPECT_EQ(p[8], 3);     // batch shape
  EXPECT_EQ(p[14], 350);  // a's batch stride
  EXPECT_EQ(p[20], 0);    // b broadcast over the batch
  EXPECT_EQ(std::vector<int64_t>(p.begin() + 26, p.end()), (std::vector<int64_t>{0, 4, 0}));
}

TEST_F(LevelZeroKernelTest, IndexOutOfRangeFailsTheStreamWithTheKernelsRecord) {
  setenv("OAR_ZE_FAKE_INDEX_ERROR", "index_select_i64", 1);
  start_and_register();
  const DLDataType f32{kDLFloat, 32, 1}, i64{kDLInt, 64, 1};
  const KernelDef* select = find("index_select", {f32, i64, f32});
  ASSERT_NE(select, nullptr);
  DLTensor x = nd({5, 2}, f32), index = nd({3}, i64), y = nd({3, 2}, f32);
  oar_attr_t axis{};
  axis.name = "axis";
  axis.type = OAR_ATTR_TYPE_INT;
  axis.value.i = 0;
  ASSERT_EQ(run(*select, {x, index}, {y}, {axis}), OAR_STATUS_OK) << last_error;
  // The last argument is the stream's record; the fake's kernel writes
  // {index_select, 7, 5} into it.
  EXPECT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_OUT_OF_RANGE);
  EXPECT_NE(last_error.find("index_select: index 7 out of range [0, 5)"), std::string::npos)
      << last_error;
  EXPECT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_OUT_OF_RANGE);  // sticky
  const std::vector<Launch> launches = parse_launches(fake().launches());
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].args.size(), 11u);
}

TEST_F(LevelZeroKernelTest, FillAndCopyAreDriverCommandsOnTheStream) {
  start_and_register();
  const DLDataType f32{kDLFloat, 32, 1};
  const KernelDef* fill = find("fill", {f32});
  const KernelDef* copy = find("copy", {f32, f32});
  ASSERT_NE(fill, nullptr);
  ASSERT_NE(copy, nullptr);
  oar_status_t status = OAR_STATUS_OK;
  oar_memory_t host = nullptr, other = nullptr;
  ASSERT_EQ(api()->memory_allocate(device_, 64, OAR_MEMORY_KIND_HOST_PINNED, &host), OAR_STATUS_OK);
  memories_.push_back(host);
  ASSERT_EQ(api()->memory_allocate(device_, 16, OAR_MEMORY_KIND_UNIFIED, &other), OAR_STATUS_OK);
  memories_.push_back(other);
  int64_t shape[] = {4};
  DLTensor y{};
  y.data = host;
  y.byte_offset = 16;
  y.device = {DLDeviceType(14), 0};
  y.ndim = 1;
  y.dtype = f32;
  y.shape = shape;
  oar_attr_t value{};
  value.name = "value";
  value.type = OAR_ATTR_TYPE_FLOAT;
  value.value.f = 2.5;
  status = run(*fill, {}, {y}, {value});
  ASSERT_EQ(status, OAR_STATUS_OK) << last_error;
  // A contiguous copy between two allocations: a copy command.
  DLTensor z = y;
  z.data = other;
  z.byte_offset = 0;
  ASSERT_EQ(run(*copy, {y}, {z}), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_OK) << last_error;
  const float* filled = reinterpret_cast<const float*>(host);
  const float* copied = reinterpret_cast<const float*>(other);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(filled[4 + i], 2.5f) << i;
    EXPECT_EQ(copied[i], 2.5f) << i;
  }
  EXPECT_EQ(std::string(fake().launches()), "");  // no kernel: fill and copy commands
}

TEST_F(LevelZeroKernelTest, FloatAttributesMatchEachModulesRealType) {
  // The modules of other dtypes than f64 are built without OAR_HAS_FP64, so
  // common.cl's real_arg is float there even on a device with fp64; the f64
  // modules take double. The fake checks each argument's size against the
  // module's parameter.
  start_and_register();
  for (uint8_t bits : {32, 64}) {
    const DLDataType t{kDLFloat, bits, 1};
    const KernelDef* norm = find("rms_norm", {t, t, t});
    ASSERT_NE(norm, nullptr);
    DLTensor x = nd({2, 3}, t), w = nd({3}, t), y = nd({2, 3}, t);
    oar_attr_t eps{};
    eps.name = "eps";
    eps.type = OAR_ATTR_TYPE_FLOAT;
    eps.value.f = 0.25;
    ASSERT_EQ(run(*norm, {x, w}, {y}, {eps}), OAR_STATUS_OK) << last_error;
  }
  std::vector<Launch> launches = synchronized_launches();
  ASSERT_EQ(launches.size(), 2u) << fake().launches();
  float narrow = 0.25f;
  int32_t narrow_bits = 0;
  std::memcpy(&narrow_bits, &narrow, 4);
  double wide = 0.25;
  int64_t wide_bits = 0;
  std::memcpy(&wide_bits, &wide, 8);
  EXPECT_EQ(launches[0].args.back(), std::to_string(narrow_bits));
  EXPECT_EQ(launches[1].args.back(), std::to_string(wide_bits));
}

TEST_F(LevelZeroKernelTest, CastToF64FromOtherDtypesIsUnimplemented) {
  // cast_to_f64 exists only where OAR_HAS_FP64 is defined: in the f64 module,
  // not in the f32 one the cast from f32 is launched from.
  start_and_register();
  const DLDataType f32{kDLFloat, 32, 1}, f64{kDLFloat, 64, 1};
  const KernelDef* cast = find("cast", {f32, f64});
  ASSERT_NE(cast, nullptr);
  DLTensor x = nd({4}, f32), y = nd({4}, f64);
  EXPECT_EQ(run(*cast, {x}, {y}), OAR_STATUS_UNIMPLEMENTED);
  EXPECT_NE(last_error.find("kernels/elementwise.cl for f32 has no kernel cast_to_f64"),
            std::string::npos)
      << last_error;
  const KernelDef* back = find("cast", {f64, f32});
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(run(*back, {y}, {x}), OAR_STATUS_OK) << last_error;
}

}  // namespace
