// Tensor::view(shape) and Tensor::reshape: views that keep the tensor's place
// in its buffer, -1 inference, refusals of what needs a copy, and reshape's
// copy through the copy operator when the strides cannot express the shape.
#include <cstring>

#include "cpu_fixture.h"
#include "oar/ops.hpp"

namespace oar::testing {
namespace {

class TensorViewTest : public CpuTest {
 protected:
  // A [rows, cols] f32 tensor at |offset_elements| into a larger buffer,
  // holding 0, 1, 2, ... in row-major order.
  Tensor counting(int64_t rows, int64_t cols, int64_t offset_elements) {
    Stream& stream = device().default_stream();
    const int64_t total = rows * cols + offset_elements + 8;
    Tensor whole = Tensor::empty(device(), {total}, dtype::f32, &stream);
    std::vector<float> values(size_t(total), -1.0f);
    for (int64_t i = 0; i < rows * cols; ++i) values[size_t(offset_elements + i)] = float(i);
    whole.copy_from_host(stream, values.data());
    stream.synchronize();  // |values| must outlive the copy
    return Tensor::view(whole.buffer(), {rows, cols}, dtype::f32, {},
                        uint64_t(offset_elements) * sizeof(float));
  }

  // |t|'s elements in row-major order (through the copy operator when it is
  // not contiguous).
  std::vector<float> read(const Tensor& t) {
    Stream& stream = device().default_stream();
    Tensor dense = ops::contiguous(stream, t);
    std::vector<float> out(static_cast<size_t>(t.numel()));
    dense.copy_to_host(stream, out.data());
    stream.synchronize();
    return out;
  }

  static std::vector<float> iota(int64_t n, float first = 0) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = first + float(i);
    return v;
  }
};

TEST_F(TensorViewTest, ViewOfAnOffsetTensorKeepsItsPlaceInTheBuffer) {
  Tensor base = counting(6, 4, 10);
  ASSERT_EQ(base.byte_offset(), 40u);
  ASSERT_EQ(base.element_offset(), 10);
  Tensor v = base.view({4, -1});
  EXPECT_EQ(v.shape(), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(v.strides(), (std::vector<int64_t>{6, 1}));
  EXPECT_EQ(v.buffer(), base.buffer());
  EXPECT_EQ(v.byte_offset(), 40u);
  EXPECT_EQ(v.dl().byte_offset, base.dl().byte_offset);
  EXPECT_EQ(v.dl().byte_offset, base.buffer()->offset() + 40);
  EXPECT_EQ(read(v), iota(24));
  // Views of views keep the offset too.
  Tensor w = v.view({2, 3, 4}).view({24});
  EXPECT_EQ(w.byte_offset(), 40u);
  EXPECT_EQ(read(w), iota(24));
}

TEST_F(TensorViewTest, ViewSplitsAndMergesDimensionsOfATransposedTensorWhereStridesAllow) {
  Tensor t = counting(3, 4, 0).transpose(0, 1);  // [4, 3], strides [1, 4]
  // Splitting the first dimension needs no copy.
  Tensor split = t.view({2, 2, 3});
  EXPECT_EQ(split.strides(), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(split.buffer(), t.buffer());
  EXPECT_EQ(read(split), read(t));
  // Unit dimensions go anywhere.
  Tensor ones = t.view({1, 4, 1, 3, 1});
  EXPECT_EQ(read(ones), read(t));
  // Flattening it would need a copy.
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { t.view({12}); });
  EXPECT_NE(message.find("without a copy"), std::string::npos) << message;
}

TEST_F(TensorViewTest, ReshapeViewsWhenItCanAndCopiesThroughTheCopyOperatorWhenItMust) {
  Tensor base = counting(3, 4, 6);
  Tensor same = base.reshape({2, 6});
  EXPECT_EQ(same.buffer(), base.buffer());
  EXPECT_EQ(same.byte_offset(), base.byte_offset());

  Tensor t = base.transpose(0, 1);  // [4, 3]
  const std::vector<float> expected = read(t);
  Tensor flat = t.reshape({-1});
  EXPECT_NE(flat.buffer(), t.buffer());
  EXPECT_TRUE(flat.is_contiguous());
  EXPECT_EQ(flat.shape(), (std::vector<int64_t>{12}));
  EXPECT_EQ(read(flat), expected);
  Stream other = device().create_stream();
  Tensor on_other = t.reshape({6, 2}, &other);
  other.synchronize();
  EXPECT_EQ(read(on_other), expected);
}

TEST_F(TensorViewTest, BroadcastViewsSplitButDoNotFlatten) {
  Tensor base = counting(1, 4, 0);
  Tensor rows = Tensor::view(base.buffer(), {6, 4}, dtype::f32, {0, 1});
  Tensor split = rows.view({2, 3, 2, 2});
  EXPECT_EQ(split.strides(), (std::vector<int64_t>{0, 0, 2, 1}));
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { rows.view({24}); });
  std::vector<float> flat = read(rows.reshape({24}));
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(flat[size_t(i)], float(i % 4)) << i;
}

TEST_F(TensorViewTest, ScalarsAndEmptyTensorsChangeShape) {
  Tensor scalar = counting(1, 1, 3).view({});
  EXPECT_EQ(scalar.ndim(), 0);
  EXPECT_EQ(scalar.byte_offset(), 12u);
  EXPECT_EQ(scalar.view({1, 1, -1}).shape(), (std::vector<int64_t>{1, 1, 1}));
  Tensor empty = Tensor::empty(device(), {0, 5}, dtype::f32);
  EXPECT_EQ(empty.view({5, 0}).shape(), (std::vector<int64_t>{5, 0}));
  EXPECT_EQ(empty.view({-1}).shape(), (std::vector<int64_t>{0}));
  EXPECT_EQ(empty.transpose(0, 1).view({0}).numel(), 0);
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { empty.view({-1, 0}); });
  EXPECT_NE(message.find("ambiguous"), std::string::npos) << message;
}

TEST_F(TensorViewTest, ShapesThatDoNotFitAreRefused) {
  Tensor t = counting(3, 4, 0);
  auto refused = [&](std::vector<int64_t> shape, const char* why) {
    std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { t.view(shape); });
    EXPECT_NE(message.find(why), std::string::npos) << message;
    message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { t.reshape(shape); });
    EXPECT_NE(message.find(why), std::string::npos) << message;
  };
  refused({5, 3}, "has 15 elements, not 12");
  refused({-1, 5}, "do not divide");
  refused({-1, -1}, "only one dimension may be -1");
  refused({-2, -6}, "negative");
  refused({INT64_MAX, 4}, "overflows 64-bit sizes");
  // A zero makes the count 0 but the other dimensions must still fit.
  Tensor empty = Tensor::empty(device(), {0}, dtype::f32);
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { empty.view({0, INT64_MAX, 4}); });
}

TEST(TensorViewLifetimeTest, ViewAndReshapeAfterTheRuntimeIsGoneThrowInsteadOfCrashing) {
  Tensor t;
  Tensor transposed;
  {
    Runtime runtime(cpu_only());
    Device& cpu = runtime.device("cpu:0");
    Tensor whole = Tensor::empty(cpu, {32}, dtype::f32);
    t = Tensor::view(whole.buffer(), {3, 4}, dtype::f32, {}, 16);
    transposed = t.transpose(0, 1);
  }
  EXPECT_EQ(t.byte_offset(), 16u);  // reading what it is still works
  EXPECT_EQ(t.element_offset(), 4);
  for (const Tensor* x : {&t, &transposed}) {
    for (int reshape = 0; reshape < 2; ++reshape) {
      try {
        if (reshape) {
          x->reshape({12});
        } else {
          x->view({2, 6});
        }
        ADD_FAILURE() << "expected FAILED_PRECONDITION";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), OAR_STATUS_FAILED_PRECONDITION) << e.what();
        EXPECT_NE(std::string(e.what()).find("runtime was destroyed"), std::string::npos)
            << e.what();
      }
    }
  }
  Tensor undefined;
  EXPECT_EQ(undefined.byte_offset(), 0u);
  EXPECT_EQ(undefined.element_offset(), 0);
  try {
    undefined.view({});
    ADD_FAILURE() << "expected FAILED_PRECONDITION";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_FAILED_PRECONDITION) << e.what();
  }
}

}  // namespace
}  // namespace oar::testing
