// The cuda plugin's runtime logic against the fake driver (fake_driver.cc):
// the plugin is loaded through its C table, as the core loads it, and the
// fake's switches (environment variables read at cuInit) select the case.
// Nothing here computes on a GPU: the fake is no device.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
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
  static const oar_plugin_api_t* table = oar_gpu_test::load_plugin(OAR_CUDA_PLUGIN_PATH);
  return table;
}

// The fake's inspection entry points.
oar_gpu_test::FakeInspection& fake() {
  static oar_gpu_test::FakeInspection f(OAR_CUDA_FAKE_DRIVER_PATH, "oar_cuda_fake_");
  return f;
}

class CudaPluginTest : public oar_gpu_test::BehaviourTest<api> {
 protected:
  oar_gpu_test::FakeInspection& inspection() override { return fake(); }
  const oar_gpu_test::FakeNames& names() override {
    static const oar_gpu_test::FakeNames kNames = {
        "OAR_CUDA_DRIVER",
        OAR_CUDA_FAKE_DRIVER_PATH,
        {"OAR_CUDA_FAKE_INIT_ERROR", "OAR_CUDA_FAKE_DEVICES", "OAR_CUDA_FAKE_CC",
         "OAR_CUDA_FAKE_MEMORY", "OAR_CUDA_FAKE_FAULT_AFTER", "OAR_CUDA_FAKE_FAULT_KERNEL",
         "OAR_CUDA_CUBLAS", "OAR_CUDA_FAKE_CUBLAS_STATUS", "OAR_CUDA_NCCL",
         "OAR_CUDA_FAKE_NCCL_RESULT", "OAR_CUDA_FAKE_STALL", "OAR_CUDA_FAKE_NCCL_ASYNC_ERROR"},
        "OAR_CUDA_FAKE_MEMORY",
        "OAR_CUDA_FAKE_FAULT_AFTER",
        "cuMemHostAlloc",
        "cuMemFreeHost",
        "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY",
        "cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS"};
    return kNames;
  }
  void set_switches() override { setenv("OAR_CUDA_NCCL", OAR_CUDA_FAKE_NCCL_PATH, 1); }
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
  EXPECT_EQ(p.native_dtypes, uint32_t(OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16 |
                                      OAR_DTYPE_SUPPORT_F64 | OAR_DTYPE_SUPPORT_INT8_DOT));
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
  finalize_releases_devices_the_host_left();
}

TEST_F(CudaPluginTest, CopiesAndFillsAreStreamOrderedAndAsynchronous) {
  copies_and_fills_are_stream_ordered_and_asynchronous();
}

TEST_F(CudaPluginTest, PinnedHostMemoryHasAHostAddressDeviceMemoryHasNone) {
  pinned_host_memory_has_a_host_address_device_memory_has_none();
}

TEST_F(CudaPluginTest, AllocationFailureIsResourceExhaustedWithTheDriversName) {
  allocation_failure_is_resource_exhausted_with_the_runtimes_name();
}

TEST_F(CudaPluginTest, EventsOrderStreamsAndTime) { events_order_streams_and_time(); }

TEST_F(CudaPluginTest, HostCallbacksRunAfterTheWorkBeforeThem) {
  host_callbacks_run_after_the_work_before_them();
}

// The async error model: a fault in queued work (CUDA's sticky
// CUDA_ERROR_ILLEGAL_ADDRESS) fails the stream with the CUresult's name.
TEST_F(CudaPluginTest, AnAsynchronousFaultFailsTheStreamWithTheCUresultName) {
  an_asynchronous_fault_fails_the_stream_with_the_errors_name();
}

TEST_F(CudaPluginTest, AFaultOnOneStreamFailsTheOthersOfTheContextWhenTheyLookAgain) {
  a_fault_on_one_stream_fails_the_others_when_they_look_again();
}

TEST_F(CudaPluginTest, ArgumentsAreChecked) { arguments_are_checked(); }

// --- operators: registration and launches ------------------------------------------
//
// The fake runs no kernel, so these tests check what the plugin controls
// without a device: which (operator, dtype) signatures it registers, that
// each call launches a kernel of the embedded image with the geometry and
// the parameter bytes the kernel's declaration in kernels.cu expects, and
// the error paths.

namespace ops_test {

struct Def {
  std::string op;
  std::vector<DLDataType> dtypes;
  size_t inputs = 0, outputs = 0;
  uint32_t flags = 0;
  oar_kernel_fn fn = nullptr;
  void* user_data = nullptr;
};

oar_status_t capture(void* context, const oar_kernel_def_t* def) {
  Def d;
  d.op = def->op_name;
  d.dtypes.assign(def->dtypes, def->dtypes + def->num_inputs + def->num_outputs);
  d.inputs = def->num_inputs;
  d.outputs = def->num_outputs;
  d.flags = def->flags;
  d.fn = def->fn;
  d.user_data = def->user_data;
  static_cast<std::vector<Def>*>(context)->push_back(d);
  return OAR_STATUS_OK;
}

std::string name(DLDataType t) {
  if (t.code == kDLFloat) return "f" + std::to_string(t.bits);
  if (t.code == kDLBfloat) return "bf16";
  if (t.code == kDLInt) return "i" + std::to_string(t.bits);
  if (t.code == kDLUInt) return "u" + std::to_string(t.bits);
  if (t.code == OAR_DTYPE_CODE_BOOL) return "bool";
  return "?";
}

// "add:f32,f32->f32"
std::string signature(const Def& d) {
  std::string s = d.op + ":" + (d.inputs == 0 ? "->" : "");
  for (size_t i = 0; i < d.dtypes.size(); ++i) {
    s += (i == 0 ? "" : (i == d.inputs ? "->" : ",")) + name(d.dtypes[i]);
  }
  return s;
}

std::set<std::string> image_kernels() {
  std::set<std::string> names;
  std::ifstream list(OAR_CUDA_KERNEL_LIST);
  for (std::string line; std::getline(list, line);) {
    if (!line.empty()) names.insert(line);
  }
  return names;
}

struct Launch {
  std::string name;
  unsigned grid[3] = {}, block[3] = {}, shared = 0;
  std::string params;
  template <typename T>
  T at(size_t offset) const {
    T value{};
    EXPECT_LE(offset + sizeof(T), params.size()) << name;
    if (offset + sizeof(T) <= params.size()) std::memcpy(&value, params.data() + offset, sizeof(T));
    return value;
  }
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

// A tensor of the test: its own allocation, contiguous strides.
struct Tensor {
  std::vector<int64_t> shape, strides;
  DLTensor t{};
};

}  // namespace ops_test

class CudaOperatorTest : public CudaPluginTest {
 protected:
  void SetUp() override {
    CudaPluginTest::SetUp();
    ASSERT_NE(fake().launch_count, nullptr);
    setenv("OAR_CUDA_CUBLAS", OAR_CUDA_FAKE_CUBLAS_PATH, 1);
  }
  void start_and_register() {
    start();
    oar_kernel_registrar_t registrar{OAR_KERNEL_REGISTRAR_STRUCT_SIZE, &defs_, ops_test::capture};
    ASSERT_EQ(api()->register_kernels(&registrar), OAR_STATUS_OK) << last_error;
    device_ = open();
    stream_ = stream(device_);
    fake().clear_launches();
  }
  const ops_test::Def* find(const std::string& signature) const {
    for (const auto& d : defs_) {
      if (ops_test::signature(d) == signature) return &d;
    }
    return nullptr;
  }
  // A contiguous tensor with an allocation of its own (|extra| bytes more,
  // for a byte_offset).
  ops_test::Tensor& tensor(std::vector<int64_t> shape, DLDataType dtype, uint64_t offset = 0) {
    tensors_.emplace_back();
    ops_test::Tensor& x = tensors_.back();
    x.shape = std::move(shape);
    x.strides.assign(x.shape.size(), 1);
    uint64_t n = 1;
    for (size_t d = x.shape.size(); d-- > 0;) {
      x.strides[d] = int64_t(n);
      n *= uint64_t(x.shape[d]);
    }
    x.t.data = allocate(device_, n * dtype.bits / 8 + offset + 1);
    x.t.byte_offset = offset;
    x.t.device = {kDLCUDA, 0};
    x.t.ndim = int(x.shape.size());
    x.t.dtype = dtype;
    x.t.shape = x.shape.data();
    x.t.strides = x.strides.data();
    return x;
  }
  oar_status_t call(const ops_test::Def& def, std::vector<DLTensor> inputs,
                    std::vector<DLTensor> outputs, std::vector<oar_attr_t> attrs = {}) {
    return oar_gpu_test::call_kernel(def.fn, def.user_data, device_, stream_, std::move(inputs),
                                     std::move(outputs), attrs);
  }
  static uint64_t address(const DLTensor& t) {
    return uint64_t(reinterpret_cast<uintptr_t>(t.data)) + t.byte_offset;
  }

  std::vector<ops_test::Def> defs_;
  std::deque<ops_test::Tensor> tensors_;
  oar_device_t device_ = nullptr;
  oar_stream_t stream_ = nullptr;
};

constexpr DLDataType kF32{kDLFloat, 32, 1}, kF16{kDLFloat, 16, 1}, kBF16{kDLBfloat, 16, 1},
    kI32{kDLInt, 32, 1}, kI64{kDLInt, 64, 1}, kU8{kDLUInt, 8, 1}, kBool{OAR_DTYPE_CODE_BOOL, 8, 1};

TEST_F(CudaOperatorTest, RegistersTheOperatorsOfItsKernelsForTheirDtypesOnly) {
  start_and_register();
  std::set<std::string> signatures;
  for (const auto& d : defs_) {
    EXPECT_TRUE(signatures.insert(ops_test::signature(d)).second) << ops_test::signature(d);
  }
  for (const char* expected : {"add:f32,f32->f32",     "add:f16,f16->f16",
                               "add:bf16,bf16->bf16",  "pow:f32,f32->f32",
                               "exp:bf16->bf16",       "gelu:f16->f16",
                               "lt:i64,i64->bool",     "eq:bf16,bf16->bool",
                               "where:bool,u8,u8->u8", "where:bool,f64,f64->f64",
                               "copy:i16->i16",        "copy:bool->bool",
                               "transpose:i64->i64",   "fill:->i8",
                               "cast:f32->bf16",       "cast:bf16->f16",
                               "cast:f16->f16",        "sum:f32->f32",
                               "max:bf16->bf16",       "softmax:f16->f16",
                               "log_softmax:f32->f32", "layer_norm:f32,f32,f32->f32"}) {
    EXPECT_EQ(signatures.count(expected), 1u) << expected;
  }
  // Nothing the kernels do not compute: integer arithmetic, f64 math, casts
  // to or from integers, embedding.
  for (const char* absent :
       {"add:i32,i32->i32", "exp:f64->f64", "sum:i64->i64", "cast:i32->f32", "cast:f32->i32",
        "lt:u8,u8->bool", "eq:bool,bool->bool", "matmul:f64,f64->f64", "embedding:f32,i64->f32"}) {
    EXPECT_EQ(signatures.count(absent), 0u) << absent;
  }
  // copy is the one operator whose input may have any strides.
  for (const auto& d : defs_) {
    EXPECT_EQ((d.flags & OAR_KERNEL_FLAG_STRIDED_INPUTS) != 0, d.op == "copy")
        << ops_test::signature(d);
  }
  // 17 unary and 7 binary operators x 3 float dtypes, 6 comparisons x 5,
  // where / copy / transpose / fill x 10 dtypes, 9 casts, 5 reductions x 3,
  // softmax / log_softmax / layer_norm / matmul x 3, index_select / gather x
  // 10 dtypes x 2 index dtypes.
  EXPECT_EQ(defs_.size(), 218u);
}

// Every registered signature, called once with small tensors, launches one
// kernel that is in the image (kernels.list, each name of which device_open
// found in the fatbin) with kBlock threads a block; the stream then
// synchronizes cleanly.
TEST_F(CudaOperatorTest, EveryRegisteredSignatureLaunchesAKernelOfTheImage) {
  setenv("OAR_CUDA_CUBLAS", "none", 1);  // matmul: OAR's own kernel
  start_and_register();
  const std::set<std::string> image = ops_test::image_kernels();
  ASSERT_GT(image.size(), 100u);
  std::set<std::string> used;
  for (const auto& d : defs_) {
    SCOPED_TRACE(ops_test::signature(d));
    std::vector<DLTensor> inputs, outputs;
    std::vector<oar_attr_t> attrs;
    const int64_t perm[] = {1, 0};
    for (size_t i = 0; i < d.inputs; ++i) {
      std::vector<int64_t> shape = {2, 3};
      if (d.op == "layer_norm" && i > 0) shape = {3};
      if (d.op == "matmul" && i > 0) shape = {3, 2};
      if (d.op == "index_select" && i > 0) shape = {2};
      inputs.push_back(tensor(shape, d.dtypes[i]).t);
    }
    std::vector<int64_t> out_shape = {2, 3};
    const std::string op = d.op;
    if (op == "sum" || op == "mean" || op == "max" || op == "min" || op == "prod") out_shape = {};
    if (op == "matmul") out_shape = {2, 2};
    if (op == "transpose") {
      out_shape = {3, 2};
      oar_attr_t a{};
      a.name = "perm";
      a.type = OAR_ATTR_TYPE_INT_ARRAY;
      a.value.ints = {perm, 2};
      attrs.push_back(a);
    }
    if (op == "gather") {
      oar_attr_t a{};
      a.name = "axis";
      a.type = OAR_ATTR_TYPE_INT;
      a.value.i = 1;
      attrs.push_back(a);
    }
    if (op == "fill") {
      oar_attr_t a{};
      a.name = "value";
      a.type = OAR_ATTR_TYPE_FLOAT;
      a.value.f = 1.5;
      attrs.push_back(a);
    }
    outputs.push_back(tensor(out_shape, d.dtypes[d.inputs]).t);
    fake().clear_launches();
    ASSERT_EQ(call(d, inputs, outputs, attrs), OAR_STATUS_OK) << last_error;
    const auto all = ops_test::launches();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(image.count(all[0].name), 1u) << all[0].name;
    EXPECT_EQ(all[0].block[0], 256u);
    EXPECT_GE(all[0].grid[0], 1u);
    used.insert(all[0].name);
    if (op == "gelu") {  // and its other mode
      oar_attr_t a{};
      a.name = "approximate";
      a.type = OAR_ATTR_TYPE_STRING;
      a.value.s = "tanh";
      fake().clear_launches();
      ASSERT_EQ(call(d, inputs, outputs, {a}), OAR_STATUS_OK) << last_error;
      ASSERT_EQ(ops_test::launches().size(), 1u);
      EXPECT_EQ(ops_test::launches()[0].name, "oar_gelu_tanh_" + ops_test::name(d.dtypes[0]));
      used.insert(ops_test::launches()[0].name);
    }
  }
  EXPECT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_OK) << last_error;
  // Every kernel of the image serves some operator.
  std::vector<std::string> unused;
  for (const auto& k : image) {
    if (used.count(k) == 0) unused.push_back(k);
  }
  EXPECT_TRUE(unused.empty()) << unused.size() << " unused, e.g. " << unused[0];
}

TEST_F(CudaOperatorTest, BinaryOperatorsPassPointersWithOffsetsAndBroadcastStrides) {
  start_and_register();
  const ops_test::Def* add = find("add:f16,f16->f16");
  ASSERT_NE(add, nullptr);
  auto& a = tensor({2, 3}, kF16, 6);
  auto& b = tensor({3}, kF16);
  auto& y = tensor({2, 3}, kF16, 2);
  ASSERT_EQ(call(*add, {a.t, b.t}, {y.t}), OAR_STATUS_OK) << last_error;
  const auto l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].name, "oar_add_f16");
  EXPECT_EQ(l[0].grid[0], 1u);
  // (a, b, y, Geo{rank, numel, shape[8], strides[4][8]}): operand 0 is y.
  ASSERT_EQ(l[0].params.size(), 3 * 8 + 8 * (2 + 8 + 32));
  EXPECT_EQ(l[0].at<uint64_t>(0), address(a.t));
  EXPECT_EQ(l[0].at<uint64_t>(8), address(b.t));
  EXPECT_EQ(l[0].at<uint64_t>(16), address(y.t));
  const size_t geo = 24;
  EXPECT_EQ(l[0].at<int64_t>(geo), 2);      // rank: b's broadcast keeps two dimensions
  EXPECT_EQ(l[0].at<int64_t>(geo + 8), 6);  // numel
  EXPECT_EQ(l[0].at<int64_t>(geo + 16), 2);
  EXPECT_EQ(l[0].at<int64_t>(geo + 24), 3);
  const size_t strides = geo + 16 + 8 * 8;
  const int64_t expected[3][2] = {{3, 1}, {3, 1}, {0, 1}};  // y, a, b
  for (int k = 0; k < 3; ++k) {
    for (int d = 0; d < 2; ++d) {
      EXPECT_EQ(l[0].at<int64_t>(strides + size_t(k * 8 + d) * 8), expected[k][d]) << k << d;
    }
  }
  // Same shapes merge into one dimension; a comparison writes bool.
  fake().clear_launches();
  const ops_test::Def* lt = find("lt:i64,i64->bool");
  ASSERT_NE(lt, nullptr);
  auto& p = tensor({4, 5}, kI64);
  auto& q = tensor({4, 5}, kI64);
  auto& r = tensor({4, 5}, kBool);
  ASSERT_EQ(call(*lt, {p.t, q.t}, {r.t}), OAR_STATUS_OK) << last_error;
  const auto m = ops_test::launches();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].name, "oar_lt_i64");
  EXPECT_EQ(m[0].at<int64_t>(geo), 1);
  EXPECT_EQ(m[0].at<int64_t>(geo + 16), 20);
}

TEST_F(CudaOperatorTest, CountsAre64BitAndGridsAreCapped) {
  // 4 GiB + 3, then 2 x 4 GiB + 10: the fake reserves address space, never touches it.
  setenv("OAR_CUDA_FAKE_MEMORY", "17179869184", 1);
  start_and_register();
  const ops_test::Def* fill = find("fill:->u8");
  ASSERT_NE(fill, nullptr);
  const int64_t n = (int64_t(1) << 32) + 3;  // past 32 bits
  auto& y = tensor({n}, kU8);
  oar_attr_t value{};
  value.name = "value";
  value.type = OAR_ATTR_TYPE_FLOAT;
  value.value.f = 7;
  ASSERT_EQ(call(*fill, {}, {y.t}, {value}), OAR_STATUS_OK) << last_error;
  auto l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].name, "oar_fill_b8");
  EXPECT_EQ(l[0].grid[0], 65535u);  // a grid-stride loop covers the rest
  // (uint8_t* y, uint8_t value, uint64_t n): value at 8, n aligned at 16.
  ASSERT_EQ(l[0].params.size(), 24u);
  EXPECT_EQ(l[0].at<uint64_t>(0), address(y.t));
  EXPECT_EQ(l[0].at<uint8_t>(8), 7);
  EXPECT_EQ(l[0].at<uint64_t>(16), uint64_t(n));
  // A unary operator over as many f16 elements: (x, y, n).
  fake().clear_launches();
  const ops_test::Def* exp = find("exp:f16->f16");
  ASSERT_NE(exp, nullptr);
  const int64_t half_n = (int64_t(1) << 31) + 5;  // 2^31 + 5 f16 elements: 4 GiB each
  auto& x = tensor({half_n}, kF16);
  auto& z = tensor({half_n}, kF16);
  ASSERT_EQ(call(*exp, {x.t}, {z.t}), OAR_STATUS_OK) << last_error;
  l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].at<uint64_t>(0), address(x.t));
  EXPECT_EQ(l[0].at<uint64_t>(8), address(z.t));
  EXPECT_EQ(l[0].at<uint64_t>(16), uint64_t(half_n));
  EXPECT_EQ(l[0].grid[0], 65535u);
  // Small counts get just enough blocks.
  fake().clear_launches();
  auto& s = tensor({257}, kF16, 4);  // (and byte offsets reach the kernel)
  auto& t = tensor({257}, kF16, 2);
  ASSERT_EQ(call(*exp, {s.t}, {t.t}), OAR_STATUS_OK) << last_error;
  l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].grid[0], 2u);
  EXPECT_EQ(l[0].at<uint64_t>(0), uint64_t(reinterpret_cast<uintptr_t>(s.t.data)) + 4);
  EXPECT_EQ(l[0].at<uint64_t>(8), uint64_t(reinterpret_cast<uintptr_t>(t.t.data)) + 2);
}

TEST_F(CudaOperatorTest, ReductionsSoftmaxLayerNormAndTransposeDescribeTheirShapes) {
  start_and_register();
  // sum over axis 1 of [2, 3, 4], keepdim: one block per output element.
  auto& x = tensor({2, 3, 4}, kF32);
  auto& y = tensor({2, 1, 4}, kF32);
  const int64_t axes[] = {-2};
  oar_attr_t a[2] = {};
  a[0].name = "axes";
  a[0].type = OAR_ATTR_TYPE_INT_ARRAY;
  a[0].value.ints = {axes, 1};
  a[1].name = "keepdim";
  a[1].type = OAR_ATTR_TYPE_BOOL;
  a[1].value.b = true;
  ASSERT_EQ(call(*find("sum:f32->f32"), {x.t}, {y.t}, {a[0], a[1]}), OAR_STATUS_OK) << last_error;
  auto l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].name, "oar_sum_f32");
  EXPECT_EQ(l[0].grid[0], 8u);
  // (x, y, ReduceGeo{outputs, count, kept_rank, kept_shape[8], kept_strides[8],
  // reduced_rank, reduced_shape[8], reduced_strides[8]}).
  ASSERT_EQ(l[0].params.size(), 16u + 8 * (4 + 32));
  const size_t g = 16;
  EXPECT_EQ(l[0].at<int64_t>(g), 8);       // outputs
  EXPECT_EQ(l[0].at<int64_t>(g + 8), 3);   // count
  EXPECT_EQ(l[0].at<int64_t>(g + 16), 2);  // kept rank
  EXPECT_EQ(l[0].at<int64_t>(g + 24), 2);
  EXPECT_EQ(l[0].at<int64_t>(g + 32), 4);
  EXPECT_EQ(l[0].at<int64_t>(g + 88), 12);  // kept strides
  EXPECT_EQ(l[0].at<int64_t>(g + 96), 1);
  EXPECT_EQ(l[0].at<int64_t>(g + 152), 1);  // reduced rank
  EXPECT_EQ(l[0].at<int64_t>(g + 160), 3);
  EXPECT_EQ(l[0].at<int64_t>(g + 224), 4);  // reduced stride
  // max over an empty axis has no value: refused before any launch.
  fake().clear_launches();
  auto& e = tensor({2, 0}, kF32);
  auto& f = tensor({2}, kF32);
  const int64_t last[] = {1};
  a[0].value.ints = {last, 1};
  EXPECT_EQ(call(*find("max:f32->f32"), {e.t}, {f.t}, {a[0]}), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(call(*find("sum:f32->f32"), {e.t}, {f.t}, {a[0]}), OAR_STATUS_OK) << last_error;
  EXPECT_EQ(ops_test::launches().size(), 1u);  // the sum: zeros
  // softmax along axis 1 of [2, 3, 4]: (x, y, outer, axis, inner), a block a row.
  fake().clear_launches();
  oar_attr_t axis{};
  axis.name = "axis";
  axis.type = OAR_ATTR_TYPE_INT;
  axis.value.i = 1;
  auto& s = tensor({2, 3, 4}, kBF16);
  ASSERT_EQ(call(*find("log_softmax:bf16->bf16"), {s.t}, {s.t}, {axis}), OAR_STATUS_OK)
      << last_error;
  l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].name, "oar_log_softmax_bf16");
  EXPECT_EQ(l[0].grid[0], 8u);
  EXPECT_EQ(l[0].at<int64_t>(16), 2);
  EXPECT_EQ(l[0].at<int64_t>(24), 3);
  EXPECT_EQ(l[0].at<int64_t>(32), 4);
  // layer_norm: (x, weight, bias, y, rows, d, float eps).
  fake().clear_launches();
  auto& ln = tensor({5, 7}, kF16);
  auto& w = tensor({7}, kF16);
  auto& bias = tensor({7}, kF16);
  auto& out = tensor({5, 7}, kF16);
  oar_attr_t eps{};
  eps.name = "eps";
  eps.type = OAR_ATTR_TYPE_FLOAT;
  eps.value.f = 0.25;
  ASSERT_EQ(call(*find("layer_norm:f16,f16,f16->f16"), {ln.t, w.t, bias.t}, {out.t}, {eps}),
            OAR_STATUS_OK)
      << last_error;
  l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  ASSERT_EQ(l[0].params.size(), 52u);
  EXPECT_EQ(l[0].at<uint64_t>(8), address(w.t));
  EXPECT_EQ(l[0].at<uint64_t>(16), address(bias.t));
  EXPECT_EQ(l[0].at<int64_t>(32), 5);
  EXPECT_EQ(l[0].at<int64_t>(40), 7);
  EXPECT_EQ(l[0].at<float>(48), 0.25f);
  EXPECT_EQ(l[0].grid[0], 5u);
  // transpose [2, 3] -> [3, 2]: the copy kernel reads x through permuted strides.
  fake().clear_launches();
  auto& t = tensor({2, 3}, kI32);
  auto& u = tensor({3, 2}, kI32);
  const int64_t perm[] = {1, 0};
  oar_attr_t p{};
  p.name = "perm";
  p.type = OAR_ATTR_TYPE_INT_ARRAY;
  p.value.ints = {perm, 2};
  ASSERT_EQ(call(*find("transpose:i32->i32"), {t.t}, {u.t}, {p}), OAR_STATUS_OK) << last_error;
  l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].name, "oar_copy_b32");
  const size_t strides = 16 + 16 + 8 * 8;
  EXPECT_EQ(l[0].at<int64_t>(strides), 2);  // y
  EXPECT_EQ(l[0].at<int64_t>(strides + 8), 1);
  EXPECT_EQ(l[0].at<int64_t>(strides + 64), 1);  // x, permuted
  EXPECT_EQ(l[0].at<int64_t>(strides + 64 + 8), 3);
}

TEST_F(CudaOperatorTest, CopyHonoursAnyInputStrides) {
  start_and_register();
  auto& x = tensor({4, 6}, kF32);
  // Every other column of x, backwards: shape [4, 3], strides [6, -2], from x[0][5].
  std::vector<int64_t> shape = {4, 3}, strides = {6, -2};
  DLTensor view = x.t;
  view.shape = shape.data();
  view.strides = strides.data();
  view.byte_offset = 5 * 4;
  auto& y = tensor({4, 3}, kF32);
  ASSERT_EQ(call(*find("copy:f32->f32"), {view}, {y.t}), OAR_STATUS_OK) << last_error;
  const auto l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].name, "oar_copy_b32");
  EXPECT_EQ(l[0].at<uint64_t>(0), address(view));
  const size_t strides_at = 16 + 16 + 8 * 8;
  EXPECT_EQ(l[0].at<int64_t>(strides_at + 64), 6);
  EXPECT_EQ(l[0].at<int64_t>(strides_at + 64 + 8), -2);
  // A view reaching past its allocation is refused before any launch.
  fake().clear_launches();
  strides = {8, 1};  // element 3 * 8 + 2 is past x's 24
  view.byte_offset = 0;
  EXPECT_NE(call(*find("copy:f32->f32"), {view}, {y.t}), OAR_STATUS_OK);
  EXPECT_EQ(ops_test::launches().size(), 0u);
}

TEST_F(CudaOperatorTest, BadCallsFailBeforeLaunchingAndFaultsFailTheStream) {
  setenv("OAR_CUDA_FAKE_FAULT_KERNEL", "oar_mul_f32", 1);
  setenv("OAR_CUDA_FAKE_DEVICES", "2", 1);
  start_and_register();
  const ops_test::Def* mul = find("mul:f32,f32->f32");
  ASSERT_NE(mul, nullptr);
  auto& a = tensor({8}, kF32);
  auto& y = tensor({8}, kF32);
  // Memory of another device, an output past its allocation, an unknown
  // gelu mode: refused, nothing launched.
  oar_device_t other = open(1);
  oar_memory_t foreign = allocate(other, 64);
  DLTensor f = a.t;
  f.data = foreign;
  EXPECT_EQ(call(*mul, {a.t, f}, {y.t}), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error.find("not memory of the call's device"), std::string::npos) << last_error;
  DLTensor past = y.t;
  past.byte_offset = 8;
  EXPECT_NE(call(*mul, {a.t, a.t}, {past}), OAR_STATUS_OK);
  oar_attr_t mode{};
  mode.name = "approximate";
  mode.type = OAR_ATTR_TYPE_STRING;
  mode.value.s = "fast";
  EXPECT_EQ(call(*find("gelu:f32->f32"), {a.t}, {y.t}, {mode}), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops_test::launches().size(), 0u);
  EXPECT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_OK) << last_error;
  // A kernel that faults on the device: the call returned OK (the launch
  // was accepted), the stream fails with the CUresult's name, and a later
  // call on the failed stream fails at once.
  ASSERT_EQ(call(*mul, {a.t, a.t}, {y.t}), OAR_STATUS_OK) << last_error;
  EXPECT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_ABORTED);
  EXPECT_NE(last_error.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << last_error;
  EXPECT_EQ(call(*find("add:f32,f32->f32"), {a.t, a.t}, {y.t}), OAR_STATUS_ABORTED);
  EXPECT_EQ(ops_test::launches().size(), 1u);
  EXPECT_EQ(api()->device_close(other), OAR_STATUS_OK);
}

// matmul through the fake cuBLAS: row-major y = a * b as column-major
// y^T = b^T * a^T (b first), leading dimensions the stored row lengths,
// a broadcast batch operand with stride 0; no kernel launched.
struct FakeCublas {
  FakeCublas() {
    void* library = dlopen(OAR_CUDA_FAKE_CUBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
    log = reinterpret_cast<const char* (*)()>(dlsym(library, "oar_cuda_fake_cublas_log"));
    clear = reinterpret_cast<void (*)()>(dlsym(library, "oar_cuda_fake_cublas_clear"));
  }
  const char* (*log)() = nullptr;
  void (*clear)() = nullptr;
};
FakeCublas& cublas() {
  static FakeCublas f;
  return f;
}

std::string pointer(const DLTensor& t) {
  char text[32];
  std::snprintf(text, sizeof text, "%p",
                reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(t.data) + t.byte_offset));
  return text;
}

oar_attr_t bool_attr(const char* name, bool value) {
  oar_attr_t a{};
  a.name = name;
  a.type = OAR_ATTR_TYPE_BOOL;
  a.value.b = value;
  return a;
}

TEST_F(CudaOperatorTest, MatmulCallsCublasWithTheRowMajorMapping) {
  ASSERT_NE(cublas().log, nullptr);
  cublas().clear();
  start_and_register();
  auto& a = tensor({2, 3, 4}, kF16, 2);
  auto& b = tensor({4, 5}, kF16);
  auto& y = tensor({2, 3, 5}, kF16);
  ASSERT_EQ(call(*find("matmul:f16,f16->f16"), {a.t, b.t}, {y.t}), OAR_STATUS_OK) << last_error;
  std::string log = cublas().log();
  EXPECT_EQ(log.substr(0, log.find(" stream=")),
            "create\ngemm NN m=5 n=3 k=4 A=" + pointer(b.t) + " lda=5 sA=0 B=" + pointer(a.t) +
                " ldb=4 sB=12 C=" + pointer(y.t) +
                " ldc=5 sC=15 batch=2 types=2,2,2 compute=68 alpha=1.000000 beta=0.000000");
  EXPECT_EQ(log.find("stream=(nil)"), std::string::npos) << log;  // the call's stream
  // Both transposed, bf16: a stored [K, M] = [4, 3], b stored [N, K] = [5, 4].
  cublas().clear();
  auto& at = tensor({4, 3}, kBF16);
  auto& bt = tensor({5, 4}, kBF16);
  auto& yt = tensor({3, 5}, kBF16);
  ASSERT_EQ(call(*find("matmul:bf16,bf16->bf16"), {at.t, bt.t}, {yt.t},
                 {bool_attr("transpose_a", true), bool_attr("transpose_b", true)}),
            OAR_STATUS_OK)
      << last_error;
  log = cublas().log();
  EXPECT_EQ(log.substr(0, log.find(" stream=")),
            "gemm TT m=5 n=3 k=4 A=" + pointer(bt.t) + " lda=4 sA=0 B=" + pointer(at.t) +
                " ldb=3 sB=0 C=" + pointer(yt.t) +
                " ldc=5 sC=0 batch=1 types=14,14,14 compute=68 alpha=1.000000 beta=0.000000");
  EXPECT_EQ(ops_test::launches().size(), 0u);
  // Batch dimensions that do not merge into one stride: OAR's kernel.
  cublas().clear();
  auto& p = tensor({2, 1, 3, 4}, kF32);
  auto& q = tensor({1, 2, 4, 5}, kF32);
  auto& r = tensor({2, 2, 3, 5}, kF32);
  ASSERT_EQ(call(*find("matmul:f32,f32->f32"), {p.t, q.t}, {r.t}), OAR_STATUS_OK) << last_error;
  EXPECT_EQ(std::string(cublas().log()), "");
  const auto l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].name, "oar_matmul_f32");
  EXPECT_EQ(l[0].grid[0], 4u);                    // 4 batches x 1 x 1 tiles
  EXPECT_EQ(l[0].at<int64_t>(24), 2);             // batch rank
  EXPECT_EQ(l[0].at<int64_t>(24 + 80 + 64), 12);  // a's batch strides: 12, 0
  EXPECT_EQ(l[0].at<int64_t>(24 + 80 + 72), 0);
  EXPECT_EQ(l[0].at<int64_t>(24 + 80 + 128), 0);  // b's: 0, 20
  EXPECT_EQ(l[0].at<int64_t>(24 + 80 + 136), 20);
  // K = 0: zeros, written by OAR's kernel (cuBLAS refuses a leading dimension of 0).
  fake().clear_launches();
  auto& e = tensor({3, 0}, kF16);
  auto& f = tensor({0, 5}, kF16);
  auto& z = tensor({3, 5}, kF16);
  ASSERT_EQ(call(*find("matmul:f16,f16->f16"), {e.t, f.t}, {z.t}), OAR_STATUS_OK) << last_error;
  EXPECT_EQ(std::string(cublas().log()), "");
  ASSERT_EQ(ops_test::launches().size(), 1u);
  EXPECT_EQ(ops_test::launches()[0].name, "oar_matmul_f16");
  // A failure of cuBLAS fails the call, naming it.
  setenv("OAR_CUDA_FAKE_CUBLAS_STATUS", "13", 1);
  EXPECT_EQ(call(*find("matmul:f16,f16->f16"), {a.t, b.t}, {y.t}), OAR_STATUS_INTERNAL);
  EXPECT_NE(last_error.find("cublasGemmStridedBatchedEx failed: cuBLAS status 13"),
            std::string::npos)
      << last_error;
  unsetenv("OAR_CUDA_FAKE_CUBLAS_STATUS");
  // The handle goes with the device, before its context.
  cublas().clear();
  ASSERT_EQ(api()->device_close(device_), OAR_STATUS_OK) << last_error;
  EXPECT_EQ(std::string(cublas().log()), "destroy\n");
}

TEST_F(CudaOperatorTest, MatmulWithoutCublasRunsOarsKernel) {
  setenv("OAR_CUDA_CUBLAS", "/nonexistent/libcublas.so.13", 1);
  start_and_register();
  auto& a = tensor({4, 3}, kF16);  // transposed: M = 3, K = 4
  auto& b = tensor({4, 37}, kF16);
  auto& y = tensor({3, 37}, kF16);
  ASSERT_EQ(call(*find("matmul:f16,f16->f16"), {a.t, b.t}, {y.t}, {bool_attr("transpose_a", true)}),
            OAR_STATUS_OK)
      << last_error;
  EXPECT_NE(all_logs().find("cuda: cuBLAS not found (/nonexistent/libcublas.so.13"),
            std::string::npos)
      << all_logs();
  const auto l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].name, "oar_matmul_f16");
  EXPECT_EQ(l[0].grid[0], 3u);  // 1 x 3 tiles of 16 x 16
  // (a, b, y, Geo, m, n, k, a_sm, a_sk, b_sk, b_sn)
  ASSERT_EQ(l[0].params.size(), 24u + 336 + 7 * 8);
  EXPECT_EQ(l[0].at<uint64_t>(0), address(a.t));
  EXPECT_EQ(l[0].at<int64_t>(24), 0);  // no batch
  EXPECT_EQ(l[0].at<int64_t>(32), 1);
  const size_t at = 24 + 336;
  const int64_t expected[7] = {3, 37, 4, 1, 3, 37, 1};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(l[0].at<int64_t>(at + 8 * size_t(i)), expected[i]) << i;
}

// --- collectives through the fake NCCL ---------------------------------------------

struct FakeNccl {
  FakeNccl() {
    void* library = dlopen(OAR_CUDA_FAKE_NCCL_PATH, RTLD_NOW | RTLD_LOCAL);
    log = reinterpret_cast<const char* (*)()>(dlsym(library, "oar_cuda_fake_nccl_log"));
    clear = reinterpret_cast<void (*)()>(dlsym(library, "oar_cuda_fake_nccl_clear"));
  }
  const char* (*log)() = nullptr;
  void (*clear)() = nullptr;
};
FakeNccl& nccl() {
  static FakeNccl f;
  return f;
}

std::string at(oar_memory_t m, uint64_t offset) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", static_cast<void*>(reinterpret_cast<char*>(m) + offset));
  return text;
}

TEST_F(CudaPluginTest, CollectivesAreListedOnlyWithNccl) {
  setenv("OAR_CUDA_NCCL", "none", 1);
  start();
  oar_device_properties_t p{};
  p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
  ASSERT_EQ(api()->device_properties(0, &p), OAR_STATUS_OK) << last_error;
  EXPECT_EQ(p.features & OAR_DEVICE_FEATURE_COLLECTIVES, 0u);
  size_t size = 0;
  EXPECT_EQ(api()->comm_unique_id_size(&size), OAR_STATUS_UNIMPLEMENTED);
  EXPECT_NE(last_error.find("OAR_CUDA_NCCL=none"), std::string::npos) << last_error;
  finalize();
  setenv("OAR_CUDA_NCCL", OAR_CUDA_FAKE_NCCL_PATH, 1);
  start();
  ASSERT_EQ(api()->device_properties(0, &p), OAR_STATUS_OK) << last_error;
  EXPECT_NE(p.features & OAR_DEVICE_FEATURE_COLLECTIVES, 0u);
}

// Each slot becomes its NCCL call on the stream, with the buffers' offsets,
// NCCL's dtype and op; all_to_all is one group of sends and receives.
TEST_F(CudaPluginTest, CollectiveSlotsMapOntoNccl) {
  ASSERT_NE(nccl().log, nullptr);
  nccl().clear();
  start();
  oar_device_t device = open();
  oar_stream_t s = stream(device);
  size_t size = 0;
  ASSERT_EQ(api()->comm_unique_id_size(&size), OAR_STATUS_OK);
  ASSERT_EQ(size, 128u);
  std::vector<char> id(size);
  ASSERT_EQ(api()->comm_get_unique_id(id.data(), size), OAR_STATUS_OK) << last_error;
  oar_comm_t comm = nullptr;
  EXPECT_EQ(api()->comm_create(device, 2, 2, id.data(), size, &comm), OAR_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(api()->comm_create(device, 2, 1, id.data(), size, &comm), OAR_STATUS_OK) << last_error;
  oar_memory_t a = allocate(device, 256), b = allocate(device, 256);
  const DLDataType f16{kDLFloat, 16, 1}, i16{kDLInt, 16, 1}, boolean{OAR_DTYPE_CODE_BOOL, 8, 1};
  nccl().clear();
  ASSERT_EQ(api()->comm_all_reduce(comm, s, a, 8, b, 16, 10, f16, OAR_REDUCE_OP_AVG), OAR_STATUS_OK)
      << last_error;
  ASSERT_EQ(api()->comm_broadcast(comm, s, a, 0, b, 0, 4, boolean, 0), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->comm_reduce(comm, s, a, 0, b, 0, 4, f16, OAR_REDUCE_OP_MAX, 1), OAR_STATUS_OK)
      << last_error;
  ASSERT_EQ(api()->comm_all_gather(comm, s, a, 0, b, 0, 64, f16), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->comm_all_to_all(comm, s, a, 0, b, 0, 32, f16), OAR_STATUS_OK) << last_error;
  EXPECT_EQ(std::string(nccl().log()),
            "AllReduce send=" + at(a, 8) + " recv=" + at(b, 16) +
                " count=10 type=6 stream=set op=4\n"
                "Broadcast send=(nil) recv=" +
                at(b, 0) +
                " count=4 type=1 stream=set root=0\n"  // rank 1 sends nothing
                "Reduce send=" +
                at(a, 0) + " recv=" + at(b, 0) +
                " count=4 type=6 stream=set op=2 root=1\n"
                "AllGather send=" +
                at(a, 0) + " recv=" + at(b, 0) +
                " count=64 type=6 stream=set\n"
                "GroupStart\nSend buf=" +
                at(a, 0) + " count=32 type=6 stream=set peer=0\nRecv buf=" + at(b, 0) +
                " count=32 type=6 stream=set peer=0\nSend buf=" + at(a, 64) +
                " count=32 type=6 stream=set peer=1\nRecv buf=" + at(b, 64) +
                " count=32 type=6 stream=set peer=1\nGroupEnd\n");
  // Refused before NCCL sees them: a dtype NCCL lacks, a reduction of bool,
  // a gather past the receive buffer (2 ranks x 65 f16 > 256 bytes), a bad root.
  nccl().clear();
  EXPECT_EQ(api()->comm_all_reduce(comm, s, a, 0, b, 0, 4, i16, OAR_REDUCE_OP_SUM),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(api()->comm_all_reduce(comm, s, a, 0, b, 0, 4, boolean, OAR_REDUCE_OP_SUM),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(api()->comm_all_gather(comm, s, a, 0, b, 0, 65, f16), OAR_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(api()->comm_broadcast(comm, s, a, 0, b, 0, 4, f16, 2), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(api()->comm_all_reduce(comm, s, a, 0, b, 0, 4, f16, 9), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(nccl().log()), "");
  // NCCL's failures keep their meaning.
  setenv("OAR_CUDA_FAKE_NCCL_RESULT", "6", 1);  // ncclRemoteError
  EXPECT_EQ(api()->comm_send(comm, s, a, 0, 4, f16, 0), OAR_STATUS_UNAVAILABLE);
  EXPECT_NE(last_error.find("ncclSend failed: fake NCCL error 6"), std::string::npos) << last_error;
  unsetenv("OAR_CUDA_FAKE_NCCL_RESULT");
  // Abort, then destroy: NCCL's abort frees the communicator, so destroy only forgets it.
  nccl().clear();
  ASSERT_EQ(api()->comm_abort(comm), OAR_STATUS_OK);
  EXPECT_EQ(api()->comm_recv(comm, s, b, 0, 4, f16, 0), OAR_STATUS_ABORTED);
  ASSERT_EQ(api()->comm_destroy(comm), OAR_STATUS_OK);
  EXPECT_EQ(std::string(nccl().log()), "CommAbort\n");
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
}

// A collective whose peer died never completes (the fake driver's STALL keeps
// the work behind it queued): waiting for its stream, or for an event after
// it, must not block in the driver but return UNAVAILABLE once NCCL reports
// the asynchronous error; the communicator is aborted (its later calls say
// ABORTED with NCCL's error) and the stream stays failed.
TEST_F(CudaPluginTest, NcclAsynchronousErrorsFailTheWaitInsteadOfHanging) {
  start();
  oar_device_t device = open();
  oar_stream_t s = stream(device);
  size_t size = 0;
  ASSERT_EQ(api()->comm_unique_id_size(&size), OAR_STATUS_OK);
  std::vector<char> id(size);
  ASSERT_EQ(api()->comm_get_unique_id(id.data(), size), OAR_STATUS_OK) << last_error;
  oar_comm_t comm = nullptr;
  ASSERT_EQ(api()->comm_create(device, 2, 1, id.data(), size, &comm), OAR_STATUS_OK) << last_error;
  oar_memory_t a = allocate(device, 256), b = allocate(device, 256);
  const DLDataType f32{kDLFloat, 32, 1};
  // Healthy: the wait watches NCCL while the stream is busy, then succeeds.
  ASSERT_EQ(api()->comm_all_reduce(comm, s, a, 0, b, 0, 16, f32, OAR_REDUCE_OP_SUM), OAR_STATUS_OK)
      << last_error;
  ASSERT_EQ(api()->memory_fill(s, b, 0, 1, 64), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->stream_synchronize(s), OAR_STATUS_OK) << last_error;
  // The peer dies: the collective and the work after it never finish.
  ASSERT_EQ(api()->comm_all_reduce(comm, s, a, 0, b, 0, 16, f32, OAR_REDUCE_OP_SUM), OAR_STATUS_OK)
      << last_error;
  ASSERT_EQ(api()->memory_fill(s, b, 0, 2, 64), OAR_STATUS_OK) << last_error;
  oar_event_t e = nullptr;
  ASSERT_EQ(api()->event_create(device, 0, &e), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->event_record(e, s), OAR_STATUS_OK) << last_error;
  setenv("OAR_CUDA_FAKE_STALL", "1", 1);
  bool idle = true;
  ASSERT_EQ(api()->stream_query(s, &idle), OAR_STATUS_OK) << last_error;
  EXPECT_FALSE(idle);                                // busy, and NCCL has not noticed yet
  setenv("OAR_CUDA_FAKE_NCCL_ASYNC_ERROR", "6", 1);  // ncclRemoteError
  nccl().clear();
  EXPECT_EQ(api()->event_synchronize(e), OAR_STATUS_UNAVAILABLE);
  EXPECT_NE(last_error.find("NCCL communicator (rank 1 of 2) failed: fake NCCL error 6"),
            std::string::npos)
      << last_error;
  EXPECT_EQ(std::string(nccl().log()), "CommAbort\n");
  EXPECT_EQ(api()->stream_synchronize(s), OAR_STATUS_UNAVAILABLE);
  EXPECT_NE(last_error.find("ncclCommGetAsyncError"), std::string::npos) << last_error;
  EXPECT_EQ(api()->comm_all_reduce(comm, s, a, 0, b, 0, 16, f32, OAR_REDUCE_OP_SUM),
            OAR_STATUS_ABORTED);
  EXPECT_NE(last_error.find("fake NCCL error 6"), std::string::npos) << last_error;
  EXPECT_EQ(std::string(fake_log()).find("stalled wait"), std::string::npos) << fake_log();
  unsetenv("OAR_CUDA_FAKE_STALL");
  unsetenv("OAR_CUDA_FAKE_NCCL_ASYNC_ERROR");
  // The stream stays failed; destroy only forgets the aborted communicator.
  EXPECT_EQ(api()->stream_synchronize(s), OAR_STATUS_UNAVAILABLE);
  nccl().clear();
  ASSERT_EQ(api()->comm_destroy(comm), OAR_STATUS_OK);
  EXPECT_EQ(std::string(nccl().log()), "");
  EXPECT_EQ(api()->event_destroy(e), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(device), OAR_STATUS_OK);
}

// --- peer copies ---------------------------------------------------------------------

// The fake's copies move host memory, so the bytes arriving are checked.
TEST_F(CudaPluginTest, PeerCopiesEnablePeerAccessOnceAndMoveTheBytes) {
  setenv("OAR_CUDA_FAKE_DEVICES", "2", 1);
  start();
  oar_device_properties_t p{};
  p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
  ASSERT_EQ(api()->device_properties(0, &p), OAR_STATUS_OK) << last_error;
  EXPECT_NE(p.features & OAR_DEVICE_FEATURE_PEER_ACCESS, 0u);
  oar_device_t d0 = open(0), d1 = open(1);
  oar_stream_t s1 = stream(d1);
  oar_memory_t src = allocate(d0, 64), dst = allocate(d1, 64);
  std::vector<uint8_t> in(64), out(64, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 3 + 1);
  oar_stream_t s0 = stream(d0);
  ASSERT_EQ(api()->memory_copy_h2d(s0, src, 0, in.data(), 64), OAR_STATUS_OK);
  ASSERT_EQ(api()->stream_synchronize(s0), OAR_STATUS_OK);
  ASSERT_EQ(api()->memory_copy_peer(s1, dst, 8, d0, src, 16, 32), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->memory_copy_peer(s1, dst, 0, d0, src, 0, 8), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->memory_copy_d2h(s1, out.data(), dst, 0, 64), OAR_STATUS_OK);
  ASSERT_EQ(api()->stream_synchronize(s1), OAR_STATUS_OK) << last_error;
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(out[i], in[i]) << i;
  for (size_t i = 0; i < 32; ++i) EXPECT_EQ(out[8 + i], in[16 + i]) << i;
  const std::string log = fake().log();
  EXPECT_NE(log.find("cuCtxEnablePeerAccess(1->0)"), std::string::npos) << log;
  EXPECT_EQ(log.find("cuCtxEnablePeerAccess(1->0)"), log.rfind("cuCtxEnablePeerAccess"))
      << "enabled once: " << log;
  // Wrong devices and ranges are refused.
  EXPECT_EQ(api()->memory_copy_peer(s1, dst, 0, d1, src, 0, 8), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(api()->memory_copy_peer(s1, src, 0, d0, src, 0, 8), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(api()->memory_copy_peer(s1, dst, 60, d0, src, 0, 8), OAR_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(api()->device_close(d0), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(d1), OAR_STATUS_OK);
}

TEST_F(CudaPluginTest, PeerCopiesWithoutDirectAccessAreStagedByTheDriver) {
  setenv("OAR_CUDA_FAKE_DEVICES", "2", 1);
  setenv("OAR_CUDA_FAKE_PEER", "0", 1);
  start();
  oar_device_t d0 = open(0), d1 = open(1);
  oar_stream_t s0 = stream(d0);
  oar_memory_t a = allocate(d0, 16), b = allocate(d1, 16);
  ASSERT_EQ(api()->memory_copy_peer(s0, a, 0, d1, b, 0, 16), OAR_STATUS_OK) << last_error;
  ASSERT_EQ(api()->stream_synchronize(s0), OAR_STATUS_OK) << last_error;
  EXPECT_EQ(std::string(fake().log()).find("cuCtxEnablePeerAccess"), std::string::npos);
  EXPECT_EQ(api()->device_close(d0), OAR_STATUS_OK);
  EXPECT_EQ(api()->device_close(d1), OAR_STATUS_OK);
}

// --- index errors ------------------------------------------------------------------

// An index kernel records a bad index in the stream's error word; the fake
// runs no kernel, so the test writes the word (the fake's device memory is
// host memory) where the launch's parameters say it is.
TEST_F(CudaOperatorTest, AnIndexOutOfRangeFailsTheStreamWithOutOfRange) {
  start_and_register();
  auto& x = tensor({4, 3}, kF32);
  auto& index = tensor({2}, kI64);
  auto& y = tensor({2, 3}, kF32);
  const ops_test::Def* select = find("index_select:f32,i64->f32");
  ASSERT_NE(select, nullptr);
  ASSERT_EQ(call(*select, {x.t, index.t}, {y.t}), OAR_STATUS_OK) << last_error;
  auto l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].name, "oar_index_select_b32_i64");
  // (x, index, y, error, outer, extent, inner, m)
  ASSERT_EQ(l[0].params.size(), 64u);
  const uint64_t word = l[0].at<uint64_t>(24);
  EXPECT_NE(word, 0u);
  EXPECT_EQ(l[0].at<int64_t>(32), 1);
  EXPECT_EQ(l[0].at<int64_t>(40), 4);
  EXPECT_EQ(l[0].at<int64_t>(48), 3);
  EXPECT_EQ(l[0].at<int64_t>(56), 2);
  EXPECT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_OK) << last_error;  // word still 0
  // gather along axis 1, then its kernel "finds" index 7 of extent 3.
  fake().clear_launches();
  auto& g = tensor({4, 2}, kI32);
  auto& out = tensor({4, 2}, kF32);
  oar_attr_t axis{};
  axis.name = "axis";
  axis.type = OAR_ATTR_TYPE_INT;
  axis.value.i = 1;
  ASSERT_EQ(call(*find("gather:f32,i32->f32"), {x.t, g.t}, {out.t}, {axis}), OAR_STATUS_OK)
      << last_error;
  l = ops_test::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].name, "oar_gather_b32_i32");
  EXPECT_EQ(l[0].at<uint64_t>(24), word);  // one word per stream
  // (x, index, y, error, Geo{rank 2, numel 8, shape [4, 2], x's strides [3, 1]}, axis, extent)
  EXPECT_EQ(l[0].at<int64_t>(32), 2);
  EXPECT_EQ(l[0].at<int64_t>(40), 8);
  EXPECT_EQ(l[0].at<int64_t>(32 + 16 + 64), 3);
  EXPECT_EQ(l[0].at<int64_t>(32 + 336), 1);
  EXPECT_EQ(l[0].at<int64_t>(32 + 344), 3);
  struct {
    uint32_t flag;
    int32_t op;
    int64_t index, bound;
  } bad{1, 2, 7, 3};
  std::memcpy(reinterpret_cast<void*>(uintptr_t(word)), &bad, sizeof bad);
  EXPECT_EQ(api()->stream_synchronize(stream_), OAR_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(last_error, "gather: index 7 out of range [0, 3)");
  bool idle = false;
  EXPECT_EQ(api()->stream_query(stream_, &idle), OAR_STATUS_OUT_OF_RANGE);
  // The word goes with its stream.
  EXPECT_EQ(api()->stream_destroy(stream_), OAR_STATUS_OK);
  stream_ = nullptr;
}

}  // namespace
