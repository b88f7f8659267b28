// The cuda plugin next to the CUDA driver API and cuBLAS called directly, in
// one run (issue 20, Performance). Each "Paired" benchmark alternates OAR and
// the native path in one loop (bench/interleave.h) and reports the medians
// and their ratio; the targets are in brackets:
//  - EmptyOp_Paired: a 1-element neg + stream synchronize through OAR vs
//    cuLaunchKernel of the same kernel (the plugin's fatbin) +
//    cuStreamSynchronize [ratio <= 1.10];
//  - Copy1GiB_Paired/{h2d,d2h}: 1 GiB between pinned host memory and the
//    device through OAR's stream copies vs cuMemcpy{HtoD,DtoH}Async +
//    cuStreamSynchronize [GB/s ratio >= 0.95];
//  - Matmul8192_Paired/{f16,bf16}: 8192^3 through OAR's matmul vs
//    cublasGemmEx on buffers of its own [TFLOP/s ratio >= 0.95];
//  - AllReduce_Paired: OAR's NCCL path vs all_reduce_perf: not written yet
//    (it needs one rank per GPU, under mpiexec); skipped with that reason.
// Without a GPU (no driver, no device, or the plugin serving none) every
// benchmark skips with the reason and the program exits 0.
// Run: oar_bench_cuda --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/interleave.h"
#include "oar/oar.hpp"
#include "oar/ops.hpp"

namespace oar::bench {
namespace {

Runtime& runtime() {
  static Runtime* instance = new_bench_runtime({OAR_BENCH_CUDA_MANIFEST});
  return *instance;
}

Device* gpu() { return runtime().find_device("cuda:0"); }

// The driver API and cuBLAS, loaded as the plugin loads them, on the same
// device's primary context (the one OAR's plugin uses).
struct Native {
#define OAR_BENCH_CU(X)       \
  X(cuInit)                   \
  X(cuDeviceGet)              \
  X(cuDevicePrimaryCtxRetain) \
  X(cuCtxSetCurrent)          \
  X(cuStreamCreate)           \
  X(cuStreamSynchronize)      \
  X(cuModuleLoadData)         \
  X(cuModuleGetFunction)      \
  X(cuLaunchKernel)           \
  X(cuMemAlloc)               \
  X(cuMemFree)                \
  X(cuMemHostAlloc)           \
  X(cuMemFreeHost)            \
  X(cuMemcpyHtoDAsync)        \
  X(cuMemcpyDtoHAsync)        \
  X(cuMemsetD16)
#define OAR_BENCH_DECLARE(name) decltype(&::name) name = nullptr;
  OAR_BENCH_CU(OAR_BENCH_DECLARE)
#undef OAR_BENCH_DECLARE
  using GemmEx = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int,
                         const void*, int, int, const void*, void*, int, int, int, int);
  int (*cublas_create)(void**) = nullptr;
  int (*cublas_set_stream)(void*, CUstream) = nullptr;
  GemmEx gemm_ex = nullptr;

  std::string why;  // empty when usable
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUfunction neg = nullptr;
  void* blas = nullptr;

  Native() {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (cuda == nullptr) {
      why = "no NVIDIA driver (libcuda.so.1)";
      return;
    }
#define OAR_BENCH_RESOLVE(name) name = reinterpret_cast<decltype(name)>(dlsym(cuda, sym(#name)));
    OAR_BENCH_CU(OAR_BENCH_RESOLVE)
#undef OAR_BENCH_RESOLVE
    CUdevice device = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
        cuCtxSetCurrent(context) != CUDA_SUCCESS ||
        cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
      why = "no CUDA device";
      return;
    }
    std::ifstream file(OAR_BENCH_CUDA_FATBIN, std::ios::binary);
    std::vector<char> image((std::istreambuf_iterator<char>(file)), {});
    CUmodule module = nullptr;
    if (image.empty() || cuModuleLoadData(&module, image.data()) != CUDA_SUCCESS ||
        cuModuleGetFunction(&neg, module, "oar_neg_f32") != CUDA_SUCCESS) {
      why = std::string("cannot load ") + OAR_BENCH_CUDA_FATBIN;
      return;
    }
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
      if (void* library = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
        cublas_create =
            reinterpret_cast<decltype(cublas_create)>(dlsym(library, "cublasCreate_v2"));
        cublas_set_stream =
            reinterpret_cast<decltype(cublas_set_stream)>(dlsym(library, "cublasSetStream_v2"));
        gemm_ex = reinterpret_cast<GemmEx>(dlsym(library, "cublasGemmEx"));
        if (cublas_create != nullptr && cublas_create(&blas) == 0) cublas_set_stream(blas, stream);
        break;
      }
    }
  }
  // cuda.h's macros name the versioned ABI symbols (cuMemAlloc -> cuMemAlloc_v2).
  static const char* sym(const char* name) {
    static const std::pair<const char*, const char*> kVersioned[] = {
        {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2"},
        {"cuMemAlloc", "cuMemAlloc_v2"},
        {"cuMemFree", "cuMemFree_v2"},
        {"cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2"},
        {"cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2"},
        {"cuMemsetD16", "cuMemsetD16_v2"},
        {"cuStreamDestroy", "cuStreamDestroy_v2"}};
    for (const auto& [plain, versioned] : kVersioned) {
      if (std::string(plain) == name) return versioned;
    }
    return name;
  }
  bool ok() const { return why.empty(); }
};

Native& native() {
  static Native* n = new Native();  // lives until exit
  return *n;
}

// Skips |state| unless both OAR and the native path see a GPU.
bool ready(benchmark::State& state) {
  if (!native().ok()) {
    state.SkipWithError(native().why.c_str());
    return false;
  }
  if (gpu() == nullptr) {
    state.SkipWithError("the cuda plugin serves no device (see `oar list`)");
    return false;
  }
  return true;
}

void report(benchmark::State& state, const std::vector<std::vector<double>>& seconds, double amount,
            const char* unit) {
  const double oar = median(rates(seconds[0], amount));
  const double direct = median(rates(seconds[1], amount));
  state.counters[std::string("oar_") + unit] = oar;
  state.counters[std::string("native_") + unit] = direct;
  state.counters["ratio"] = oar / direct;
}

void BM_EmptyOp_Paired(benchmark::State& state) {
  if (!ready(state)) return;
  Native& n = native();
  Stream& stream = gpu()->default_stream();
  Tensor x = ops::fill(stream, {1}, dtype::f32, 1.0);
  Tensor y = Tensor::empty(*gpu(), {1}, dtype::f32);
  const OpId neg("neg");
  CUdeviceptr nx = 0, ny = 0;
  n.cuMemAlloc(&nx, 4);
  n.cuMemAlloc(&ny, 4);
  uint64_t count = 1;
  void* params[] = {&nx, &ny, &count};
  auto direct = [&] {
    n.cuLaunchKernel(n.neg, 1, 1, 1, 256, 1, 1, 0, n.stream, params, nullptr);
    n.cuStreamSynchronize(n.stream);
  };
  auto through_oar = [&] {
    dispatch(stream, neg, {&x}, {&y});
    stream.synchronize();
  };
  through_oar();
  direct();
  const auto seconds = interleave(state, {through_oar, direct});
  const double oar = median(seconds[0]) * 1e6, raw = median(seconds[1]) * 1e6;
  state.counters["oar_us"] = oar;
  state.counters["native_us"] = raw;
  state.counters["ratio"] = oar / raw;  // target <= 1.10
  n.cuMemFree(nx);
  n.cuMemFree(ny);
}
BENCHMARK(BM_EmptyOp_Paired)->Iterations(4000)->UseRealTime();

constexpr size_t kCopyBytes = size_t(1) << 30;

// Argument 0: host to device; 1: device to host. The same pinned host
// buffer on both paths.
void BM_Copy1GiB_Paired(benchmark::State& state) {
  if (!ready(state)) return;
  Native& n = native();
  const bool to_host = state.range(0) != 0;
  void* pinned = nullptr;
  if (n.cuMemHostAlloc(&pinned, kCopyBytes, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS) {
    return state.SkipWithError("cuMemHostAlloc of 1 GiB failed");
  }
  CUdeviceptr device_buffer = 0;
  n.cuMemAlloc(&device_buffer, kCopyBytes);
  Stream& stream = gpu()->default_stream();
  Buffer buffer = gpu()->allocate(kCopyBytes);
  auto through_oar = [&] {
    if (to_host) {
      stream.copy_to_host(pinned, buffer, 0, kCopyBytes);
    } else {
      stream.copy_from_host(buffer, 0, pinned, kCopyBytes);
    }
    stream.synchronize();
  };
  auto direct = [&] {
    if (to_host) {
      n.cuMemcpyDtoHAsync(pinned, device_buffer, kCopyBytes, n.stream);
    } else {
      n.cuMemcpyHtoDAsync(device_buffer, pinned, kCopyBytes, n.stream);
    }
    n.cuStreamSynchronize(n.stream);
  };
  through_oar();
  direct();
  report(state, interleave(state, {through_oar, direct}), double(kCopyBytes) / 1e9,
         "GB/s");  // target ratio >= 0.95
  n.cuMemFree(device_buffer);
  n.cuMemFreeHost(pinned);
}
BENCHMARK(BM_Copy1GiB_Paired)->ArgName("to_host")->Arg(0)->Arg(1)->Iterations(20)->UseRealTime();

constexpr int kMatmulN = 8192;

// Argument 0: f16; 1: bf16. Inputs 0.5 (exact in both), f32 accumulation on
// both paths (cuBLAS: CUBLAS_COMPUTE_32F).
void BM_Matmul8192_Paired(benchmark::State& state) {
  if (!ready(state)) return;
  Native& n = native();
  if (n.gemm_ex == nullptr || n.blas == nullptr) return state.SkipWithError("no cuBLAS");
  const bool bf16 = state.range(0) != 0;
  const DLDataType type = bf16 ? dtype::bf16 : dtype::f16;
  const int cuda_type = bf16 ? 14 : 2;  // CUDA_R_16BF, CUDA_R_16F
  const size_t elements = size_t(kMatmulN) * kMatmulN;
  Stream& stream = gpu()->default_stream();
  Tensor a = ops::fill(stream, {kMatmulN, kMatmulN}, type, 0.5);
  Tensor b = ops::fill(stream, {kMatmulN, kMatmulN}, type, 0.5);
  Tensor c = Tensor::empty(*gpu(), {kMatmulN, kMatmulN}, type);
  CUdeviceptr na = 0, nb = 0, nc = 0;
  n.cuMemAlloc(&na, elements * 2);
  n.cuMemAlloc(&nb, elements * 2);
  n.cuMemAlloc(&nc, elements * 2);
  n.cuMemsetD16(na, bf16 ? 0x3f00 : 0x3800, elements);  // 0.5
  n.cuMemsetD16(nb, bf16 ? 0x3f00 : 0x3800, elements);
  const float alpha = 1.0f, beta = 0.0f;
  auto through_oar = [&] {
    ops::matmul(stream, a, b, c);
    stream.synchronize();
  };
  auto direct = [&] {
    n.gemm_ex(n.blas, 0, 0, kMatmulN, kMatmulN, kMatmulN, &alpha,
              reinterpret_cast<void*>(uintptr_t(nb)), cuda_type, kMatmulN,
              reinterpret_cast<void*>(uintptr_t(na)), cuda_type, kMatmulN, &beta,
              reinterpret_cast<void*>(uintptr_t(nc)), cuda_type, kMatmulN,
              68 /* CUBLAS_COMPUTE_32F */, -1 /* CUBLAS_GEMM_DEFAULT */);
    n.cuStreamSynchronize(n.stream);
  };
  through_oar();
  direct();
  report(state, interleave(state, {through_oar, direct}),
         2.0 * kMatmulN * double(kMatmulN) * kMatmulN / 1e12, "TFLOP/s");  // target >= 0.95
  n.cuMemFree(na);
  n.cuMemFree(nb);
  n.cuMemFree(nc);
}
BENCHMARK(BM_Matmul8192_Paired)->ArgName("bf16")->Arg(0)->Arg(1)->Iterations(20)->UseRealTime();

void BM_AllReduce_Paired(benchmark::State& state) {
  if (!ready(state)) return;
  state.SkipWithError(
      "not written yet: OAR's NCCL all-reduce against all_reduce_perf needs one rank per GPU "
      "under mpiexec (issue 20)");
}
BENCHMARK(BM_AllReduce_Paired)->Iterations(1);

}  // namespace
}  // namespace oar::bench
