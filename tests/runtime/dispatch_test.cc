// Operator dispatch end to end on the cpu plugin's kernels, and the errors a
// framework gets when it asks for something that is not there.
#include <cmath>
#include <random>

#include "core/loader/plugin.h"
#include "cpu_fixture.h"

namespace oar::testing {
namespace {

using DispatchTest = CpuTest;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
  std::vector<float> values(n);
  for (float& v : values) v = dist(rng);
  return values;
}

Tensor upload(Device& device, const std::vector<float>& values, std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(device, std::move(shape), dtype::f32);
  t.copy_from_host(device.default_stream(), values.data());
  return t;
}

std::vector<float> download(Device& device, const Tensor& t) {
  std::vector<float> values(size_t(t.numel()));
  t.copy_to_host(device.default_stream(), values.data());
  device.default_stream().synchronize();
  return values;
}

TEST_F(DispatchTest, AddMatchesAPlainLoop) {
  const size_t n = 1031;
  std::vector<float> x = random_floats(n, 1), y = random_floats(n, 2);
  Tensor a = upload(device(), x, {1031});
  Tensor b = upload(device(), y, {1031});
  Tensor out = Tensor::empty(device(), {1031}, dtype::f32);
  dispatch(device().default_stream(), OpId("add"), {&a, &b}, {&out});
  std::vector<float> result = download(device(), out);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(result[i], x[i] + y[i]) << "element " << i;
}

TEST_F(DispatchTest, MulAndReluChainOnOneStream) {
  const size_t n = 257;
  std::vector<float> x = random_floats(n, 3), y = random_floats(n, 4);
  Tensor a = upload(device(), x, {257});
  Tensor b = upload(device(), y, {257});
  Tensor product = Tensor::empty(device(), {257}, dtype::f32);
  Tensor out = Tensor::empty(device(), {257}, dtype::f32);
  Stream& stream = device().default_stream();
  dispatch(stream, OpId("mul"), {&a, &b}, {&product});
  dispatch(stream, OpId("relu"), {&product}, {&out});
  std::vector<float> result = download(device(), out);
  for (size_t i = 0; i < n; ++i) {
    float expected = x[i] * y[i];
    ASSERT_EQ(result[i], expected > 0 ? expected : 0.0f) << "element " << i;
  }
}

TEST_F(DispatchTest, IntegerAddUsesTheI32Kernel) {
  std::vector<int32_t> x = {1, -2, 300000, 7}, y = {10, 20, -300000, 2147483640};
  Tensor a = Tensor::empty(device(), {4}, dtype::i32);
  Tensor b = Tensor::empty(device(), {4}, dtype::i32);
  Tensor out = Tensor::empty(device(), {4}, dtype::i32);
  Stream& stream = device().default_stream();
  a.copy_from_host(stream, x.data());
  b.copy_from_host(stream, y.data());
  dispatch(stream, OpId("add"), {&a, &b}, {&out});
  std::vector<int32_t> result(4);
  out.copy_to_host(stream, result.data());
  stream.synchronize();
  EXPECT_EQ(result, (std::vector<int32_t>{11, 18, 0, 2147483647}));
}

oar_status_t custom_kernel(const oar_kernel_call_t*) { return OAR_STATUS_OK; }

TEST_F(DispatchTest, MissingKernelNamesOperatorDtypesDeviceAndWhatExists) {
  // A framework's own operator, outside the schema, registered for f32 only.
  const DLDataType f32_only[] = {dtype::f32, dtype::f32};
  oar_kernel_def_t def{};
  def.struct_size = OAR_KERNEL_DEF_STRUCT_SIZE;
  def.op_name = "test.custom";
  def.dtypes = f32_only;
  def.num_inputs = 1;
  def.num_outputs = 1;
  def.fn = &custom_kernel;
  ASSERT_TRUE(device().plugin().kernels().add(def).ok());
  Tensor a = Tensor::empty(device(), {4}, dtype::i64);
  std::string message = error_of(OAR_STATUS_UNIMPLEMENTED, [&] {
    dispatch(device().default_stream(), OpId("test.custom"), {&a}, {&a});
  });
  for (const char* part : {"test.custom", "(i64) -> (i64)", "cpu:0", "(f32) -> (f32)"}) {
    EXPECT_NE(message.find(part), std::string::npos) << "missing '" << part << "' in " << message;
  }
}

TEST_F(DispatchTest, SchemaRefusesMixedDtypesWithItsReason) {
  Tensor a = Tensor::empty(device(), {4}, dtype::f32);
  Tensor b = Tensor::empty(device(), {4}, dtype::i32);
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    dispatch(device().default_stream(), OpId("add"), {&a, &b}, {&a});
  });
  EXPECT_NE(message.find("add: every tensor must be f32"), std::string::npos) << message;
}

TEST_F(DispatchTest, SchemaRefusesAWrongOutputShape) {
  Tensor a = Tensor::empty(device(), {2, 3}, dtype::f32);
  Tensor out = Tensor::empty(device(), {3, 2}, dtype::f32);
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    dispatch(device().default_stream(), OpId("relu"), {&a}, {&out});
  });
  EXPECT_NE(message.find("must have shape [2, 3]"), std::string::npos) << message;
}

TEST_F(DispatchTest, SchemaRefusesAnUnknownAttribute) {
  Tensor a = Tensor::empty(device(), {2, 3}, dtype::f32);
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    dispatch(device().default_stream(), OpId("softmax"), {&a}, {&a}, {Attr("dim", 1)});
  });
  EXPECT_NE(message.find("unknown attribute dim (valid: axis)"), std::string::npos) << message;
}

TEST_F(DispatchTest, UnknownOperatorSaysNoKernelExists) {
  Tensor a = Tensor::empty(device(), {4}, dtype::f32);
  std::string message = error_of(OAR_STATUS_UNIMPLEMENTED, [&] {
    dispatch(device().default_stream(), OpId("no_such_op"), {&a}, {&a});
  });
  EXPECT_NE(message.find("registers no kernel"), std::string::npos) << message;
}

TEST_F(DispatchTest, ShapesThatDoNotBroadcastAreRefused) {
  Tensor a = Tensor::empty(device(), {4}, dtype::f32);
  Tensor b = Tensor::empty(device(), {5}, dtype::f32);
  Tensor out = Tensor::empty(device(), {4}, dtype::f32);
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    dispatch(device().default_stream(), OpId("add"), {&a, &b}, {&out});
  });
}

TEST_F(DispatchTest, NonContiguousInputIsMadeContiguousForTheKernel) {
  std::vector<float> x = random_floats(12, 9);
  Tensor a = upload(device(), x, {3, 4});
  Tensor t = a.transpose(0, 1);  // [4, 3], strides [1, 4]
  Tensor out = Tensor::empty(device(), {4, 3}, dtype::f32);
  ASSERT_FALSE(t.is_contiguous());
  dispatch(device().default_stream(), OpId("relu"), {&t}, {&out});
  std::vector<float> result = download(device(), out);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(result[size_t(i * 3 + j)], std::max(x[size_t(j * 4 + i)], 0.0f)) << i << "," << j;
    }
  }
}

TEST_F(DispatchTest, NonContiguousOutputIsRefused) {
  Tensor a = Tensor::empty(device(), {4, 3}, dtype::f32);
  Tensor out = Tensor::empty(device(), {3, 4}, dtype::f32).transpose(0, 1);
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    dispatch(device().default_stream(), OpId("relu"), {&a}, {&out});
  });
  EXPECT_NE(message.find("not contiguous"), std::string::npos) << message;
}

TEST_F(DispatchTest, TensorOfAnotherDeviceIsRefused) {
  Tensor a = Tensor::empty(device(), {4}, dtype::f32);
  DLTensor input = a.dl();
  input.device.device_id = 5;
  DLTensor output = a.dl();
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    dispatch(device().default_stream(), OpId("relu"), &input, 1, &output, 1);
  });
  EXPECT_NE(message.find("not on cpu:0"), std::string::npos) << message;
}

TEST_F(DispatchTest, NullStridesMeanRowMajor) {
  std::vector<float> x = random_floats(6, 5);
  Tensor a = upload(device(), x, {2, 3});
  Tensor out = Tensor::empty(device(), {2, 3}, dtype::f32);
  DLTensor input = a.dl();
  DLTensor output = out.dl();
  input.strides = nullptr;
  output.strides = nullptr;
  dispatch(device().default_stream(), OpId("relu"), &input, 1, &output, 1);
  std::vector<float> result = download(device(), out);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(result[i], std::max(x[i], 0.0f));
}

TEST_F(DispatchTest, WrongArityIsRefusedByTheSchema) {
  Tensor a = Tensor::empty(device(), {4}, dtype::f32);
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    dispatch(device().default_stream(), OpId("add"), {&a}, {&a});
  });
  EXPECT_NE(message.find("takes 2 inputs, got 1"), std::string::npos) << message;
}

}  // namespace
}  // namespace oar::testing
