// Comparing OAR with a native runtime on a machine whose speed drifts
// severalfold within minutes: the variants run interleaved in one loop, so
// all of them see the same machine state, and are compared by quantiles of
// their samples.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace oar::bench {

// The |q| quantile of |values| (nearest rank; 0.5: the median); 0 when there
// are none.
inline double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  auto at = values.begin() + std::ptrdiff_t(q * double(values.size() - 1));
  std::nth_element(values.begin(), at, values.end());
  return *at;
}

inline double median(std::vector<double> values) { return quantile(std::move(values), 0.5); }

// Each iteration of |state| runs every variant once, a different one first
// each time (in rotation), and times each run: element i of the result holds
// the seconds of every run of variants[i].
inline std::vector<std::vector<double>> interleave(
    benchmark::State& state, const std::vector<std::function<void()>>& variants) {
  std::vector<std::vector<double>> seconds(variants.size());
  size_t first = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < variants.size(); ++k) {
      size_t which = (first + k) % variants.size();
      auto start = std::chrono::steady_clock::now();
      variants[which]();
      seconds[which].push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    first = (first + 1) % variants.size();
  }
  return seconds;
}

// |seconds| as rates: |amount| (bytes, operations) per second.
inline std::vector<double> rates(const std::vector<double>& seconds, double amount) {
  std::vector<double> out;
  out.reserve(seconds.size());
  for (double s : seconds) out.push_back(amount / s);
  return out;
}

}  // namespace oar::bench
