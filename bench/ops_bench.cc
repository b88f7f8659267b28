// Operator throughput on the cpu plugin next to its baselines, in one run:
// f32 matmul 1024^3 through OAR vs cblas_sgemm called directly, and a large
// elementwise add vs memcpy. "touched" counters count bytes read + written.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstring>
#include <vector>

#include "bench/bench_util.h"
#include "oar/ops.hpp"

namespace oar::bench {
namespace {

constexpr int kN = 1024;
constexpr size_t kAddElements = 16u << 20;  // 64 MiB per f32 tensor

void set_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops_per_iteration * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void set_touched(benchmark::State& state, double bytes_per_iteration) {
  state.counters["touched_GB/s"] = benchmark::Counter(
      bytes_per_iteration * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void BM_SgemmDirect1024(benchmark::State& state) {
  std::vector<float> a(kN * kN, 0.5f), b(kN * kN, 0.25f), c(kN * kN);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.0f, a.data(), kN, b.data(),
                kN, 0.0f, c.data(), kN);
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * kN * kN * kN);
}
BENCHMARK(BM_SgemmDirect1024)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_MatmulOar1024(benchmark::State& state) {
  Device& device = cpu();
  Stream& stream = device.default_stream();
  Tensor a = Tensor::empty(device, {kN, kN}, dtype::f32);
  Tensor b = Tensor::empty(device, {kN, kN}, dtype::f32);
  Tensor c = Tensor::empty(device, {kN, kN}, dtype::f32);
  std::vector<float> host(kN * kN, 0.5f);
  a.copy_from_host(stream, host.data());
  b.copy_from_host(stream, host.data());
  stream.synchronize();
  for (auto _ : state) {
    ops::matmul(stream, a, b, c);
    stream.synchronize();
  }
  set_flops(state, 2.0 * kN * kN * kN);
}
BENCHMARK(BM_MatmulOar1024)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_MemcpyLarge(benchmark::State& state) {
  std::vector<float> src(kAddElements, 1.0f), dst(kAddElements, 2.0f);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kAddElements * sizeof(float));
    benchmark::ClobberMemory();
  }
  set_touched(state, 2.0 * kAddElements * sizeof(float));
}
BENCHMARK(BM_MemcpyLarge)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_AddLargeOar(benchmark::State& state) {
  Device& device = cpu();
  Stream& stream = device.default_stream();
  Tensor a = Tensor::empty(device, {int64_t(kAddElements)}, dtype::f32);
  Tensor b = Tensor::empty(device, {int64_t(kAddElements)}, dtype::f32);
  Tensor c = Tensor::empty(device, {int64_t(kAddElements)}, dtype::f32);
  std::vector<float> host(kAddElements, 1.5f);
  for (Tensor* t : {&a, &b, &c}) t->copy_from_host(stream, host.data());  // touch every page
  stream.synchronize();
  const OpId add("add");
  for (auto _ : state) {
    dispatch(stream, add, {&a, &b}, {&c});
    stream.synchronize();
  }
  set_touched(state, 3.0 * kAddElements * sizeof(float));
}
BENCHMARK(BM_AddLargeOar)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace oar::bench
