// Core overhead of op dispatch: the same empty kernel called directly through
// a function pointer, and through oar::dispatch (signature hash, O(1) lookup,
// tensor checks, call record) on the cpu device.
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"
#include "core/loader/plugin.h"
#include "oar/ops.hpp"

namespace oar::bench {
namespace {

oar_status_t empty_kernel(const oar_kernel_call_t* call) {
  benchmark::DoNotOptimize(call->inputs);
  return OAR_STATUS_OK;
}

// Registers the empty kernel with the cpu plugin's kernels, as a plugin would.
void register_empty_kernel(Device& device) {
  static bool registered = false;
  if (registered) return;
  const DLDataType dtypes[] = {dtype::f32, dtype::f32, dtype::f32};
  oar_kernel_def_t def{};
  def.struct_size = OAR_KERNEL_DEF_STRUCT_SIZE;
  def.op_name = "bench.empty";
  def.dtypes = dtypes;
  def.num_inputs = 2;
  def.num_outputs = 1;
  def.fn = &empty_kernel;
  Status status = device.plugin().kernels().add(def);
  if (!status.ok()) throw Error(status.code(), status.message());
  registered = true;
}

void BM_DirectKernelCall(benchmark::State& state) {
  Device& device = cpu();
  Tensor a = Tensor::empty(device, {16}, dtype::f32);
  DLTensor tensors[3] = {a.dl(), a.dl(), a.dl()};
  oar_kernel_call_t call{};
  call.struct_size = OAR_KERNEL_CALL_STRUCT_SIZE;
  call.device = device.handle();
  call.stream = device.default_stream().handle();
  call.inputs = tensors;
  call.num_inputs = 2;
  call.outputs = tensors + 2;
  call.num_outputs = 1;
  oar_kernel_fn volatile fn = &empty_kernel;
  for (auto _ : state) {
    oar_status_t code = fn(&call);
    benchmark::DoNotOptimize(code);
  }
}
BENCHMARK(BM_DirectKernelCall);

void BM_DispatchEmptyKernel(benchmark::State& state) {
  Device& device = cpu();
  register_empty_kernel(device);
  Stream& stream = device.default_stream();
  Tensor a = Tensor::empty(device, {16}, dtype::f32);
  Tensor b = Tensor::empty(device, {16}, dtype::f32);
  Tensor out = Tensor::empty(device, {16}, dtype::f32);
  const OpId op("bench.empty");
  for (auto _ : state) dispatch(stream, op, {&a, &b}, {&out});
}
BENCHMARK(BM_DispatchEmptyKernel);

void BM_DispatchEmptyKernelRawDLTensor(benchmark::State& state) {
  Device& device = cpu();
  register_empty_kernel(device);
  Stream& stream = device.default_stream();
  Tensor a = Tensor::empty(device, {16}, dtype::f32);
  DLTensor inputs[2] = {a.dl(), a.dl()};
  DLTensor output = a.dl();
  const OpId op("bench.empty");
  for (auto _ : state) dispatch(stream, op, inputs, 2, &output, 1);
}
BENCHMARK(BM_DispatchEmptyKernelRawDLTensor);

// What the dispatcher adds for an operator of the set: checking dtypes,
// attributes and output shapes against the schema (here: add with broadcast).
void BM_SchemaCheckAdd(benchmark::State& state) {
  Device& device = cpu();
  Tensor a = Tensor::empty(device, {64, 16}, dtype::f32);
  Tensor b = Tensor::empty(device, {16}, dtype::f32);
  DLTensor tensors[3] = {a.dl(), b.dl(), a.dl()};
  const ops::OpSchema& schema = *ops::find_schema("add");
  for (auto _ : state) {
    ops::check_dtypes(schema, tensors, 2, tensors + 2, 1);
    auto shapes = ops::infer_shapes(schema, tensors, 2, nullptr, 0);
    benchmark::DoNotOptimize(shapes);
  }
}
BENCHMARK(BM_SchemaCheckAdd);

}  // namespace
}  // namespace oar::bench
