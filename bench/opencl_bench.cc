// The opencl plugin next to native OpenCL and the cpu plugin, in one run:
//  - EmptyOp: a 1-element op + stream synchronize through OAR vs the same
//    kernel through clEnqueueNDRangeKernel + clFinish (own queue, without and
//    with profiling, which OAR's streams have for timing events); Paired runs
//    OAR, native clFinish and native marker polling interleaved in one loop
//    and reports the medians and their ratios;
//  - Submit1000: 1000 back-to-back 1-element neg dispatches and one
//    synchronize through OAR vs 1000 native enqueues (clSetKernelArg x5 +
//    clEnqueueNDRangeKernel on the profiling queue) and one clFinish: the
//    host CPU each op costs the submitting thread (cpu_us_per_op), which on a
//    machine with few cores competes with the driver's worker threads;
//  - 64 MiB H2D / D2H through OAR vs blocking clEnqueueWriteBuffer/ReadBuffer
//    (separately, and alternating in one loop: Copy64MiB_Paired);
//  - f32 matmul 512^3 (GFLOP/s) and a 16 Mi-element f32 add (touched GB/s:
//    bytes read + written) on opencl and on cpu;
//  - Matmul/Paired: f32 matmul (1024^3 and odd shapes) on opencl and on cpu
//    (OpenBLAS) alternating in one loop: medians and their ratio.
// Run with --benchmark_repetitions=N --benchmark_report_aggregates_only=true.
#include <CL/cl.h>
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "bench/interleave.h"
#include "oar/oar.hpp"
#include "oar/ops.hpp"

namespace oar::bench {
namespace {

constexpr size_t kBytes = 64u << 20;
constexpr int kMatmulN = 512;
constexpr size_t kAddElements = 16u << 20;

Runtime& runtime() {
  static Runtime* instance = [] {
    RuntimeOptions options;
    options.use_environment = false;
    options.search_install_prefix = false;
    options.plugin_files = {OAR_BENCH_OPENCL_MANIFEST, OAR_BENCH_CPU_MANIFEST};
    return new Runtime(options);  // lives until exit: benchmarks share it
  }();
  return *instance;
}

Device* opencl() { return runtime().find_device("opencl:0"); }
Device& cpu() { return runtime().device("cpu:0"); }

std::vector<char>& host_buffer() {
  static std::vector<char> buffer(kBytes, 1);  // touched: no page faults in the loop
  return buffer;
}

// The pause between two polls of a spin-wait, as plugins/common/host_wait.h
// has it: polling without one contends for the lock the driver's thread needs
// to mark the command complete.
void relax() {
  for (int i = 0; i < 16; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

// A context and in-order queue of its own on the first OpenCL device, as an
// application using OpenCL directly would have.
struct Native {
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  // The same with CL_QUEUE_PROFILING_ENABLE, as OAR's streams are created
  // (their events time work): shows what profiling itself costs.
  cl_command_queue profiling_queue = nullptr;
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;

  Native() {
    cl_platform_id platform = nullptr;
    if (clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS) {
      return;
    }
    cl_int code = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &code);
    queue = clCreateCommandQueue(context, device, 0, &code);
    profiling_queue = clCreateCommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE, &code);
    // The same work and arguments as OAR's f32 neg (kernels/elementwise.cl):
    // element offsets, a count, a bounds check, load, negate, store.
    const char* source =
        "__kernel void neg1(__global const float* a, ulong ao, __global float* y, ulong yo,"
        "                   long n) {"
        "  long i = get_global_id(0);"
        "  if (i >= n) return;"
        "  y[yo + i] = -a[ao + i];"
        "}";
    program = clCreateProgramWithSource(context, 1, &source, nullptr, &code);
    clBuildProgram(program, 1, &device, "", nullptr, nullptr);
    kernel = clCreateKernel(program, "neg1", &code);
  }
  bool ok() const { return kernel != nullptr; }

  // Arguments and enqueue, no wait.
  void enqueue_neg(cl_command_queue on, cl_mem x, cl_mem y) const {
    const cl_ulong offset = 0;
    const cl_long count = 1;
    const size_t global = 1;
    clSetKernelArg(kernel, 0, sizeof(x), &x);
    clSetKernelArg(kernel, 1, sizeof(offset), &offset);
    clSetKernelArg(kernel, 2, sizeof(y), &y);
    clSetKernelArg(kernel, 3, sizeof(offset), &offset);
    clSetKernelArg(kernel, 4, sizeof(count), &count);
    clEnqueueNDRangeKernel(on, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr);
  }
  // One round trip: arguments, enqueue, wait.
  void neg(cl_command_queue on, cl_mem x, cl_mem y) const {
    enqueue_neg(on, x, y);
    clFinish(on);
  }
  // The same, waiting as OAR's synchronize does when it polls: a marker,
  // polled until complete, then clFinish (which returns at once).
  void neg_polled(cl_command_queue on, cl_mem x, cl_mem y) const {
    enqueue_neg(on, x, y);
    wait_polled(on);
  }
  // That wait alone.
  void wait_polled(cl_command_queue on) const {
    cl_event marker = nullptr;
    clEnqueueMarkerWithWaitList(on, 0, nullptr, &marker);
    clFlush(on);
    cl_int execution = CL_QUEUED;
    while (clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(execution), &execution,
                          nullptr) == CL_SUCCESS &&
           execution > CL_COMPLETE) {
      relax();
    }
    clReleaseEvent(marker);
    clFinish(on);
  }
};

Native& native() {
  static Native* instance = new Native();
  return *instance;
}

void set_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops_per_iteration * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void set_touched(benchmark::State& state, double bytes_per_iteration) {
  state.counters["touched_GB/s"] = benchmark::Counter(
      bytes_per_iteration * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// ---- empty op round trip --------------------------------------------------

// CPU seconds the calling thread has used.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

void BM_EmptyOp_OAR(benchmark::State& state) {
  Device* device = opencl();
  if (device == nullptr) return state.SkipWithError("no opencl device");
  Stream& stream = device->default_stream();
  Tensor x = Tensor::empty(*device, {1}, dtype::f32);
  Tensor y = Tensor::empty(*device, {1}, dtype::f32);
  float one = 1.0f;
  x.copy_from_host(stream, &one);
  const OpId neg("neg");
  dispatch(stream, neg, {&x}, {&y});  // builds the program outside the loop
  stream.synchronize();
  for (auto _ : state) {
    dispatch(stream, neg, {&x}, {&y});
    stream.synchronize();
  }
}
BENCHMARK(BM_EmptyOp_OAR)->UseRealTime()->Unit(benchmark::kMicrosecond);

void empty_op_native(benchmark::State& state, bool profiling) {
  Native& n = native();
  if (!n.ok()) return state.SkipWithError("no OpenCL device");
  cl_command_queue queue = profiling ? n.profiling_queue : n.queue;
  cl_int code = CL_SUCCESS;
  cl_mem x = clCreateBuffer(n.context, CL_MEM_READ_WRITE, 4, nullptr, &code);
  cl_mem y = clCreateBuffer(n.context, CL_MEM_READ_WRITE, 4, nullptr, &code);
  for (auto _ : state) n.neg(queue, x, y);
  clReleaseMemObject(x);
  clReleaseMemObject(y);
}

void BM_EmptyOp_Native(benchmark::State& state) { empty_op_native(state, false); }
BENCHMARK(BM_EmptyOp_Native)->UseRealTime()->Unit(benchmark::kMicrosecond);
void BM_EmptyOp_NativeProfiling(benchmark::State& state) { empty_op_native(state, true); }
BENCHMARK(BM_EmptyOp_NativeProfiling)->UseRealTime()->Unit(benchmark::kMicrosecond);

// OAR and native round trips interleaved in one loop (each variant goes
// first in turn), so all see the same machine state: this machine's wake-up
// latencies drift severalfold over minutes, which separate benchmarks would
// read as overhead. Reports the medians and their ratios: "ratio" against
// native clFinish (the baseline), "ratio_poll" against a native loop
// that polls a marker as OAR's synchronize does (OAR_SYNC_SPIN_US, default
// on), which leaves only what OAR adds; "ratio_p10" compares the fastest
// tenth of OAR's and native clFinish's round trips. OAR waits either way,
// choosing per stream by timing both (HostWait): "ratio_best" compares OAR
// with the faster of the two native loops, what a wait that chooses well and
// adds nothing would reach. Where the time goes: the medians of each
// variant's submit (dispatch / clSetKernelArg + clEnqueueNDRangeKernel) and
// wait (synchronize / clFinish / marker polled + clFinish), *_submit_us and
// *_wait_us. Argument: 1 when the native queue has profiling on, as OAR's
// streams do for timing events.
void BM_EmptyOp_Paired(benchmark::State& state) {
  Device* device = opencl();
  Native& n = native();
  if (device == nullptr || !n.ok()) return state.SkipWithError("no opencl device");
  cl_command_queue queue = state.range(0) != 0 ? n.profiling_queue : n.queue;
  Stream& stream = device->default_stream();
  Tensor x = Tensor::empty(*device, {1}, dtype::f32);
  Tensor y = Tensor::empty(*device, {1}, dtype::f32);
  float one = 1.0f;
  x.copy_from_host(stream, &one);
  const OpId neg("neg");
  cl_int code = CL_SUCCESS;
  cl_mem nx = clCreateBuffer(n.context, CL_MEM_READ_WRITE, 4, nullptr, &code);
  cl_mem ny = clCreateBuffer(n.context, CL_MEM_READ_WRITE, 4, nullptr, &code);
  // Seconds of each variant's submit and wait phases, in the order run.
  std::vector<double> submits[3], waits[3];
  auto timed = [&](int which, auto&& submit, auto&& wait) {
    const auto t0 = std::chrono::steady_clock::now();
    submit();
    const auto t1 = std::chrono::steady_clock::now();
    wait();
    submits[which].push_back(std::chrono::duration<double>(t1 - t0).count());
    waits[which].push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
  };
  auto through_oar = [&] {
    timed(
        0, [&] { dispatch(stream, neg, {&x}, {&y}); }, [&] { stream.synchronize(); });
  };
  through_oar();  // builds the program outside the loop
  n.neg(queue, nx, ny);
  for (auto& phase : submits) phase.clear();
  for (auto& phase : waits) phase.clear();
  // Seconds per round trip: OAR, native clFinish, native polled.
  std::vector<std::vector<double>> samples = interleave(
      state, {through_oar,
              [&] {
                timed(
                    1, [&] { n.enqueue_neg(queue, nx, ny); }, [&] { clFinish(queue); });
              },
              [&] {
                timed(
                    2, [&] { n.enqueue_neg(queue, nx, ny); }, [&] { n.wait_polled(queue); });
              }});
  clReleaseMemObject(nx);
  clReleaseMemObject(ny);
  const double oar = median(samples[0]) * 1e6;
  const double native = median(samples[1]) * 1e6;
  const double polled = median(samples[2]) * 1e6;
  state.counters["oar_us"] = oar;
  state.counters["native_us"] = native;
  state.counters["ratio"] = oar / native;
  state.counters["native_poll_us"] = polled;
  state.counters["ratio_poll"] = oar / polled;
  state.counters["ratio_best"] = oar / std::min(native, polled);
  const char* names[3] = {"oar", "native", "native_poll"};
  for (int i = 0; i < 3; ++i) {
    state.counters[std::string(names[i]) + "_submit_us"] = median(submits[i]) * 1e6;
    state.counters[std::string(names[i]) + "_wait_us"] = median(waits[i]) * 1e6;
  }
  // The fastest tenth of each: what the ratio is when the machine is fast.
  state.counters["ratio_p10"] = quantile(samples[0], 0.1) / quantile(samples[1], 0.1);
}
BENCHMARK(BM_EmptyOp_Paired)->ArgName("native_profiling")->Arg(0)->Arg(1)->Iterations(4000);

// Where a round trip's time goes, OAR against native clFinish on the
// profiling queue, alternating in one loop: medians of the submit (dispatch /
// clSetKernelArg + clEnqueueNDRangeKernel) and of the wait (synchronize /
// clFinish), and per round trip the calling thread's CPU time and context
// switches (voluntary: it slept; involuntary: it was preempted). A diagnosis,
// not a target: the getrusage calls around each round trip cost the thread
// CPU of their own, outside the timed phases.
void BM_EmptyOp_Split(benchmark::State& state) {
  Device* device = opencl();
  Native& n = native();
  if (device == nullptr || !n.ok()) return state.SkipWithError("no opencl device");
  Stream& stream = device->default_stream();
  Tensor x = Tensor::empty(*device, {1}, dtype::f32);
  Tensor y = Tensor::empty(*device, {1}, dtype::f32);
  float one = 1.0f;
  x.copy_from_host(stream, &one);
  const OpId neg("neg");
  cl_int code = CL_SUCCESS;
  cl_mem nx = clCreateBuffer(n.context, CL_MEM_READ_WRITE, 4, nullptr, &code);
  cl_mem ny = clCreateBuffer(n.context, CL_MEM_READ_WRITE, 4, nullptr, &code);
  dispatch(stream, neg, {&x}, {&y});  // builds the program outside the loop
  stream.synchronize();
  n.neg(n.profiling_queue, nx, ny);
  struct Phases {
    std::vector<double> submit, wait;
    double cpu = 0;
    long voluntary = 0, involuntary = 0;
  };
  Phases phases[2];  // OAR, native
  size_t first = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < 2; ++k) {
      size_t which = (first + k) % 2;
      Phases& p = phases[which];
      rusage before{};
      getrusage(RUSAGE_THREAD, &before);
      double cpu_start = thread_cpu_seconds();
      auto t0 = std::chrono::steady_clock::now();
      if (which == 0) {
        dispatch(stream, neg, {&x}, {&y});
      } else {
        n.enqueue_neg(n.profiling_queue, nx, ny);
      }
      auto t1 = std::chrono::steady_clock::now();
      if (which == 0) {
        stream.synchronize();
      } else {
        clFinish(n.profiling_queue);
      }
      auto t2 = std::chrono::steady_clock::now();
      p.cpu += thread_cpu_seconds() - cpu_start;
      rusage after{};
      getrusage(RUSAGE_THREAD, &after);
      p.submit.push_back(std::chrono::duration<double>(t1 - t0).count());
      p.wait.push_back(std::chrono::duration<double>(t2 - t1).count());
      p.voluntary += after.ru_nvcsw - before.ru_nvcsw;
      p.involuntary += after.ru_nivcsw - before.ru_nivcsw;
    }
    first = (first + 1) % 2;
  }
  clReleaseMemObject(nx);
  clReleaseMemObject(ny);
  const double trips = double(state.iterations());
  const char* names[2] = {"oar", "native"};
  for (size_t i = 0; i < 2; ++i) {
    const std::string name = names[i];
    state.counters[name + "_submit_us"] = median(phases[i].submit) * 1e6;
    state.counters[name + "_wait_us"] = median(phases[i].wait) * 1e6;
    state.counters[name + "_cpu_us"] = phases[i].cpu * 1e6 / trips;
    state.counters[name + "_sleeps"] = double(phases[i].voluntary) / trips;
    state.counters[name + "_preempted"] = double(phases[i].involuntary) / trips;
  }
}
BENCHMARK(BM_EmptyOp_Split)->Iterations(4000);

// ---- submission cost: 1000 ops, one wait ----------------------------------

constexpr int kSubmitOps = 1000;

// Per-op figures of a Submit1000 run: the submitting thread's CPU (the host
// cost of an op: arguments, checks, enqueue) and wall time.
void set_per_op(benchmark::State& state, double cpu_seconds, double real_seconds) {
  double ops = double(state.iterations()) * kSubmitOps;
  state.counters["cpu_us_per_op"] = cpu_seconds * 1e6 / ops;
  state.counters["real_us_per_op"] = real_seconds * 1e6 / ops;
}

// 1000 1-element f32 neg through OAR (dispatch each), then one
// stream synchronize.
void BM_Submit1000_OAR(benchmark::State& state) {
  Device* device = opencl();
  if (device == nullptr) return state.SkipWithError("no opencl device");
  Stream& stream = device->default_stream();
  Tensor x = Tensor::empty(*device, {1}, dtype::f32);
  Tensor y = Tensor::empty(*device, {1}, dtype::f32);
  float one = 1.0f;
  x.copy_from_host(stream, &one);
  const OpId neg("neg");
  dispatch(stream, neg, {&x}, {&y});  // builds the program outside the loop
  stream.synchronize();
  double cpu = 0;
  double real = 0;
  for (auto _ : state) {
    double cpu_start = thread_cpu_seconds();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kSubmitOps; ++i) dispatch(stream, neg, {&x}, {&y});
    stream.synchronize();
    real += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    cpu += thread_cpu_seconds() - cpu_start;
  }
  set_per_op(state, cpu, real);
}
BENCHMARK(BM_Submit1000_OAR)->UseRealTime()->Unit(benchmark::kMicrosecond);

// The same kernel signature natively on the profiling queue (as OAR's streams
// have profiling on): 1000 x (clSetKernelArg x5 + clEnqueueNDRangeKernel),
// then one clFinish.
void BM_Submit1000_Native(benchmark::State& state) {
  Native& n = native();
  if (!n.ok()) return state.SkipWithError("no OpenCL device");
  cl_command_queue queue = n.profiling_queue;
  cl_int code = CL_SUCCESS;
  cl_mem x = clCreateBuffer(n.context, CL_MEM_READ_WRITE, 4, nullptr, &code);
  cl_mem y = clCreateBuffer(n.context, CL_MEM_READ_WRITE, 4, nullptr, &code);
  n.neg(queue, x, y);
  double cpu = 0;
  double real = 0;
  for (auto _ : state) {
    double cpu_start = thread_cpu_seconds();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kSubmitOps; ++i) n.enqueue_neg(queue, x, y);
    clFinish(queue);
    real += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    cpu += thread_cpu_seconds() - cpu_start;
  }
  set_per_op(state, cpu, real);
  clReleaseMemObject(x);
  clReleaseMemObject(y);
}
BENCHMARK(BM_Submit1000_Native)->UseRealTime()->Unit(benchmark::kMicrosecond);

// ---- 64 MiB copies --------------------------------------------------------

// A 64 MiB copy through OAR on the default stream, to completion: pageable
// host memory to a device buffer (to_host false) or back.
struct OarCopy {
  bool to_host;
  Stream& stream;
  Buffer buffer;

  OarCopy(Device& device, bool to_host_)
      : to_host(to_host_), stream(device.default_stream()), buffer(device.allocate(kBytes)) {
    stream.fill(buffer, 0, 3, kBytes);
    stream.synchronize();
  }
  void run() {
    static std::vector<char> destination(kBytes, 2);  // touched: no page faults in the loop
    if (to_host) {
      stream.copy_to_host(destination.data(), buffer, 0, kBytes);
    } else {
      stream.copy_from_host(buffer, 0, host_buffer().data(), kBytes);
    }
    stream.synchronize();
  }
};

// The same natively: a blocking clEnqueueWriteBuffer / clEnqueueReadBuffer on
// an in-order queue of the native context.
struct NativeCopy {
  bool to_host;
  Native& n;
  cl_mem buffer = nullptr;

  NativeCopy(Native& native, bool to_host_) : to_host(to_host_), n(native) {
    cl_int code = CL_SUCCESS;
    buffer = clCreateBuffer(n.context, CL_MEM_READ_WRITE, kBytes, nullptr, &code);
    char three = 3;
    clEnqueueFillBuffer(n.queue, buffer, &three, 1, 0, kBytes, 0, nullptr, nullptr);
    clFinish(n.queue);
  }
  NativeCopy(const NativeCopy&) = delete;
  NativeCopy& operator=(const NativeCopy&) = delete;
  ~NativeCopy() { clReleaseMemObject(buffer); }
  void run() {
    static std::vector<char> destination(kBytes, 2);
    if (to_host) {
      clEnqueueReadBuffer(n.queue, buffer, CL_TRUE, 0, kBytes, destination.data(), 0, nullptr,
                          nullptr);
    } else {
      clEnqueueWriteBuffer(n.queue, buffer, CL_TRUE, 0, kBytes, host_buffer().data(), 0, nullptr,
                           nullptr);
    }
  }
};

void copy_oar(benchmark::State& state, bool to_host) {
  Device* device = opencl();
  if (device == nullptr) return state.SkipWithError("no opencl device");
  OarCopy copy(*device, to_host);
  for (auto _ : state) copy.run();
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBytes));
}

void copy_native(benchmark::State& state, bool to_host) {
  Native& n = native();
  if (!n.ok()) return state.SkipWithError("no OpenCL device");
  NativeCopy copy(n, to_host);
  for (auto _ : state) copy.run();
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBytes));
}

void BM_H2D64MiB_OAR(benchmark::State& state) { copy_oar(state, false); }
BENCHMARK(BM_H2D64MiB_OAR)->UseRealTime()->Unit(benchmark::kMillisecond);
void BM_H2D64MiB_Native(benchmark::State& state) { copy_native(state, false); }
BENCHMARK(BM_H2D64MiB_Native)->UseRealTime()->Unit(benchmark::kMillisecond);
void BM_D2H64MiB_OAR(benchmark::State& state) { copy_oar(state, true); }
BENCHMARK(BM_D2H64MiB_OAR)->UseRealTime()->Unit(benchmark::kMillisecond);
void BM_D2H64MiB_Native(benchmark::State& state) { copy_native(state, true); }
BENCHMARK(BM_D2H64MiB_Native)->UseRealTime()->Unit(benchmark::kMillisecond);

// OAR and native 64 MiB copies interleaved in one loop (each first in turn),
// as the machine's speed drifts between runs. Argument: to_host (0 host to
// device, 1 device to host). Counters: oar_GB/s, native_GB/s (medians over
// the copies) and ratio = OAR / native. Two native buffers measured this way
// against each other spread 0.84-1.21 across runs: compare means of runs.
void BM_Copy64MiB_Paired(benchmark::State& state) {
  Device* device = opencl();
  Native& n = native();
  if (device == nullptr || !n.ok()) return state.SkipWithError("no opencl device");
  const bool to_host = state.range(0) != 0;
  OarCopy oar_copy(*device, to_host);
  NativeCopy native_copy(n, to_host);
  std::vector<std::vector<double>> seconds =
      interleave(state, {[&] { oar_copy.run(); }, [&] { native_copy.run(); }});
  const double oar = median(rates(seconds[0], kBytes / 1e9));
  const double native = median(rates(seconds[1], kBytes / 1e9));
  state.counters["oar_GB/s"] = oar;
  state.counters["native_GB/s"] = native;
  state.counters["ratio"] = oar / native;
}
BENCHMARK(BM_Copy64MiB_Paired)
    ->ArgName("to_host")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(60)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---- matmul and add: opencl vs cpu ----------------------------------------

void matmul_on(benchmark::State& state, Device* device) {
  if (device == nullptr) return state.SkipWithError("no such device");
  Stream& stream = device->default_stream();
  const int n = kMatmulN;
  Tensor a = Tensor::empty(*device, {n, n}, dtype::f32);
  Tensor b = Tensor::empty(*device, {n, n}, dtype::f32);
  Tensor c = Tensor::empty(*device, {n, n}, dtype::f32);
  std::vector<float> host(size_t(n) * n, 0.5f);
  a.copy_from_host(stream, host.data());
  b.copy_from_host(stream, host.data());
  ops::matmul(stream, a, b, c);  // warm: program build, first-use costs
  stream.synchronize();
  for (auto _ : state) {
    ops::matmul(stream, a, b, c);
    stream.synchronize();
  }
  set_flops(state, 2.0 * n * n * n);
}

void BM_Matmul512_OpenCL(benchmark::State& state) { matmul_on(state, opencl()); }
BENCHMARK(BM_Matmul512_OpenCL)->UseRealTime()->Unit(benchmark::kMillisecond);
void BM_Matmul512_Cpu(benchmark::State& state) { matmul_on(state, &cpu()); }
BENCHMARK(BM_Matmul512_Cpu)->UseRealTime()->Unit(benchmark::kMillisecond);

// An f32 matmul [m, k] x [k, n] on |device|, inputs filled, run once (the
// program built, first-use costs paid).
struct MatmulOn {
  Stream& stream;
  Tensor a, b, c;
  MatmulOn(Device& device, int64_t m, int64_t n, int64_t k)
      : stream(device.default_stream()),
        a(Tensor::empty(device, {m, k}, dtype::f32)),
        b(Tensor::empty(device, {k, n}, dtype::f32)),
        c(Tensor::empty(device, {m, n}, dtype::f32)) {
    std::vector<float> host(size_t(std::max(m, n) * k));
    for (size_t i = 0; i < host.size(); ++i) host[i] = float(i % 7) * 0.25f - 0.5f;
    a.copy_from_host(stream, host.data());
    b.copy_from_host(stream, host.data());
    run();
  }
  void run() {
    ops::matmul(stream, a, b, c);
    stream.synchronize();
  }
};

// f32 matmul of shape (m, n, k) on opencl and on the cpu plugin (OpenBLAS on
// the same cores) alternating in one loop, each first in turn: counters
// opencl_GFLOP/s, cpu_GFLOP/s (medians) and ratio = opencl / cpu, the
// figure issue 18 asks for (>= 0.6 at 1024^3).
void BM_Matmul_Paired(benchmark::State& state) {
  Device* device = opencl();
  if (device == nullptr) return state.SkipWithError("no opencl device");
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  MatmulOn on_opencl(*device, m, n, k);
  MatmulOn on_cpu(cpu(), m, n, k);
  std::vector<std::vector<double>> seconds =
      interleave(state, {[&] { on_opencl.run(); }, [&] { on_cpu.run(); }});
  const double flops = 2.0 * double(m) * double(n) * double(k) / 1e9;
  const double ocl = median(rates(seconds[0], flops));
  const double blas = median(rates(seconds[1], flops));
  state.counters["opencl_GFLOP/s"] = ocl;
  state.counters["cpu_GFLOP/s"] = blas;
  state.counters["ratio"] = ocl / blas;
}
BENCHMARK(BM_Matmul_Paired)
    ->ArgNames({"m", "n", "k"})
    ->Args({1024, 1024, 1024})
    ->Args({1000, 1000, 1000})
    ->Args({512, 512, 512})
    ->Iterations(10)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void add_on(benchmark::State& state, Device* device) {
  if (device == nullptr) return state.SkipWithError("no such device");
  Stream& stream = device->default_stream();
  Tensor a = Tensor::empty(*device, {int64_t(kAddElements)}, dtype::f32);
  Tensor b = Tensor::empty(*device, {int64_t(kAddElements)}, dtype::f32);
  Tensor c = Tensor::empty(*device, {int64_t(kAddElements)}, dtype::f32);
  std::vector<float> host(kAddElements, 1.5f);
  for (Tensor* t : {&a, &b, &c}) t->copy_from_host(stream, host.data());  // touch every page
  const OpId add("add");
  dispatch(stream, add, {&a, &b}, {&c});
  stream.synchronize();
  for (auto _ : state) {
    dispatch(stream, add, {&a, &b}, {&c});
    stream.synchronize();
  }
  set_touched(state, 3.0 * kAddElements * sizeof(float));
}

void BM_Add16Mi_OpenCL(benchmark::State& state) { add_on(state, opencl()); }
BENCHMARK(BM_Add16Mi_OpenCL)->UseRealTime()->Unit(benchmark::kMillisecond);
void BM_Add16Mi_Cpu(benchmark::State& state) { add_on(state, &cpu()); }
BENCHMARK(BM_Add16Mi_Cpu)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace oar::bench
