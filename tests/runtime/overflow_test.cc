// Sizes that do not fit in 64 bits are refused before any memory is touched:
// tensor shapes, strides and byte offsets, DLTensors handed to dispatch, and
// the shapes an operator's attributes imply.
#include <climits>

#include "cpu_fixture.h"
#include "oar/ops.hpp"

namespace oar::testing {
namespace {

using OverflowTest = CpuTest;

constexpr int64_t kBig = int64_t(1) << 62;

TEST_F(OverflowTest, EmptyWhoseByteSizeWrapsIsRefused) {
  // 2^62 f32 elements are 2^64 bytes: the product wraps to 0.
  std::string message =
      error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { Tensor::empty(device(), {kBig}, dtype::f32); });
  EXPECT_NE(message.find("overflow"), std::string::npos) << message;
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    Tensor::empty(device(), {int64_t(1) << 32, int64_t(1) << 32}, dtype::f32);
  });
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    Tensor::empty(device(), {3, INT64_MAX / 2}, dtype::boolean);
  });
  EXPECT_EQ(device().memory_stats().active_blocks, 0u);
}

TEST_F(OverflowTest, EmptyWithAZeroDimensionIsEmptyEvenBesideAHugeOne) {
  Tensor t = Tensor::empty(device(), {0, INT64_MAX / 8}, dtype::f64);
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.nbytes(), 0u);
}

TEST_F(OverflowTest, EmptyShapeWhoseOtherDimensionsWrapIsRefused) {
  // No elements, but a kernel multiplies the other extents (reductions do).
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    Tensor::empty(device(), {0, INT64_MAX, INT64_MAX}, dtype::f32);
  });
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    Tensor::empty(device(), {0, int64_t(1) << 62}, dtype::f32);
  });
}

TEST_F(OverflowTest, EmptyOfASubByteDtypeIsRefused) {
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    Tensor::empty(device(), {8}, DLDataType{kDLInt, 4, 1});
  });
}

TEST_F(OverflowTest, ViewWithAStrideThatWrapsIsRefused) {
  auto buffer = std::make_shared<Buffer>(device().allocate(64));
  // (2 - 1) * 2^62 elements of 4 bytes: the byte extent wraps to 4.
  error_of(OAR_STATUS_OUT_OF_RANGE, [&] { Tensor::view(buffer, {2}, dtype::f32, {kBig}); });
  error_of(OAR_STATUS_OUT_OF_RANGE, [&] {
    Tensor::view(buffer, {3, 3}, dtype::f32, {INT64_MAX / 2, 1});
  });
  error_of(OAR_STATUS_OUT_OF_RANGE, [&] {
    Tensor::view(buffer, {3, 2}, dtype::f32, {1, INT64_MAX});
  });
  // A byte offset near 2^64 must not wrap around the buffer's size either.
  error_of(OAR_STATUS_OUT_OF_RANGE,
           [&] { Tensor::view(buffer, {1}, dtype::f32, {}, UINT64_MAX - 1); });
}

TEST_F(OverflowTest, ViewAtAMisalignedOffsetIsRefused) {
  auto buffer = std::make_shared<Buffer>(device().allocate(64));
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { Tensor::view(buffer, {2}, dtype::f32, {}, 2); });
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { Tensor::view(buffer, {2}, dtype::i64, {}, 4); });
  EXPECT_EQ(Tensor::view(buffer, {2}, dtype::f32, {}, 8).dl().byte_offset % 4, 0u);
  EXPECT_EQ(Tensor::view(buffer, {3}, dtype::boolean, {}, 3).numel(), 3);
}

TEST_F(OverflowTest, ViewWhoseElementCountWrapsIsRefused) {
  // Broadcast-style zero strides touch one element, but numel() would wrap.
  auto buffer = std::make_shared<Buffer>(device().allocate(64));
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    Tensor::view(buffer, {kBig, kBig}, dtype::f32, {0, 0});
  });
  Tensor ok = Tensor::view(buffer, {1000, 1000}, dtype::f32, {0, 0});
  EXPECT_EQ(ok.numel(), 1000000);
}

TEST_F(OverflowTest, ViewWithANegativeDimensionIsRefused) {
  auto buffer = std::make_shared<Buffer>(device().allocate(64));
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { Tensor::view(buffer, {-1}, dtype::f32); });
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { Tensor::view(buffer, {2, -3}, dtype::f32, {1, 1}); });
}

TEST_F(OverflowTest, CopyOfAHugeStrideViewNeverReachesThePlugin) {
  auto buffer = std::make_shared<Buffer>(device().allocate(64));
  Tensor out = Tensor::empty(device(), {2}, dtype::f32);
  try {
    Tensor in = Tensor::view(buffer, {2}, dtype::f32, {kBig});
    dispatch(device().default_stream(), OpId("copy"), {&in}, {&out});
    device().default_stream().synchronize();
    FAIL() << "a view reaching 2^64 bytes was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_OUT_OF_RANGE) << e.what();
  }
}

// A raw DLTensor over a real allocation, for calls that bypass oar::Tensor.
struct RawTensor {
  RawTensor(const Tensor& storage, std::vector<int64_t> shape, std::vector<int64_t> strides)
      : shape(std::move(shape)), strides(std::move(strides)) {
    dl = storage.dl();
    dl.ndim = int(this->shape.size());
    dl.shape = this->shape.data();
    dl.strides = this->strides.empty() ? nullptr : this->strides.data();
  }
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLTensor dl;
};

TEST_F(OverflowTest, DispatchRefusesDLTensorsWhoseExtentWraps) {
  Tensor storage = Tensor::empty(device(), {16}, dtype::f32);
  Tensor out_storage = Tensor::empty(device(), {16}, dtype::f32);
  Stream& stream = device().default_stream();
  static const OpId relu("relu");
  struct Case {
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;
  };
  const Case cases[] = {
      {{2}, {kBig}},             // the byte extent wraps
      {{kBig, kBig}, {0, 0}},    // the element count wraps
      {{int64_t(1) << 62}, {}},  // row-major, wraps in bytes
      {{-1}, {}},                // a negative dimension
      {{4, -2}, {1, 1}},         // a negative dimension with strides
      {{2, 2}, {INT64_MIN, 1}},  // a stride whose reach wraps below zero
  };
  for (const Case& c : cases) {
    RawTensor in(storage, c.shape, c.strides);
    RawTensor out(out_storage, c.shape, c.strides);
    try {
      dispatch(stream, relu, &in.dl, 1, &out.dl, 1);
      stream.synchronize();
      ADD_FAILURE() << "dispatch accepted shape " << ::testing::PrintToString(c.shape)
                    << " strides " << ::testing::PrintToString(c.strides);
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == OAR_STATUS_INVALID_ARGUMENT || e.code() == OAR_STATUS_OUT_OF_RANGE)
          << e.what();
    }
  }
}

TEST_F(OverflowTest, DispatchRefusesAByteOffsetThatWraps) {
  Tensor storage = Tensor::empty(device(), {4}, dtype::f32);
  Tensor out = Tensor::empty(device(), {4}, dtype::f32);
  RawTensor in(storage, {4}, {});
  in.dl.byte_offset = UINT64_MAX - 7;
  try {
    dispatch(device().default_stream(), OpId("relu"), &in.dl, 1, const_cast<DLTensor*>(&out.dl()),
             1);
    device().default_stream().synchronize();
    FAIL() << "a byte offset near 2^64 was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == OAR_STATUS_INVALID_ARGUMENT || e.code() == OAR_STATUS_OUT_OF_RANGE)
        << e.what();
  }
}

TEST_F(OverflowTest, DispatchRefusesMisalignedElements) {
  Tensor storage = Tensor::empty(device(), {8}, dtype::f32);
  Tensor out = Tensor::empty(device(), {4}, dtype::f32);
  RawTensor in(storage, {4}, {});
  in.dl.byte_offset += 2;
  DLTensor out_dl = out.dl();
  error_of(OAR_STATUS_INVALID_ARGUMENT,
           [&] { dispatch(device().default_stream(), OpId("relu"), &in.dl, 1, &out_dl, 1); });
}

TEST_F(OverflowTest, DispatchRefusesAGarbageNdimAndNullArrays) {
  Tensor storage = Tensor::empty(device(), {4}, dtype::f32);
  Tensor out = Tensor::empty(device(), {4}, dtype::f32);
  RawTensor in(storage, {4}, {});
  in.dl.ndim = 1 << 30;  // would size a 2^30-entry strides array
  DLTensor out_dl = out.dl();
  Stream& stream = device().default_stream();
  static const OpId relu("relu");
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { dispatch(stream, relu, &in.dl, 1, &out_dl, 1); });
  in.dl.ndim = -1;
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { dispatch(stream, relu, &in.dl, 1, &out_dl, 1); });
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { dispatch(stream, relu, nullptr, 1, &out_dl, 1); });
  error_of(OAR_STATUS_INVALID_ARGUMENT,
           [&] { dispatch(stream, relu, &in.dl, 1, &out_dl, 1, nullptr, 2); });
}

// Shape inference: attributes whose arithmetic wraps must be refused, not
// turned into a small (or negative) output shape.
TEST_F(OverflowTest, ShapeInferenceRefusesAttributesThatWrap) {
  Stream& stream = device().default_stream();
  Tensor x = Tensor::empty(device(), {1, 1, 4, 4}, dtype::f32);
  Tensor w = Tensor::empty(device(), {1, 1, 3, 3}, dtype::f32);
  std::vector<int64_t> huge_padding = {INT64_MAX / 2, INT64_MAX / 2};
  std::vector<int64_t> huge_dilation = {INT64_MAX / 2, 1};
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    ops::call(stream, "conv2d", {&x, &w}, {Attr("padding", huge_padding)});
  });
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    ops::call(stream, "conv2d", {&x, &w}, {Attr("dilation", huge_dilation)});
  });
  std::vector<int64_t> window = {INT64_MAX, INT64_MAX};
  std::vector<int64_t> window_padding = {INT64_MAX / 2, INT64_MAX / 2};
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    ops::call(stream, "max_pool2d", {&x},
              {Attr("kernel_size", window), Attr("padding", window_padding)});
  });
  // Found by the ops fuzzer: 2 * padding wrapped before it was compared.
  std::vector<int64_t> odd_window = {3, 3};
  std::vector<int64_t> wrapping_padding = {INT64_MAX / 2 + 7, 0};
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    ops::call(stream, "max_pool2d", {&x},
              {Attr("kernel_size", odd_window), Attr("padding", wrapping_padding)});
  });
  // conv2d: weight channels times groups wraps (to 0, the input's channels).
  Tensor no_channels = Tensor::empty(device(), {1, 0, 4, 4}, dtype::f32);
  Tensor grouped_w = Tensor::empty(device(), {0, 4, 1, 1}, dtype::f32);
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    ops::call(stream, "conv2d", {&no_channels, &grouped_w}, {Attr("groups", int64_t(1) << 62)});
  });
  // slice: (end - start + step - 1) wraps for a step near 2^63.
  Tensor v = Tensor::empty(device(), {8}, dtype::f32);
  std::vector<Tensor> sliced =
      ops::call(stream, "slice", {&v}, {Attr("axis", 0), Attr("step", int64_t(INT64_MAX))});
  EXPECT_EQ(sliced[0].shape(), std::vector<int64_t>{1});
  // Found by the ops fuzzer: the cpu slice kernel multiplied the stride by a
  // step near 2^63 (UBSan's report in the sanitized stage); one element stays.
  std::vector<float> values = {0, 1, 2, 3, 4, 5, 6, 7};
  Tensor m = Tensor::empty(device(), {2, 4}, dtype::f32);
  m.copy_from_host(stream, values.data());
  std::vector<Tensor> one = ops::call(stream, "slice", {&m},  // axis 0 has stride 4
                                      {Attr("axis", 0), Attr("step", int64_t(INT64_MAX - 3))});
  ASSERT_EQ(one[0].shape(), (std::vector<int64_t>{1, 4}));
  std::vector<float> column(4);
  one[0].copy_to_host(stream, column.data());
  stream.synchronize();
  EXPECT_EQ(column, (std::vector<float>{0, 1, 2, 3}));
  // concat: the joined dimension wraps (zero strides keep the inputs small).
  auto buffer = std::make_shared<Buffer>(device().allocate(64));
  Tensor a = Tensor::view(buffer, {kBig}, dtype::boolean, {0});
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { ops::call(stream, "concat", {&a, &a}); });
}

TEST_F(OverflowTest, FillWithoutItsRequiredValueIsInvalidArgument) {
  Tensor y = Tensor::empty(device(), {4}, dtype::f32);
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    dispatch(device().default_stream(), OpId("fill"), {}, {&y});
  });
  EXPECT_NE(message.find("value"), std::string::npos) << message;
}

}  // namespace
}  // namespace oar::testing
