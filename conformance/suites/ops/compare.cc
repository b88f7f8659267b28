#include "conformance/suites/ops/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

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

}  // namespace oar::conformance
