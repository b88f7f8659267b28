// The typed operator helpers frameworks call: outputs allocated from the
// schema's shape and dtype rules, results checked against plain loops.
#include "oar/ops.hpp"

#include <cmath>

#include "core/loader/plugin.h"
#include "cpu_fixture.h"

namespace oar::testing {
namespace {

using OpsTest = CpuTest;

Tensor from(Device& device, const std::vector<float>& values, std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(device, std::move(shape), dtype::f32);
  t.copy_from_host(device.default_stream(), values.data());
  device.default_stream().synchronize();
  return t;
}

std::vector<float> values_of(Device& device, const Tensor& t) {
  std::vector<float> values(size_t(t.numel()));
  t.copy_to_host(device.default_stream(), values.data());
  device.default_stream().synchronize();
  return values;
}

TEST_F(OpsTest, AddBroadcastsAndAllocatesTheOutput) {
  Tensor a = from(device(), {1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = from(device(), {10, 20, 30}, {3});
  Tensor y = ops::add(device().default_stream(), a, b);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of(device(), y), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST_F(OpsTest, MatmulWithTransposedOperandMatchesALoop) {
  // a [2, 3]; b given as [2, 3] and used transposed: y = a b^T, [2, 2].
  Tensor a = from(device(), {1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = from(device(), {1, 0, -1, 2, 1, 0}, {2, 3});
  Tensor y = ops::matmul(device().default_stream(), a, b, false, true);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values_of(device(), y), (std::vector<float>{-2, 4, -2, 13}));
}

TEST_F(OpsTest, SoftmaxRowsSumToOne) {
  Tensor x = from(device(), {1, 2, 3, -1, 0, 1}, {2, 3});
  std::vector<float> y = values_of(device(), ops::softmax(device().default_stream(), x));
  for (int row = 0; row < 2; ++row) {
    double sum = 0;
    for (int i = 0; i < 3; ++i) sum += y[size_t(row * 3 + i)];
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  double e = std::exp(1.0), expected = 1 / (1 + e + e * e);
  EXPECT_NEAR(y[0], expected, 1e-6);
  EXPECT_NEAR(y[3], expected, 1e-6) << "softmax is shift-invariant";
}

TEST_F(OpsTest, CastTakesItsOutputDtypeFromTheCaller) {
  Tensor x = from(device(), {1.9f, -1.9f, 0.0f}, {3});
  Tensor y = ops::cast(device().default_stream(), x, dtype::i32);
  ASSERT_TRUE(y.dtype() == dtype::i32) << dtype_name(y.dtype());
  std::vector<int32_t> values(3);
  y.copy_to_host(device().default_stream(), values.data());
  device().default_stream().synchronize();
  EXPECT_EQ(values, (std::vector<int32_t>{1, -1, 0})) << "float to int truncates toward zero";
}

TEST_F(OpsTest, ContiguousMaterialisesATransposedView) {
  Tensor x = from(device(), {1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor t = ops::contiguous(device().default_stream(), x.transpose(0, 1));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values_of(device(), t), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST_F(OpsTest, UnknownOperatorIsNotFound) {
  Tensor x = from(device(), {1}, {1});
  error_of(OAR_STATUS_NOT_FOUND, [&] { ops::call(device().default_stream(), "nope", {&x}); });
}

TEST_F(OpsTest, CallOfAnOperatorWithoutInputsTakesTheCallersDtype) {
  Stream& stream = device().default_stream();
  std::vector<Tensor> y = ops::call(
      stream, "arange", {}, {Attr("start", 1.0), Attr("end", 2.0), Attr("step", 0.25)}, dtype::f32);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{4}));
  EXPECT_EQ(values_of(device(), y[0]), (std::vector<float>{1, 1.25, 1.5, 1.75}));
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT,
                                 [&] { ops::call(stream, "arange", {}, {Attr("end", 2.0)}); });
  EXPECT_NE(message.find("output dtype"), std::string::npos) << message;
}

TEST_F(OpsTest, EveryOperatorOfTheSetHasACpuKernel) {
  // The cpu plugin registers at least one kernel for every schema operator.
  for (const ops::OpSchema& schema : ops::schemas()) {
    EXPECT_FALSE(device().plugin().kernels().signatures(OpId(schema.name).value()).empty())
        << schema.name;
  }
}

TEST(DtypeTest, ParseIsTheInverseOfName) {
  // Every dtype of the set, the narrow integers included, round-trips.
  for (DLDataType t : ops::dtypes_in(ops::kAll | ops::kSmallInts)) {
    DLDataType parsed{0, 0, 0};
    ASSERT_TRUE(parse_dtype(dtype_name(t), &parsed)) << dtype_name(t);
    EXPECT_TRUE(parsed == t) << dtype_name(t);
  }
  DLDataType t{0, 0, 0};
  ASSERT_TRUE(parse_dtype("u8", &t));
  EXPECT_TRUE(t == dtype::u8);
  ASSERT_TRUE(parse_dtype("i16", &t));
  EXPECT_TRUE(t == dtype::i16);
  ASSERT_TRUE(parse_dtype("f32x4", &t));
  EXPECT_TRUE((t == DLDataType{kDLFloat, 32, 4}));
  ASSERT_TRUE(parse_dtype("code7:16", &t));
  EXPECT_TRUE((t == DLDataType{7, 16, 1}));
  EXPECT_EQ(dtype_name(t), "code7:16");
  const DLDataType before = t;
  for (const char* bad : {"", "f", "f0", "f256", "i08", "x4", "f32x", "f32x0", "float32", "bool2",
                          "code7", "code:8", "u8 ", "I8"}) {
    EXPECT_FALSE(parse_dtype(bad, &t)) << bad;
  }
  EXPECT_TRUE(t == before);  // untouched on failure
}

}  // namespace
}  // namespace oar::testing
