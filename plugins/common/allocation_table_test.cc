// Tests of AllocationTable: the range checks and leak release every plugin
// built on the SDK relies on (cpu, sim, opencl, samples/vendor_plugin).
#include "oar/sdk/allocation_table.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "oar/sdk/plugin.hpp"

struct oar_device_s {
  int index = 0;
};

namespace oar::sdk {
namespace {

template <typename Body>
oar_status_t status_of(Body&& body) {
  try {
    body();
    return OAR_STATUS_OK;
  } catch (const Error& e) {
    return e.code();
  }
}

class SdkAllocationTableTest : public ::testing::Test {
 protected:
  void* handle(uintptr_t n) { return reinterpret_cast<void*>(n * 64); }

  oar_device_s device_;
  oar_device_s other_;
  AllocationTable table_{"test", AllocationTable::Unknown::kRefuse};
};

TEST_F(SdkAllocationTableTest, RangesInsideAnAllocationPassAndOthersAreOutOfRange) {
  table_.insert(handle(1), {100, OAR_MEMORY_KIND_DEVICE, &device_});
  EXPECT_EQ(status_of([&] { table_.check_range(handle(1), 0, 100, "copy"); }), OAR_STATUS_OK);
  EXPECT_EQ(status_of([&] { table_.check_range(handle(1), 100, 0, "copy"); }), OAR_STATUS_OK);
  EXPECT_EQ(status_of([&] { table_.check_range(handle(1), 1, 100, "copy"); }),
            OAR_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(status_of([&] { table_.check_range(handle(1), 101, 0, "copy"); }),
            OAR_STATUS_OUT_OF_RANGE);
  // offset + size wraps around 2^64: still out of range, never a pass.
  EXPECT_EQ(status_of([&] { table_.check_range(handle(1), 50, UINT64_MAX - 10, "copy"); }),
            OAR_STATUS_OUT_OF_RANGE);
}

TEST_F(SdkAllocationTableTest, UnknownAndNullHandlesAreRefusedUnlessTrusted) {
  EXPECT_EQ(status_of([&] { table_.check_range(handle(7), 0, 1, "copy"); }),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(status_of([&] { table_.check_range(nullptr, 0, 0, "copy"); }),
            OAR_STATUS_INVALID_ARGUMENT);
  AllocationTable trusting("test", AllocationTable::Unknown::kTrust);
  EXPECT_EQ(status_of([&] { trusting.check_range(handle(7), 0, 1, "copy"); }), OAR_STATUS_OK);
  EXPECT_EQ(status_of([&] { trusting.check_range(nullptr, 0, 0, "copy"); }),
            OAR_STATUS_INVALID_ARGUMENT);
}

TEST_F(SdkAllocationTableTest, EraseRefusesDoubleFreesAndOtherDevicesHandles) {
  table_.insert(handle(1), {8, OAR_MEMORY_KIND_DEVICE, &device_});
  EXPECT_EQ(status_of([&] { table_.erase(handle(1), &other_); }), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(table_.erase(handle(1), &device_).size, 8u);
  EXPECT_EQ(status_of([&] { table_.erase(handle(1), &device_); }), OAR_STATUS_INVALID_ARGUMENT);
}

TEST_F(SdkAllocationTableTest, TakeAllReturnsOnlyThatDevicesLeftovers) {
  table_.insert(handle(1), {8, OAR_MEMORY_KIND_DEVICE, &device_});
  table_.insert(handle(2), {16, OAR_MEMORY_KIND_DEVICE, &other_});
  table_.insert(handle(3), {32, OAR_MEMORY_KIND_DEVICE, &device_});
  EXPECT_EQ(table_.allocated_bytes([&](oar_device_t d) { return d == &device_; }), 40u);
  auto taken = table_.take_all(&device_);
  EXPECT_EQ(taken.size(), 2u);
  EXPECT_EQ(table_.allocated_bytes([](oar_device_t) { return true; }), 16u);
}

TEST_F(SdkAllocationTableTest, TensorsAreCheckedOverTheBytesTheirStridesReach) {
  table_.insert(handle(1), {64, OAR_MEMORY_KIND_DEVICE, &device_});
  int64_t shape[2] = {2, 4};
  int64_t strides[2] = {4, 1};
  DLTensor t{};
  t.data = handle(1);
  t.ndim = 2;
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = 32;  // 8 floats from byte 32: exactly the end
  EXPECT_EQ(status_of([&] { table_.check_tensor(t, "input"); }), OAR_STATUS_OK);
  t.byte_offset = 36;
  EXPECT_EQ(status_of([&] { table_.check_tensor(t, "input"); }), OAR_STATUS_OUT_OF_RANGE);
  // Negative strides reach below byte_offset: [0, 32) here.
  strides[0] = -4;
  t.byte_offset = 16;
  EXPECT_EQ(status_of([&] { table_.check_tensor(t, "input"); }), OAR_STATUS_OK);
  t.byte_offset = 8;
  EXPECT_EQ(status_of([&] { table_.check_tensor(t, "input"); }), OAR_STATUS_OUT_OF_RANGE);
  // An empty tensor reaches nothing, wherever its strides point.
  shape[1] = 0;
  t.byte_offset = 64;
  EXPECT_EQ(status_of([&] { table_.check_tensor(t, "input"); }), OAR_STATUS_OK);
}

}  // namespace
}  // namespace oar::sdk
