// fmod and remainder decomposed (core/ops/decompositions/math.cc): the
// result must be exact, bit for bit against C's fmod on the host (the signs
// of zeros and the special values included), on the hard cases (quotients
// across the whole exponent range, subnormals, exact multiples, signed
// zeros, zero/inf/NaN operands) and on random operands spread over every
// binade, in f32, f64, f16 and bf16, forced on the cpu and sim plugins.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "decompose_test_util.h"
#include "oar/oar.hpp"

namespace oar::testing {
namespace {

struct Range {
  int min_exponent, max_exponent;  // of the smallest subnormal, of the largest binade
  double max;
};
Range range_of(DLDataType t) {
  if (t == dtype::f64) return {-1074, 1023, std::numeric_limits<double>::max()};
  if (t == dtype::f16) return {-24, 15, 65504.0};
  if (t == dtype::bf16) return {-133, 127, 0x1.fep127};
  return {-149, 127, double(std::numeric_limits<float>::max())};
}

// The hard pairs, in the values of |t| (upload rounds them).
std::vector<std::pair<double, double>> hard_pairs(DLDataType t) {
  const Range r = range_of(t);
  const double tiny = std::ldexp(1.0, r.min_exponent);
  std::vector<std::pair<double, double>> p = {{r.max, tiny},
                                              {-r.max, tiny},
                                              {r.max, -3 * tiny},
                                              {r.max, 7 * tiny},
                                              {r.max, r.max},
                                              {r.max, -r.max / 3},
                                              {tiny, r.max},
                                              {tiny, tiny},
                                              {5 * tiny, 3 * tiny},
                                              {-5 * tiny, 2 * tiny},
                                              {r.max, 0.3},
                                              {-r.max, 0.3},
                                              {6, 3},
                                              {-6, 3},
                                              {6, -3},
                                              {-6, -3},
                                              {1.5, 0.5},
                                              {-1.5, 0.5},
                                              {0.0, 1},
                                              {-0.0, 1},
                                              {0.0, -1},
                                              {-0.0, -1},
                                              {5, kInf},
                                              {-5, kInf},
                                              {5, -kInf},
                                              {-5, -kInf},
                                              {0.0, kInf},
                                              {-0.0, -kInf},
                                              {kInf, 2},
                                              {-kInf, 2},
                                              {kNaN, 2},
                                              {2, kNaN},
                                              {2, 0.0},
                                              {2, -0.0},
                                              {0.0, 0.0},
                                              {kInf, kInf},
                                              {7, 7},
                                              {-7, 7},
                                              {1, 3},
                                              {-1, 3}};
  if (t == dtype::f32) {
    for (auto q : std::vector<std::pair<double, double>>{
             {1e38, 1e-38}, {3e38, 1e-45}, {1e20, 0.3}, {1e-40, 3e-42}, {1.17e-38, 1e-45}}) {
      p.push_back(q);
    }
  }
  if (t == dtype::f64) {
    for (auto q : std::vector<std::pair<double, double>>{{1e308, 5e-324},
                                                         {1.7e308, 3e-320},
                                                         {1e300, 1e-300},
                                                         {-1e308, 7e-310},
                                                         {9007199254740993.0 * 1e290, 3.0}}) {
      p.push_back(q);
    }
  }
  if (t == dtype::f16) p.push_back({65504, 6e-8});
  return p;
}

// Random operands: a random sign, binade (subnormals included) and
// significand each.
std::vector<std::pair<double, double>> random_pairs(DLDataType t, size_t n, uint32_t seed) {
  const Range r = range_of(t);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> exponent(r.min_exponent, r.max_exponent);
  std::uniform_real_distribution<double> significand(1.0, 2.0);
  auto value = [&] {
    const double v = std::ldexp(significand(rng), exponent(rng));
    return (rng() & 1) ? -std::fmin(v, r.max) : std::fmin(v, r.max);
  };
  std::vector<std::pair<double, double>> p(n);
  for (auto& e : p) e = {value(), value()};
  // Quotients within the dtype's precision too (where a - trunc(a/b)·b works).
  std::uniform_real_distribution<double> near(-100, 100);
  for (size_t i = 0; i < n / 4; ++i) p[i] = {near(rng), near(rng)};
  return p;
}

bool same_bits(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

// C's fmod, and remainder from it (docs/ops.md), in the compute type C.
template <typename C>
double reference(const char* op, C a, C b) {
  const C r = std::fmod(a, b);
  if (std::string(op) == "fmod" || std::isnan(r)) return double(r);
  if (r == 0) return std::signbit(b) ? -0.0 : 0.0;
  return double((r < 0) != (b < 0) ? C(r + b) : r);
}

void check_exact(const char* manifest) {
  Runtime runtime(only(manifest));
  ASSERT_FALSE(runtime.devices().empty()) << manifest;
  Device& device = *runtime.devices()[0];
  Stream& stream = device.default_stream();
  for (DLDataType t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) {
    if (!claimed(device, t)) continue;
    std::vector<std::pair<double, double>> pairs = hard_pairs(t);
    for (const auto& q : random_pairs(t, 4096, 17)) pairs.push_back(q);
    std::vector<double> a, b;
    for (const auto& [x, y] : pairs) a.push_back(x), b.push_back(y);
    const int64_t n = int64_t(pairs.size());
    Tensor ta = upload(device, a, {n}, t), tb = upload(device, b, {n}, t);
    a = download(device, ta), b = download(device, tb);  // the dtype's values
    for (const char* op : {"fmod", "remainder"}) {
      SCOPED_TRACE(std::string(op) + " " + dtype_name(t));
      decompose::set_device_mode(device, decompose::Mode::kForce);
      const uint64_t before = decompose::decomposition_count();
      std::vector<double> got = download(device, ops::call(stream, op, {&ta, &tb})[0]);
      EXPECT_GT(decompose::decomposition_count(), before) << "not decomposed";
      decompose::clear_device_mode(device);
      // The reference in the compute type, rounded to the dtype by the device's
      // cast (as the decomposition's last store).
      std::vector<double> want(a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        want[i] = t == dtype::f64 ? reference<double>(op, a[i], b[i])
                                  : reference<float>(op, float(a[i]), float(b[i]));
      }
      want = download(device, upload(device, want, {n}, t));
      size_t bad = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!same_bits(got[i], want[i]) && bad++ < 5) {
          ADD_FAILURE() << std::hexfloat << op << "(" << a[i] << ", " << b[i] << ") = " << got[i]
                        << ", want " << want[i];
        }
      }
      EXPECT_EQ(bad, 0u);
    }
  }
}

TEST(DecomposeFmodTest, ExactOnTheCpuPlugin) { check_exact(OAR_TEST_CPU_MANIFEST); }

TEST(DecomposeFmodTest, ExactOnTheSimPlugin) { check_exact(OAR_TEST_SIM_MANIFEST); }

}  // namespace
}  // namespace oar::testing
