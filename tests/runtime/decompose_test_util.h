// What the decomposition tests (decompose_test.cc, decompose_grad_test.cc)
// share: a runtime with one plugin, host values to and from device tensors
// of any dtype (through f64 and a cast), the dtypes a device claims, and a
// run native and forced through the decompositions.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "core/ops/decompositions/decompose.h"
#include "oar/oar.hpp"

namespace oar::testing {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Options that load only |manifest| (no environment, no install prefix).
inline RuntimeOptions only(const char* manifest) {
  RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = {manifest};
  return options;
}

// Host values to a device tensor of |dtype| (through f64 and a cast).
inline Tensor upload(Device& device, const std::vector<double>& values, std::vector<int64_t> shape,
                     DLDataType dtype) {
  Stream& stream = device.default_stream();
  Tensor wide = Tensor::empty(device, std::move(shape), dtype::f64);
  if (!values.empty()) wide.copy_from_host(stream, values.data());
  Tensor t = dtype == dtype::f64 ? wide : ops::cast(stream, wide, dtype);
  stream.synchronize();
  return t;
}

// A device tensor's values on the host, as f64.
inline std::vector<double> download(Device& device, const Tensor& t) {
  Stream& stream = device.default_stream();
  Tensor wide = t.dtype() == dtype::f64 ? t : ops::cast(stream, t, dtype::f64);
  std::vector<double> values(size_t(wide.numel()));
  if (!values.empty()) wide.copy_to_host(stream, values.data());
  stream.synchronize();
  return values;
}

// |n| values uniform in [lo, hi), the same for a seed.
inline std::vector<double> random_values(size_t n, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// f32 always; f16, bf16 and f64 where the device claims them.
inline bool claimed(Device& device, DLDataType t) {
  const uint32_t bits = device.properties().dtypes;
  if (t == dtype::f16) return (bits & OAR_DTYPE_SUPPORT_F16) != 0;
  if (t == dtype::bf16) return (bits & OAR_DTYPE_SUPPORT_BF16) != 0;
  if (t == dtype::f64) return (bits & OAR_DTYPE_SUPPORT_F64) != 0;
  return true;
}

// The attention shapes both tests run: |name| is the cases' name suffix; lq
// queries and lk keys, causal or not, aligned bottom_right or top_left.
struct Attention {
  const char* name;
  int64_t lq, lk;
  bool causal;
  const char* alignment;
};
inline constexpr Attention kAttentions[] = {{"", 5, 9, false, "bottom_right"},
                                            {"_causal_bottom_right", 5, 9, true, "bottom_right"},
                                            {"_causal_more_queries", 9, 5, true, "bottom_right"},
                                            {"_causal_top_left", 9, 5, true, "top_left"}};

// |run()| on |device| natively (the fallback mode: it must not decompose) and
// forced through the decompositions (it must decompose): both results, native
// first.
template <typename Run>
auto run_native_and_forced(Device& device, Run run) {
  decompose::set_device_mode(device, decompose::Mode::kFallback);
  const uint64_t before = decompose::decomposition_count();
  auto native = run();
  EXPECT_EQ(decompose::decomposition_count(), before) << "the native run decomposed";
  decompose::set_device_mode(device, decompose::Mode::kForce);
  auto decomposed = run();
  EXPECT_GT(decompose::decomposition_count(), before) << "the forced run did not decompose";
  decompose::clear_device_mode(device);
  return std::make_pair(std::move(native), std::move(decomposed));
}

}  // namespace oar::testing
