// Operator throughput on the cpu plugin next to its baselines, in one run:
// f32 matmul 1024^3 through OAR vs cblas_sgemm called directly, and a large
// elementwise add vs memcpy. "touched" counters count bytes read + written.
// Also: backward kernels against their forward kernels, interleaved
// (BM_FwdBwd_*), the operator set that issue 18 compares with Paddle's
// CPU kernels (BM_CpuOp_*), and attention against its GEMMs
// (BM_AttentionVsSgemm). Figures: docs/performance.md.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "bench/interleave.h"
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

// --- backward kernels against their forward kernels, interleaved (issue 14) ---
//
// One benchmark per pair: every iteration runs the forward and the backward
// operator once each (ops::call with its output allocation, then a
// synchronize), in alternating order, so both see the same machine state.
// Counters: the median wall milliseconds of each and their ratio bwd / fwd.
// Inputs are f32 in [0.5, 1.5) (pool and relu take their common branch).

struct OpRun {
  std::vector<Tensor> inputs;
  std::vector<const Tensor*> pointers;
  std::string op;
  AttrList attrs;
};

std::vector<Tensor> random_inputs(Stream& stream, const std::vector<std::vector<int64_t>>& shapes,
                                  unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.5f, 1.5f);
  std::vector<Tensor> inputs;
  for (const auto& shape : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> host(static_cast<size_t>(n));
    for (float& v : host) v = dist(rng);
    inputs.push_back(Tensor::from_host(stream, host.data(), shape, dtype::f32));
  }
  stream.synchronize();
  return inputs;
}

std::function<void()> op_runner(const std::string& op,
                                const std::vector<std::vector<int64_t>>& shapes,
                                const AttrList& attrs) {
  Stream& stream = cpu().default_stream();
  auto run = std::make_shared<OpRun>();
  run->inputs = random_inputs(stream, shapes, 7);
  for (const Tensor& t : run->inputs) run->pointers.push_back(&t);
  run->op = op;
  run->attrs = attrs;
  return [run, &stream] {
    std::vector<Tensor> out = ops::call(stream, run->op, run->pointers, run->attrs);
    stream.synchronize();
    benchmark::DoNotOptimize(out);
  };
}

using Shapes = std::vector<std::vector<int64_t>>;

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

void fwd_bwd(benchmark::State& state, const std::string& fwd, const Shapes& fwd_shapes,
             const std::string& bwd, const Shapes& bwd_shapes, const AttrList& attrs,
             const AttrList& bwd_attrs) {
  auto f = op_runner(fwd, fwd_shapes, attrs);
  auto b = op_runner(bwd, bwd_shapes, bwd_attrs.empty() ? attrs : bwd_attrs);
  f();  // warm up: caches, the allocator's blocks, OpenMP and BLAS threads
  b();
  // The whole process's CPU time of each run too: on a loaded machine the
  // wall time of a two-thread run is mostly waiting for a core.
  std::vector<double> cpu[2];
  auto with_cpu = [&cpu](const std::function<void()>& run, int which) {
    return [&cpu, run, which] {
      const double start = process_cpu_seconds();
      run();
      cpu[which].push_back(process_cpu_seconds() - start);
    };
  };
  auto seconds = interleave(state, {with_cpu(f, 0), with_cpu(b, 1)});
  const double fwd_ms = median(seconds[0]) * 1e3, bwd_ms = median(seconds[1]) * 1e3;
  state.counters["fwd_ms"] = fwd_ms;
  state.counters["bwd_ms"] = bwd_ms;
  state.counters["bwd/fwd"] = bwd_ms / fwd_ms;
  const double fwd_cpu = median(cpu[0]) * 1e3, bwd_cpu = median(cpu[1]) * 1e3;
  state.counters["fwd_cpu_ms"] = fwd_cpu;
  state.counters["bwd_cpu_ms"] = bwd_cpu;
  state.counters["cpu_bwd/fwd"] = bwd_cpu / fwd_cpu;
  // The fastest tenth's wall time: the runs whose threads all had a core at
  // once. With two or more threads on a loaded machine the median (wall and
  // process CPU, which counts the spinning at OpenMP's barriers) mostly
  // measures the wait for a core; this quantile measures the kernels.
  const double fwd_fast = quantile(seconds[0], 0.1) * 1e3,
               bwd_fast = quantile(seconds[1], 0.1) * 1e3;
  state.counters["fwd_p10_ms"] = fwd_fast;
  state.counters["bwd_p10_ms"] = bwd_fast;
  state.counters["p10_bwd/fwd"] = bwd_fast / fwd_fast;
}

const std::vector<int64_t> kFlat{1 << 20};
const std::vector<int64_t> kRows{256, 1024};
const std::vector<int64_t> kImage{8, 16, 64, 64};
const std::vector<int64_t> kPooled{8, 16, 32, 32};

#define OAR_FWD_BWD_PAIR(name, fwd, fwd_shapes, bwd, bwd_shapes, attrs, ...)         \
  void BM_FwdBwd_##name(benchmark::State& state) {                                   \
    fwd_bwd(state, fwd, fwd_shapes, bwd, bwd_shapes, attrs, AttrList() __VA_ARGS__); \
  }                                                                                  \
  BENCHMARK(BM_FwdBwd_##name)->Iterations(40)->Unit(benchmark::kMillisecond)->UseRealTime()

OAR_FWD_BWD_PAIR(relu, "relu", (Shapes{kFlat}), "relu_grad", (Shapes{kFlat, kFlat}), AttrList());
OAR_FWD_BWD_PAIR(sigmoid, "sigmoid", (Shapes{kFlat}), "sigmoid_grad", (Shapes{kFlat, kFlat}),
                 AttrList());
OAR_FWD_BWD_PAIR(tanh, "tanh", (Shapes{kFlat}), "tanh_grad", (Shapes{kFlat, kFlat}), AttrList());
OAR_FWD_BWD_PAIR(silu, "silu", (Shapes{kFlat}), "silu_grad", (Shapes{kFlat, kFlat}), AttrList());
OAR_FWD_BWD_PAIR(gelu, "gelu", (Shapes{kFlat}), "gelu_grad", (Shapes{kFlat, kFlat}), AttrList());
OAR_FWD_BWD_PAIR(softmax, "softmax", (Shapes{kRows}), "softmax_grad", (Shapes{kRows, kRows}),
                 AttrList());
OAR_FWD_BWD_PAIR(log_softmax, "log_softmax", (Shapes{kRows}), "log_softmax_grad",
                 (Shapes{kRows, kRows}), AttrList());
OAR_FWD_BWD_PAIR(layer_norm, "layer_norm", (Shapes{kRows, {1024}, {1024}}), "layer_norm_grad",
                 (Shapes{kRows, kRows, {1024}}), AttrList());
OAR_FWD_BWD_PAIR(rms_norm, "rms_norm", (Shapes{kRows, {1024}}), "rms_norm_grad",
                 (Shapes{kRows, kRows, {1024}}), AttrList());
OAR_FWD_BWD_PAIR(max_pool2d, "max_pool2d", (Shapes{kImage}), "max_pool2d_grad",
                 (Shapes{kPooled, kImage}),
                 AttrList().add("kernel_size", std::vector<int64_t>{2, 2}));
OAR_FWD_BWD_PAIR(avg_pool2d, "avg_pool2d", (Shapes{kImage}), "avg_pool2d_grad",
                 (Shapes{kPooled, kImage}),
                 AttrList().add("kernel_size", std::vector<int64_t>{2, 2}));
// Not a pair but the floor for relu's: neg (reads one tensor, writes one, like
// relu) against add (reads two, writes one, like relu_grad), both pure streams.
OAR_FWD_BWD_PAIR(stream_floor, "neg", (Shapes{kFlat}), "add", (Shapes{kFlat, kFlat}), AttrList());
// conv2d x [8, 16, 32, 32], weight [32, 16, 3, 3] -> y [8, 32, 30, 30]; each
// gradient is a convolution of the same arithmetic (2 N C K H W KH KW flops).
OAR_FWD_BWD_PAIR(conv2d_input, "conv2d", (Shapes{{8, 16, 32, 32}, {32, 16, 3, 3}}),
                 "conv2d_grad_input", (Shapes{{8, 32, 30, 30}, {32, 16, 3, 3}}), AttrList(),
                 .add("input_size", std::vector<int64_t>{32, 32}));
OAR_FWD_BWD_PAIR(conv2d_weight, "conv2d", (Shapes{{8, 16, 32, 32}, {32, 16, 3, 3}}),
                 "conv2d_grad_weight", (Shapes{{8, 32, 30, 30}, {8, 16, 32, 32}}), AttrList(),
                 .add("kernel_size", std::vector<int64_t>{3, 3}));

// --- the operator set that issue 18 compares with PaddlePaddle's CPU kernels ---
//
// The same shapes as the Paddle comparison (docs/performance.md), f32, one
// ops::call and a synchronize per iteration, wall time.

void oar_op(benchmark::State& state, const std::string& op, const Shapes& shapes,
            const AttrList& attrs, double flops) {
  auto run = op_runner(op, shapes, attrs);
  run();
  for (auto _ : state) run();
  if (flops > 0) set_flops(state, flops);
}

#define OAR_CPU_OP(name, op, shapes, attrs, flops)                                           \
  void BM_CpuOp_##name(benchmark::State& state) { oar_op(state, op, shapes, attrs, flops); } \
  BENCHMARK(BM_CpuOp_##name)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime()

OAR_CPU_OP(matmul_1024, "matmul", (Shapes{{1024, 1024}, {1024, 1024}}), AttrList(),
           2.0 * 1024 * 1024 * 1024);
OAR_CPU_OP(softmax_4096x1024, "softmax", (Shapes{{4096, 1024}}), AttrList(), 0);
OAR_CPU_OP(layer_norm_4096x1024, "layer_norm", (Shapes{{4096, 1024}, {1024}, {1024}}), AttrList(),
           0);
OAR_CPU_OP(gelu_16Mi, "gelu", (Shapes{{16 << 20}}), AttrList(), 0);
OAR_CPU_OP(add_16Mi, "add", (Shapes{{16 << 20}, {16 << 20}}), AttrList(), 0);
OAR_CPU_OP(sum_rows_4096x4096, "sum", (Shapes{{4096, 4096}}),
           AttrList().add("axes", std::vector<int64_t>{1}), 0);
OAR_CPU_OP(conv2d_32x64x56x56_k3, "conv2d", (Shapes{{32, 64, 56, 56}, {64, 64, 3, 3}}),
           AttrList().add("padding", std::vector<int64_t>{1, 1}), 2.0 * 32 * 64 * 56 * 56 * 64 * 9);
OAR_CPU_OP(attention_8x16x512x64, "scaled_dot_product_attention",
           (Shapes{{8, 16, 512, 64}, {8, 16, 512, 64}, {8, 16, 512, 64}}), AttrList(),
           4.0 * 8 * 16 * 512 * 512 * 64);

// --- attention against the GEMMs inside it (issue 18) ---------------------------
//
// scaled_dot_product_attention [8, 16, 512, 64] (no mask) through OAR against
// the two cblas_sgemm calls per head that compute the same products without
// the softmax: s = scale q k^T (512 x 512 x 64), y = s v (512 x 64 x 512),
// interleaved, on as many threads as the plugin's OpenMP uses (OMP_NUM_THREADS,
// else every core): the heads are shared out on std::threads, OpenBLAS on one
// thread in each (as the plugin sets it). Both count 4 B H L^2 D flops.
// Counters: attention/matmul, the GFLOP/s ratio from the median wall times;
// cpu_attention/matmul from the median process CPU times (what a loaded
// machine leaves meaningful for two threads); p10_attention/matmul from the
// fastest tenth.

int bench_threads() {
  const char* text = std::getenv("OMP_NUM_THREADS");
  const int env = text ? std::atoi(text) : 0;
  if (env > 0) return env;
  return std::max(1, int(std::thread::hardware_concurrency()));
}

void BM_AttentionVsSgemm(benchmark::State& state) {
  constexpr int kBatchHeads = 8 * 16, kL = 512, kD = 64;
  const Shapes shapes{{8, 16, kL, kD}, {8, 16, kL, kD}, {8, 16, kL, kD}};
  auto attention = op_runner("scaled_dot_product_attention", shapes, AttrList());
  const int threads = bench_threads();
  const size_t head = size_t(kL) * kD;
  std::vector<float> q(kBatchHeads * head), k(q.size()), v(q.size()), y(q.size());
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (auto* x : {&q, &k, &v}) {
    for (float& e : *x) e = uniform(random);
  }
  std::vector<std::vector<float>> scores(size_t(threads), std::vector<float>(size_t(kL) * kL));
  const float scale = 1.0f / 8.0f;  // 1 / sqrt(64)
  auto heads = [&](int t) {
    for (int h = t; h < kBatchHeads; h += threads) {
      float* s = scores[size_t(t)].data();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kL, kL, kD, scale, q.data() + h * head,
                  kD, k.data() + h * head, kD, 0.0f, s, kL);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kL, kD, kL, 1.0f, s, kL,
                  v.data() + h * head, kD, 0.0f, y.data() + h * head, kD);
    }
  };
  auto sgemm = [&] {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(heads, t);
    heads(0);
    for (auto& t : pool) t.join();
    benchmark::DoNotOptimize(y.data());
  };
  const int blas_threads = openblas_get_num_threads();
  openblas_set_num_threads(1);
  attention();  // warm up: caches, the allocator's blocks, OpenMP's threads
  sgemm();
  std::vector<double> cpu[2];
  auto with_cpu = [&cpu](const std::function<void()>& run, int which) {
    return [&cpu, run, which] {
      const double start = process_cpu_seconds();
      run();
      cpu[which].push_back(process_cpu_seconds() - start);
    };
  };
  auto seconds = interleave(state, {with_cpu(attention, 0), with_cpu(sgemm, 1)});
  openblas_set_num_threads(blas_threads);
  const double flops = 4.0 * kBatchHeads * kL * kL * kD;
  state.counters["threads"] = threads;
  state.counters["attention_GFLOP/s"] = flops / median(seconds[0]) / 1e9;
  state.counters["sgemm_GFLOP/s"] = flops / median(seconds[1]) / 1e9;
  state.counters["attention/matmul"] = median(seconds[1]) / median(seconds[0]);
  state.counters["cpu_attention/matmul"] = median(cpu[1]) / median(cpu[0]);
  state.counters["p10_attention/matmul"] = quantile(seconds[1], 0.1) / quantile(seconds[0], 0.1);
}
BENCHMARK(BM_AttentionVsSgemm)->Iterations(20)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace oar::bench
