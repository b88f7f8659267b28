// The op API's own costs: dispatch of a set operator (with its schema check)
// against the empty-kernel path, and backward kernels on cpu against the
// matching forward kernel on the same shapes. Figures: docs/performance.md.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/loader/plugin.h"
#include "core/ops/kernel_registry.h"
#include "oar/ops.hpp"

namespace oar::bench {
namespace {

oar_status_t empty_kernel(const oar_kernel_call_t* call) {
  benchmark::DoNotOptimize(call->inputs);
  return OAR_STATUS_OK;
}

// The cpu plugin's add (f32, f32) -> (f32) with its body swapped for the empty
// kernel while |state| runs: the same dispatch as BM_DispatchEmptyKernel plus
// the schema check of a set operator (broadcast [64, 16] + [16]).
void BM_DispatchSetOpEmptyKernel(benchmark::State& state) {
  Device& device = cpu();
  const DLDataType dtypes[] = {dtype::f32, dtype::f32, dtype::f32};
  auto* entry = const_cast<detail::KernelEntry*>(
      device.plugin().kernels().find(detail::intern_op("add"), dtypes, 2, 1));
  if (entry == nullptr) {
    state.SkipWithError("no add kernel");
    return;
  }
  oar_kernel_fn real = entry->fn;
  entry->fn = &empty_kernel;
  Stream& stream = device.default_stream();
  Tensor a = Tensor::empty(device, {64, 16}, dtype::f32);
  Tensor b = Tensor::empty(device, {16}, dtype::f32);
  Tensor out = Tensor::empty(device, {64, 16}, dtype::f32);
  const OpId op("add");
  for (auto _ : state) dispatch(stream, op, {&a, &b}, {&out});
  entry->fn = real;
}
BENCHMARK(BM_DispatchSetOpEmptyKernel);

// The same with attributes (softmax's axis), still an empty kernel.
void BM_DispatchSetOpWithAttrEmptyKernel(benchmark::State& state) {
  Device& device = cpu();
  const DLDataType dtypes[] = {dtype::f32, dtype::f32};
  auto* entry = const_cast<detail::KernelEntry*>(
      device.plugin().kernels().find(detail::intern_op("softmax"), dtypes, 1, 1));
  if (entry == nullptr) {
    state.SkipWithError("no softmax kernel");
    return;
  }
  oar_kernel_fn real = entry->fn;
  entry->fn = &empty_kernel;
  Stream& stream = device.default_stream();
  Tensor a = Tensor::empty(device, {64, 16}, dtype::f32);
  Tensor out = Tensor::empty(device, {64, 16}, dtype::f32);
  const OpId op("softmax");
  for (auto _ : state) dispatch(stream, op, {&a}, {&out}, {Attr("axis", int64_t(-1))});
  entry->fn = real;
}
BENCHMARK(BM_DispatchSetOpWithAttrEmptyKernel);

// One operator on cpu, f32 inputs of |shapes| (values in [0.5, 1.5), all
// positive so that pool and relu take their common branch; weights too),
// outputs allocated by ops::call, stream synchronized every iteration.
void run_op(benchmark::State& state, const std::string& op,
            const std::vector<std::vector<int64_t>>& shapes, const AttrList& attrs) {
  Device& device = cpu();
  Stream& stream = device.default_stream();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(0.5f, 1.5f);
  std::vector<Tensor> inputs;
  for (const auto& shape : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> host(static_cast<size_t>(n));
    for (float& v : host) v = dist(rng);
    inputs.push_back(Tensor::from_host(stream, host.data(), shape, dtype::f32));
  }
  std::vector<const Tensor*> pointers;
  for (const Tensor& t : inputs) pointers.push_back(&t);
  stream.synchronize();
  int64_t elements = 1;
  for (int64_t d : shapes[0]) elements *= d;
  for (auto _ : state) {
    std::vector<Tensor> out = ops::call(stream, op, pointers, attrs);
    stream.synchronize();
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * elements);
}

const std::vector<int64_t> kFlat{1 << 20};
const std::vector<int64_t> kRows{256, 1024};
const std::vector<int64_t> kImage{8, 16, 64, 64};

// The kernels run on the stream's worker and OpenMP threads, not on the
// benchmark's thread: time is wall-clock, CPU time that of the whole process.
#define OAR_KERNEL_BENCH(fn) \
  BENCHMARK(fn)->Unit(benchmark::kMicrosecond)->UseRealTime()->MeasureProcessCPUTime()

#define OAR_FWD_BWD(name, fwd, fwd_shapes, bwd, bwd_shapes, attrs)                       \
  void BM_Fwd_##name(benchmark::State& state) { run_op(state, fwd, fwd_shapes, attrs); } \
  OAR_KERNEL_BENCH(BM_Fwd_##name);                                                       \
  void BM_Bwd_##name(benchmark::State& state) { run_op(state, bwd, bwd_shapes, attrs); } \
  OAR_KERNEL_BENCH(BM_Bwd_##name)

OAR_FWD_BWD(relu, "relu", {kFlat}, "relu_grad", (std::vector<std::vector<int64_t>>{kFlat, kFlat}),
            AttrList());
OAR_FWD_BWD(sigmoid, "sigmoid", {kFlat}, "sigmoid_grad",
            (std::vector<std::vector<int64_t>>{kFlat, kFlat}), AttrList());
OAR_FWD_BWD(tanh, "tanh", {kFlat}, "tanh_grad", (std::vector<std::vector<int64_t>>{kFlat, kFlat}),
            AttrList());
OAR_FWD_BWD(silu, "silu", {kFlat}, "silu_grad", (std::vector<std::vector<int64_t>>{kFlat, kFlat}),
            AttrList());
OAR_FWD_BWD(gelu, "gelu", {kFlat}, "gelu_grad", (std::vector<std::vector<int64_t>>{kFlat, kFlat}),
            AttrList());
OAR_FWD_BWD(softmax, "softmax", {kRows}, "softmax_grad",
            (std::vector<std::vector<int64_t>>{kRows, kRows}), AttrList());
OAR_FWD_BWD(log_softmax, "log_softmax", {kRows}, "log_softmax_grad",
            (std::vector<std::vector<int64_t>>{kRows, kRows}), AttrList());
OAR_FWD_BWD(layer_norm, "layer_norm", (std::vector<std::vector<int64_t>>{kRows, {1024}, {1024}}),
            "layer_norm_grad", (std::vector<std::vector<int64_t>>{kRows, kRows, {1024}}),
            AttrList());
OAR_FWD_BWD(rms_norm, "rms_norm", (std::vector<std::vector<int64_t>>{kRows, {1024}}),
            "rms_norm_grad", (std::vector<std::vector<int64_t>>{kRows, kRows, {1024}}), AttrList());
OAR_FWD_BWD(max_pool2d, "max_pool2d", {kImage}, "max_pool2d_grad",
            (std::vector<std::vector<int64_t>>{{8, 16, 32, 32}, kImage}),
            AttrList().add("kernel_size", std::vector<int64_t>{2, 2}));
OAR_FWD_BWD(avg_pool2d, "avg_pool2d", {kImage}, "avg_pool2d_grad",
            (std::vector<std::vector<int64_t>>{{8, 16, 32, 32}, kImage}),
            AttrList().add("kernel_size", std::vector<int64_t>{2, 2}));

// conv2d x [8, 16, 32, 32], weight [32, 16, 3, 3] -> y [8, 32, 30, 30]; each
// gradient is a convolution of the same arithmetic (2 N C K H W KH KW flops).
void BM_Fwd_conv2d(benchmark::State& state) {
  run_op(state, "conv2d", {{8, 16, 32, 32}, {32, 16, 3, 3}}, AttrList());
}
OAR_KERNEL_BENCH(BM_Fwd_conv2d);
void BM_Bwd_conv2d_input(benchmark::State& state) {
  run_op(state, "conv2d_grad_input", {{8, 32, 30, 30}, {32, 16, 3, 3}},
         AttrList().add("input_size", std::vector<int64_t>{32, 32}));
}
OAR_KERNEL_BENCH(BM_Bwd_conv2d_input);
void BM_Bwd_conv2d_weight(benchmark::State& state) {
  run_op(state, "conv2d_grad_weight", {{8, 32, 30, 30}, {8, 16, 32, 32}},
         AttrList().add("kernel_size", std::vector<int64_t>{3, 3}));
}
OAR_KERNEL_BENCH(BM_Bwd_conv2d_weight);

}  // namespace
}  // namespace oar::bench
