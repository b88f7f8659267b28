#include "conformance/suites/ops/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "conformance/harness/test.h"
#include "conformance/suites/ops/tensor_data.h"

namespace oar::conformance {
namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

enum DtypeClass { kF32, kF64, kF16, kBF16, kOther };

DtypeClass class_of(DLDataType dtype) {
  if (dtype == dtype::f32) return kF32;
  if (dtype == dtype::f64) return kF64;
  if (dtype == dtype::f16) return kF16;
  if (dtype == dtype::bf16) return kBF16;
  return kOther;
}

// {rtol, atol, acc} per family (rows) and float dtype (columns f32, f64, f16,
// bf16). docs/conformance.md explains each number.
struct Row {
  Family family;
  Tolerance by_dtype[4];
};
const Row kTable[] = {
    {Family::kArith, {{1e-5, 1e-6}, {1e-12, 1e-14}, {1e-3, 1e-5}, {1e-2, 1e-4}}},
    {Family::kTranscendental, {{2e-5, 2e-6}, {1e-12, 1e-14}, {2e-3, 2e-5}, {2e-2, 2e-4}}},
    {Family::kAccumulate,
     {{1e-5, 1e-6, 2e-6}, {1e-12, 1e-14, 1e-14}, {1e-2, 1e-3, 4e-3}, {4e-2, 1e-2, 3e-2}}},
    {Family::kProduct, {{1e-5, 1e-6}, {1e-12, 1e-14}, {1e-3, 1e-5}, {8e-3, 1e-4}}},
    {Family::kNormalized, {{5e-5, 5e-6}, {1e-10, 1e-12}, {1e-2, 2e-3}, {4e-2, 2e-2}}},
    {Family::kModel, {{2e-5, 2e-6}, {1e-10, 1e-12}, {1e-2, 5e-3}, {5e-2, 2e-2}}},
};

// |x| rounded to nearest even in |dtype|, as a double.
double round_to(DLDataType dtype, double x) {
  switch (class_of(dtype)) {
    case kF16:
      return half_bits_to_double(double_to_half_bits(x));
    case kBF16:
      return bf16_bits_to_double(double_to_bf16_bits(x));
    case kF32:
      return double(float(x));
    default:
      return x;
  }
}

// The representable neighbour of |r| (finite, representable in |dtype|) one
// step toward +inf (|up|) or -inf.
double neighbour(DLDataType dtype, double r, bool up) {
  const double toward =
      up ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  switch (class_of(dtype)) {
    case kF16:
    case kBF16: {
      const bool half = class_of(dtype) == kF16;
      const uint16_t bits = half ? double_to_half_bits(r) : double_to_bf16_bits(r);
      const uint16_t magnitude = bits & 0x7fffu;
      // Sign-magnitude: away from zero is one more, toward zero one less.
      uint16_t next;
      if (magnitude == 0) {
        next = up ? 0x0001 : 0x8001;
      } else {
        const bool away = (r > 0) == up;
        next = uint16_t((bits & 0x8000u) | (away ? magnitude + 1 : magnitude - 1));
      }
      return half ? half_bits_to_double(next) : bf16_bits_to_double(next);
    }
    case kF32:
      return double(std::nextafter(float(r), float(toward)));
    default:
      return std::nextafter(r, toward);
  }
}

std::string bits_text(const HostTensor& t, int64_t i) {
  uint64_t bits = 0;
  const size_t size = dtype_size(t.dtype);
  std::memcpy(&bits, t.bytes.data() + size_t(i) * size, size);
  char text[24];
  std::snprintf(text, sizeof text, "0x%0*llx", int(size * 2),
                static_cast<unsigned long long>(bits));
  return text;
}

}  // namespace

const char* family_name(Family family) {
  switch (family) {
    case Family::kExact:
      return "exact";
    case Family::kArith:
      return "arith";
    case Family::kTranscendental:
      return "transcendental";
    case Family::kAccumulate:
      return "accumulate";
    case Family::kProduct:
      return "product";
    case Family::kNormalized:
      return "normalized";
    case Family::kModel:
      return "model";
  }
  return "?";
}

std::string Tolerance::text() const {
  if (rtol == 0 && atol == 0 && acc == 0) return "exact";
  std::string t = "atol " + number(atol) + " + rtol " + number(rtol) + " * |expected|";
  if (acc != 0) t += " + " + number(acc) + " * magnitude";
  return t;
}

Tolerance tolerance_for(DLDataType dtype, Family family, int64_t k) {
  DtypeClass c = class_of(dtype);
  if (c == kOther || family == Family::kExact) return {};
  for (const Row& row : kTable) {
    if (row.family != family) continue;
    Tolerance t = row.by_dtype[c];
    if (family == Family::kProduct) {
      // Each factor adds one rounding: the relative error grows like sqrt(K).
      t.rtol = std::min(t.rtol * std::max(1.0, std::sqrt(double(k))), t.rtol * 30);
    }
    return t;
  }
  return {};
}

void expect_close(const std::string& what, size_t output, const HostTensor& got,
                  const HostTensor& expected, const Tolerance& tolerance,
                  const HostTensor* magnitude) {
  const std::string where = what + ": output " + std::to_string(output);
  if (got.shape != expected.shape) {
    fail(where + " has shape " + shape_text(got.shape) + ", the reference " +
         shape_text(expected.shape));
  }
  if (!(got.dtype == expected.dtype)) {
    fail(where + " has dtype " + dtype_name(got.dtype) + ", the reference " +
         dtype_name(expected.dtype));
  }
  const bool exact_ints = !is_float(expected.dtype);
  int64_t mismatches = 0;
  std::string first;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    std::string problem;
    if (exact_ints) {
      int64_t g = got.get_int(i), e = expected.get_int(i);
      if (g != e) problem = "got " + std::to_string(g) + ", expected " + std::to_string(e);
    } else {
      double g = got.get(i), e = expected.get(i);
      double limit = tolerance.atol + tolerance.rtol * std::fabs(e) +
                     (magnitude ? tolerance.acc * magnitude->get(i) : 0.0);
      bool ok = std::isnan(e)   ? std::isnan(g)
                : std::isinf(e) ? g == e
                                : std::isfinite(g) && std::fabs(g - e) <= limit;
      if (!ok) {
        problem = "got " + number(g) + ", expected " + number(e) + " (|diff| " +
                  number(std::fabs(g - e)) + " > allowed " + number(limit) + ")";
      }
    }
    if (problem.empty()) continue;
    if (mismatches++ == 0) {
      first = "element " + std::to_string(i) + " " + index_text(expected.shape, i) + ": " + problem;
    }
  }
  if (mismatches == 0) return;
  fail(where + " differs from the reference at " + std::to_string(mismatches) + " of " +
       std::to_string(expected.numel()) + " elements; first " + first + "; tolerance " +
       tolerance.text() + " for " + dtype_name(expected.dtype) +
       ". The device's kernel computed a different value than the plain reference "
       "(conformance/reference)");
}

bool may_flush_subnormals(DLDataType dtype) {
  return class_of(dtype) == kF32 || class_of(dtype) == kBF16;
}

double round_to_dtype(DLDataType dtype, double x) { return round_to(dtype, x); }
double next_in_dtype(DLDataType dtype, double r, bool up) { return neighbour(dtype, r, up); }

double smallest_normal(DLDataType dtype) {
  switch (class_of(dtype)) {
    case kF16:
      return 0x1p-14;
    case kBF16:
    case kF32:
      return 0x1p-126;
    default:
      return 0x1p-1022;
  }
}

Tolerance relative_tolerance(DLDataType dtype, Family family) {
  Tolerance t = tolerance_for(dtype, family);
  switch (class_of(dtype)) {
    case kF16:
      t.atol = 0x1p-24;  // one step of f16's subnormal grid
      break;
    case kF64:
      t.atol = 0x1p-1073;
      break;
    case kF32:
    case kBF16:
      t.atol = smallest_normal(dtype);  // flushing a subnormal result to zero is allowed
      break;
    default:
      break;
  }
  return t;
}

void expect_bits(const std::string& what, size_t output, const HostTensor& got,
                 const HostTensor& expected) {
  const std::string where = what + ": output " + std::to_string(output);
  if (got.shape != expected.shape || !(got.dtype == expected.dtype)) {
    fail(where + " is " + dtype_name(got.dtype) + shape_text(got.shape) + ", the reference " +
         dtype_name(expected.dtype) + shape_text(expected.shape));
  }
  const size_t size = dtype_size(expected.dtype);
  const bool floats = is_float(expected.dtype);
  const bool flush = floats && may_flush_subnormals(expected.dtype);
  int64_t mismatches = 0;
  std::string first;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if (std::memcmp(got.bytes.data() + size_t(i) * size, expected.bytes.data() + size_t(i) * size,
                    size) == 0) {
      continue;
    }
    if (floats) {
      const double g = got.get(i), e = expected.get(i);
      if (std::isnan(g) && std::isnan(e)) continue;
      if (flush && g == 0 && e != 0 && std::fabs(e) < smallest_normal(expected.dtype)) continue;
    }
    if (mismatches++ == 0) {
      first = "element " + std::to_string(i) + " " + index_text(expected.shape, i) + ": got " +
              number(got.get(i)) + " (" + bits_text(got, i) + "), expected " +
              number(expected.get(i)) + " (" + bits_text(expected, i) + ")";
    }
  }
  if (mismatches == 0) return;
  fail(where + " is not the correctly rounded result at " + std::to_string(mismatches) + " of " +
       std::to_string(expected.numel()) + " elements; first " + first +
       ". docs/ops.md promises this result exactly (round to nearest, ties to even; "
       "NaN stays NaN, overflow gives inf)");
}

RoundingBias rounding_bias(const HostTensor& got, const HostTensor& exact, double min_magnitude) {
  RoundingBias bias;
  double signed_sum = 0, away_sum = 0;
  for (int64_t i = 0; i < exact.numel(); ++i) {
    const double x = exact.get(i), g = got.get(i);
    if (!std::isfinite(x) || !std::isfinite(g) || std::fabs(x) < min_magnitude) continue;
    const double r = round_to(got.dtype, x);
    if (r == x || !std::isfinite(r)) continue;  // exact, or beyond the largest finite value
    const double lo = r > x ? neighbour(got.dtype, r, false) : r;
    const double hi = r > x ? r : neighbour(got.dtype, r, true);
    if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
    const double error = std::clamp((g - x) / (hi - lo), -1.0, 1.0);
    signed_sum += error;
    away_sum += x > 0 ? error : -error;
    ++bias.count;
  }
  if (bias.count > 0) {
    bias.signed_mean = signed_sum / double(bias.count);
    bias.away_mean = away_sum / double(bias.count);
    // Each error lies in [-0.5, 0.5] when rounded correctly, so each mean has
    // a standard deviation of at most 0.5 / sqrt(count): 2 / sqrt(count) is
    // four of them. The allowance covers a device that computes in a wider
    // type with a few ulp of error there (its errors move the rounding of a
    // vanishing fraction of elements).
    bias.limit = kBiasAllowance + 2 / std::sqrt(double(bias.count));
  }
  return bias;
}

void expect_unbiased(const std::string& what, size_t output, const HostTensor& got,
                     const HostTensor& exact, double min_magnitude, int64_t min_count) {
  const std::string where = what + ": output " + std::to_string(output);
  if (got.shape != exact.shape) {
    fail(where + " has shape " + shape_text(got.shape) + ", the reference " +
         shape_text(exact.shape));
  }
  const RoundingBias bias = rounding_bias(got, exact, min_magnitude);
  if (bias.count < min_count) {
    fail(where + ": only " + std::to_string(bias.count) + " of " + std::to_string(exact.numel()) +
         " results are inexact in " + dtype_name(got.dtype) +
         ", too few to measure a rounding bias (a conformance suite problem: the case needs "
         "other inputs)");
  }
  const bool toward = std::fabs(bias.away_mean) > bias.limit;
  const bool directed = std::fabs(bias.signed_mean) > bias.limit;
  if (!toward && !directed) return;
  fail(where + " is rounded with a bias: over " + std::to_string(bias.count) +
       " inexact results the mean error is " + number(bias.signed_mean) + " ulp (" +
       number(bias.away_mean) + " ulp away from zero; " +
       (bias.away_mean < 0 ? "negative: toward zero" : "positive: away from zero") +
       "), and round to nearest even keeps both within +-" + number(bias.limit) +
       " ulp. Every result may be within the tolerance, yet the device rounds " +
       (toward ? (bias.away_mean < 0 ? "toward zero (truncates)" : "away from zero")
               : (bias.signed_mean < 0 ? "down (toward -inf)" : "up (toward +inf)")) +
       " instead of to nearest, as docs/ops.md requires");
}

}  // namespace oar::conformance
