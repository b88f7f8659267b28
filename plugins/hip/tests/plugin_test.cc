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

#include "gpu_plugin_behaviour_tests.h"
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

// The fake's inspection entry points.
oar_gpu_test::FakeInspection& fake() {
  static oar_gpu_test::FakeInspection f(OAR_HIP_FAKE_RUNTIME_PATH, "oar_hip_fake_");
  return f;
}

class HipPluginTest : public oar_gpu_test::BehaviourTest<api> {
 protected:
  oar_gpu_test::FakeInspection& inspection() override { return fake(); }
  const oar_gpu_test::FakeNames& names() override {
    static const oar_gpu_test::FakeNames kNames = {
        "OAR_HIP_RUNTIME",
        OAR_HIP_FAKE_RUNTIME_PATH,
        {"OAR_HIP_FAKE_INIT_ERROR", "OAR_HIP_FAKE_DEVICES", "OAR_HIP_FAKE_MEMORY",
         "OAR_HIP_FAKE_FAULT_AFTER", "OAR_HIP_FAKE_FAULT_KERNEL"},
        "OAR_HIP_FAKE_MEMORY",
        "OAR_HIP_FAKE_FAULT_AFTER",
        "hipHostMalloc",
        "hipHostFree",
        "hipMalloc failed: hipErrorOutOfMemory",
        "hip: hipStreamSynchronize failed: hipErrorIllegalAddress"};
    return kNames;
  }
  void set_switches() override {
    setenv("OAR_HIP_FAKE_ARCH", OAR_HIP_FIRST_TARGET, 1);  // a target the plugin was built for
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
  finalize_releases_devices_the_host_left();
}

TEST_F(HipPluginTest, CopiesAndFillsAreStreamOrderedAndAsynchronous) {
  copies_and_fills_are_stream_ordered_and_asynchronous();
}

TEST_F(HipPluginTest, PinnedHostMemoryHasAHostAddressDeviceMemoryHasNone) {
  pinned_host_memory_has_a_host_address_device_memory_has_none();
}

TEST_F(HipPluginTest, AllocationFailureIsResourceExhaustedWithTheRuntimesName) {
  allocation_failure_is_resource_exhausted_with_the_runtimes_name();
}

TEST_F(HipPluginTest, EventsOrderStreamsAndTime) { events_order_streams_and_time(); }

TEST_F(HipPluginTest, HostCallbacksRunAfterTheWorkBeforeThem) {
  host_callbacks_run_after_the_work_before_them();
}

// The async error model: a fault in queued work (hipErrorIllegalAddress)
// fails the stream with the hipError_t's name.
TEST_F(HipPluginTest, AnAsynchronousFaultFailsTheStreamWithTheErrorsName) {
  an_asynchronous_fault_fails_the_stream_with_the_errors_name();
}

TEST_F(HipPluginTest, AFaultOnOneStreamFailsTheOthersOfTheDeviceWhenTheyLookAgain) {
  a_fault_on_one_stream_fails_the_others_when_they_look_again();
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

TEST_F(HipPluginTest, ArgumentsAreChecked) { arguments_are_checked(); }

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
    return oar_gpu_test::call_kernel(def.fn, def.user_data, device_, stream_, std::move(inputs),
                                     std::move(outputs), attrs);
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
