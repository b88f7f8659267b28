// Tensors cross library borders through DLPack, owned by whoever holds them.
#include <cstring>

#include "cpu_fixture.h"

namespace oar::testing {
namespace {

using DlpackTest = CpuTest;

TEST_F(DlpackTest, ExportKeepsTheBufferAliveUntilTheConsumerDeletesIt) {
  DLManagedTensor* managed = nullptr;
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  {
    Tensor t = Tensor::empty(device(), {2, 3}, dtype::f32);
    t.copy_from_host(device().default_stream(), values.data());
    device().default_stream().synchronize();
    managed = t.to_dlpack();
  }
  // The tensor is gone; the export still owns the memory. On cpu, data is a
  // real host pointer, as DLPack consumers of kDLCPU tensors expect.
  ASSERT_EQ(managed->dl_tensor.device.device_type, kDLCPU);
  ASSERT_EQ(managed->dl_tensor.ndim, 2);
  EXPECT_EQ(managed->dl_tensor.shape[0], 2);
  EXPECT_EQ(managed->dl_tensor.shape[1], 3);
  const float* data = reinterpret_cast<const float*>(
      static_cast<const char*>(managed->dl_tensor.data) + managed->dl_tensor.byte_offset);
  EXPECT_EQ(std::memcmp(data, values.data(), sizeof(float) * 6), 0);
  EXPECT_EQ(device().memory_stats().active_blocks, 1u);
  managed->deleter(managed);
  EXPECT_EQ(device().memory_stats().active_blocks, 0u);
}

struct ForeignArray {
  std::vector<float> values;
  std::vector<int64_t> shape;
  int* deleted;
};

DLManagedTensor* foreign_tensor(std::vector<float> values, int* deleted) {
  auto* array = new ForeignArray{std::move(values), {}, deleted};
  array->shape = {int64_t(array->values.size())};
  auto* managed = new DLManagedTensor{};
  managed->dl_tensor.data = array->values.data();
  managed->dl_tensor.device = {kDLCPU, 0};
  managed->dl_tensor.ndim = 1;
  managed->dl_tensor.dtype = dtype::f32;
  managed->dl_tensor.shape = array->shape.data();
  managed->dl_tensor.strides = nullptr;
  managed->manager_ctx = array;
  managed->deleter = [](DLManagedTensor* self) {
    auto* owner = static_cast<ForeignArray*>(self->manager_ctx);
    ++*owner->deleted;
    delete owner;
    delete self;
  };
  return managed;
}

TEST_F(DlpackTest, ImportedHostArrayRunsThroughAKernelAndIsReleasedOnce) {
  int deleted = 0;
  {
    Tensor in = Tensor::from_dlpack(*runtime_, foreign_tensor({-1, 2, -3, 4}, &deleted));
    Tensor out = Tensor::empty(device(), {4}, dtype::f32);
    dispatch(device().default_stream(), OpId("relu"), {&in}, {&out});
    std::vector<float> result(4);
    out.copy_to_host(device().default_stream(), result.data());
    device().default_stream().synchronize();
    EXPECT_EQ(result, (std::vector<float>{0, 2, 0, 4}));
    Tensor view = in;  // a second owner
    EXPECT_EQ(deleted, 0);
  }
  EXPECT_EQ(deleted, 1);
}

TEST_F(DlpackTest, ACopiedTensorDescribesItsOwnShape) {
  Tensor copy;
  {
    Tensor original = Tensor::empty(device(), {2, 5}, dtype::f32);
    copy = original;
  }  // the original's shape storage is gone
  ASSERT_EQ(copy.dl().shape, copy.shape().data());
  ASSERT_EQ(copy.dl().strides, copy.strides().data());
  EXPECT_EQ(copy.dl().shape[1], 5);
}

TEST_F(DlpackTest, RoundTripSharesTheMemory) {
  Tensor t = Tensor::empty(device(), {8}, dtype::f32);
  Tensor back = Tensor::from_dlpack(*runtime_, t.to_dlpack());
  EXPECT_EQ(back.dl().data, t.dl().data);
  EXPECT_EQ(back.dl().byte_offset, t.dl().byte_offset);
  EXPECT_EQ(back.shape(), t.shape());
}

TEST_F(DlpackTest, ImportFromAnUnknownDeviceFailsAndStillReleasesTheTensor) {
  int deleted = 0;
  DLManagedTensor* managed = foreign_tensor({1, 2}, &deleted);
  managed->dl_tensor.device = {kDLVulkan, 3};
  std::string message =
      error_of(OAR_STATUS_NOT_FOUND, [&] { Tensor::from_dlpack(*runtime_, managed); });
  EXPECT_EQ(deleted, 1) << "a refused import must hand the tensor back to its owner";
  EXPECT_NE(message.find("no OAR device"), std::string::npos) << message;
}

// A malformed import is refused with oar::Error before any field is used,
// and the tensor goes back to its deleter exactly once (issue 12: a NULL
// shape segfaulted, a negative dimension ended in "free(): invalid pointer",
// a negative ndim threw std::length_error).
TEST_F(DlpackTest, MalformedImportsAreRefusedAndReleasedOnce) {
  struct Case {
    const char* what;
    void (*spoil)(DLTensor& t, ForeignArray& array);
    oar_status_t code;
  };
  const Case cases[] = {
      {"NULL shape", [](DLTensor& t, ForeignArray&) { t.shape = nullptr; },
       OAR_STATUS_INVALID_ARGUMENT},
      {"negative dimension", [](DLTensor&, ForeignArray& a) { a.shape[0] = -3; },
       OAR_STATUS_INVALID_ARGUMENT},
      {"negative ndim", [](DLTensor& t, ForeignArray&) { t.ndim = -1; },
       OAR_STATUS_INVALID_ARGUMENT},
      {"huge ndim", [](DLTensor& t, ForeignArray&) { t.ndim = 1 << 30; },
       OAR_STATUS_INVALID_ARGUMENT},
      {"NULL data", [](DLTensor& t, ForeignArray&) { t.data = nullptr; },
       OAR_STATUS_INVALID_ARGUMENT},
      {"sub-byte dtype",
       [](DLTensor& t, ForeignArray&) {
         t.dtype = DLDataType{kDLInt, 4, 1};
       },
       OAR_STATUS_INVALID_ARGUMENT},
      {"zero-bit dtype",
       [](DLTensor& t, ForeignArray&) {
         t.dtype = DLDataType{kDLFloat, 0, 1};
       },
       OAR_STATUS_INVALID_ARGUMENT},
      {"vector lanes",
       [](DLTensor& t, ForeignArray&) {
         t.dtype = DLDataType{kDLFloat, 32, 4};
       },
       OAR_STATUS_INVALID_ARGUMENT},
      {"negative stride",
       [](DLTensor& t, ForeignArray&) {
         static int64_t stride = -1;
         t.strides = &stride;
       },
       OAR_STATUS_INVALID_ARGUMENT},
      {"stride that wraps",
       [](DLTensor& t, ForeignArray&) {
         static int64_t stride = int64_t(1) << 62;
         t.strides = &stride;
       },
       OAR_STATUS_OUT_OF_RANGE},
      {"shape whose size wraps", [](DLTensor&, ForeignArray& a) { a.shape[0] = int64_t(1) << 62; },
       OAR_STATUS_INVALID_ARGUMENT},
      {"byte_offset that wraps", [](DLTensor& t, ForeignArray&) { t.byte_offset = UINT64_MAX - 3; },
       OAR_STATUS_OUT_OF_RANGE},
      {"misaligned byte_offset", [](DLTensor& t, ForeignArray&) { t.byte_offset = 2; },
       OAR_STATUS_INVALID_ARGUMENT},
  };
  for (const Case& c : cases) {
    int deleted = 0;
    DLManagedTensor* managed = foreign_tensor({1, 2, 3, 4}, &deleted);
    c.spoil(managed->dl_tensor, *static_cast<ForeignArray*>(managed->manager_ctx));
    try {
      Tensor::from_dlpack(*runtime_, managed);
      ADD_FAILURE() << c.what << ": the import was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), c.code) << c.what << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.what << ": not an oar::Error: " << e.what();
    }
    EXPECT_EQ(deleted, 1) << c.what;
  }
}

TEST_F(DlpackTest, EmptyImportMayHaveNullData) {
  int deleted = 0;
  DLManagedTensor* managed = foreign_tensor({}, &deleted);
  managed->dl_tensor.data = nullptr;
  {
    Tensor t = Tensor::from_dlpack(*runtime_, managed);
    EXPECT_EQ(t.numel(), 0);
  }
  EXPECT_EQ(deleted, 1);
}

}  // namespace
}  // namespace oar::testing
