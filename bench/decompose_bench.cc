// Decompositions (issue 17, docs/performance.md "Decompositions"): what a
// primitives-only plugin gives up, measured on the cpu plugin in one run.
//
// - Model/<name>: the three conformance models (an MLP, a conv net, a
//   transformer block; forward, f32, the model suite's shapes) with the
//   plugin's kernels (native) and with every operator that has a
//   decomposition forced through it (decomposed), interleaved; counters:
//   median ms of each and their ratio.
// - Overhead/<op>: one composite call forced through its decomposition
//   against the same primitives called one by one through ops::call (what
//   the decomposition dispatches), interleaved, 64 calls between
//   synchronizes on tiny tensors; counters: median µs per call of each and
//   the difference (the decomposition's own cost: schema checks, the Graph,
//   scratch allocation).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/interleave.h"
#include "core/ops/decompositions/decompose.h"
#include "oar/oar.hpp"

namespace oar::bench {
namespace {

Tensor random_tensor(Device& device, std::vector<int64_t> shape, uint32_t seed, double scale) {
  Tensor t = Tensor::empty(device, std::move(shape), dtype::f32);
  std::vector<float> v(size_t(t.numel()));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-float(scale), float(scale));
  for (float& x : v) x = dist(rng);
  t.copy_from_host(device.default_stream(), v.data());
  return t;
}

Tensor call(Stream& s, const char* op, std::vector<const Tensor*> in,
            std::initializer_list<Attr> attrs = {}) {
  return ops::call(s, op, in, attrs)[0];
}

// The model suite's three forward passes (conformance/suites/models).
struct Models {
  explicit Models(Device& d) {
    mlp = {random_tensor(d, {16, 64}, 1, 1), random_tensor(d, {64, 128}, 2, 0.1),
           random_tensor(d, {128}, 3, 0.1), random_tensor(d, {128, 10}, 4, 0.1),
           random_tensor(d, {10}, 5, 0.1)};
    target = Tensor::empty(d, {16}, dtype::i64);
    std::vector<int64_t> t(16);
    for (size_t i = 0; i < t.size(); ++i) t[i] = int64_t(i % 10);
    target.copy_from_host(d.default_stream(), t.data());
    conv = {random_tensor(d, {2, 3, 16, 16}, 6, 1), random_tensor(d, {8, 3, 3, 3}, 7, 0.3),
            random_tensor(d, {8}, 8, 0.1),          random_tensor(d, {8}, 9, 0.1),
            random_tensor(d, {8}, 10, 0.1),         random_tensor(d, {8}, 11, 0.1),
            random_tensor(d, {8}, 12, 0.1),         random_tensor(d, {16, 8, 3, 3}, 13, 0.2),
            random_tensor(d, {16, 10}, 14, 0.2),    random_tensor(d, {10}, 15, 0.1)};
    Tensor var = call(d.default_stream(), "abs", {&conv[3]});
    conv[3] = call(d.default_stream(), "add", {&var, &conv[4]});  // positive-ish variance
    block = {random_tensor(d, {2, 16, 32}, 16, 1), random_tensor(d, {32}, 17, 1),
             random_tensor(d, {32, 32}, 18, 0.2),  random_tensor(d, {32, 32}, 19, 0.2),
             random_tensor(d, {32, 32}, 20, 0.2),  random_tensor(d, {32, 32}, 21, 0.2),
             random_tensor(d, {16, 4}, 22, 1),     random_tensor(d, {16, 4}, 23, 1),
             random_tensor(d, {32}, 24, 0.1),      random_tensor(d, {32, 64}, 25, 0.2),
             random_tensor(d, {32, 64}, 26, 0.2),  random_tensor(d, {64, 32}, 27, 0.2)};
    d.default_stream().synchronize();
  }

  void run_mlp(Stream& s) {
    Tensor h = call(s, "matmul", {&mlp[0], &mlp[1]});
    h = call(s, "add", {&h, &mlp[2]});
    h = call(s, "gelu", {&h});
    Tensor logits = call(s, "matmul", {&h, &mlp[3]});
    logits = call(s, "add", {&logits, &mlp[4]});
    call(s, "softmax", {&logits});
    call(s, "cross_entropy", {&logits, &target});
  }

  void run_conv(Stream& s) {
    std::vector<int64_t> one{1}, two{2}, four{4};
    Tensor h = call(s, "conv2d", {&conv[0], &conv[1], &conv[2]}, {Attr("padding", one)});
    h = call(s, "batch_norm", {&h, &conv[5], &conv[3], &conv[6], &conv[4]});
    h = call(s, "relu", {&h});
    h = call(s, "max_pool2d", {&h}, {Attr("kernel_size", two)});
    h = call(s, "conv2d", {&h, &conv[7]}, {Attr("stride", two), Attr("padding", one)});
    h = call(s, "relu", {&h});
    h = call(s, "avg_pool2d", {&h}, {Attr("kernel_size", four)});
    Tensor flat = h.view({2, 16});
    h = call(s, "matmul", {&flat, &conv[8]});
    call(s, "add", {&h, &conv[9]});
  }

  void run_block(Stream& s) {
    const std::vector<Tensor>& b = block;
    std::vector<int64_t> heads{0, 2, 1, 3};
    Tensor x = b[0];
    Tensor n = call(s, "rms_norm", {&x, &b[1]});
    auto project = [&](const Tensor& w) {
      Tensor p = call(s, "matmul", {&n, &w});
      Tensor split = p.view({2, 16, 4, 8});
      return call(s, "transpose", {&split}, {Attr("perm", heads)});
    };
    Tensor q = project(b[2]), k = project(b[3]), v = project(b[4]);
    q = call(s, "rotary_embedding", {&q, &b[6], &b[7]});
    k = call(s, "rotary_embedding", {&k, &b[6], &b[7]});
    Tensor a = call(s, "scaled_dot_product_attention", {&q, &k, &v}, {Attr("causal", true)});
    a = call(s, "transpose", {&a}, {Attr("perm", heads)});
    Tensor merged = a.view({2, 16, 32});
    Tensor o = call(s, "matmul", {&merged, &b[5]});
    x = call(s, "add", {&x, &o});
    Tensor ln = call(s, "layer_norm", {&x, &b[1], &b[8]});
    Tensor gate = call(s, "matmul", {&ln, &b[9]});
    gate = call(s, "silu", {&gate});
    Tensor up = call(s, "matmul", {&ln, &b[10]});
    Tensor h = call(s, "mul", {&gate, &up});
    h = call(s, "matmul", {&h, &b[11]});
    call(s, "add", {&x, &h});
  }

  std::vector<Tensor> mlp, conv, block;
  Tensor target;
};

Models& models() {
  static Models* m = new Models(cpu());
  return *m;
}

// Native and decomposed runs of |run|, interleaved.
template <typename Run>
void compare_modes(benchmark::State& state, Run run) {
  Device& device = cpu();
  Stream& s = device.default_stream();
  auto variant = [&](decompose::Mode mode) {
    return [&, mode] {
      decompose::set_device_mode(device, mode);
      run(s);
      s.synchronize();
    };
  };
  variant(decompose::Mode::kForce)();  // warm the caching allocator
  variant(decompose::Mode::kFallback)();
  const auto seconds =
      interleave(state, {variant(decompose::Mode::kFallback), variant(decompose::Mode::kForce)});
  decompose::clear_device_mode(device);
  const double native = median(seconds[0]), decomposed = median(seconds[1]);
  state.counters["native_ms"] = native * 1e3;
  state.counters["decomposed_ms"] = decomposed * 1e3;
  state.counters["slowdown"] = decomposed / native;
}

void Model_Mlp(benchmark::State& state) {
  compare_modes(state, [](Stream& s) { models().run_mlp(s); });
}
void Model_ConvNet(benchmark::State& state) {
  compare_modes(state, [](Stream& s) { models().run_conv(s); });
}
void Model_TransformerBlock(benchmark::State& state) {
  compare_modes(state, [](Stream& s) { models().run_block(s); });
}
BENCHMARK(Model_Mlp)->Iterations(40)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(Model_ConvNet)->Iterations(40)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(Model_TransformerBlock)->Iterations(40)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr int kCalls = 64;

// |composite| forced through its decomposition against |primitives| (the
// calls it makes), kCalls of each between synchronizes; per call.
template <typename Composite, typename Primitives>
void compare_overhead(benchmark::State& state, Composite composite, Primitives primitives) {
  Device& device = cpu();
  Stream& s = device.default_stream();
  decompose::set_device_mode(device, decompose::Mode::kForce);
  auto many = [&](auto f) {
    return [&, f] {
      for (int i = 0; i < kCalls; ++i) f(s);
      s.synchronize();
    };
  };
  many(composite)();
  many(primitives)();
  const auto seconds = interleave(state, {many(composite), many(primitives)});
  decompose::clear_device_mode(device);
  const double whole = median(seconds[0]) / kCalls, parts = median(seconds[1]) / kCalls;
  state.counters["composite_us"] = whole * 1e6;
  state.counters["primitives_us"] = parts * 1e6;
  state.counters["overhead_us"] = (whole - parts) * 1e6;
}

Tensor& tiny() {
  static Tensor* t = new Tensor(random_tensor(cpu(), {2, 4}, 30, 2));
  return *t;
}

// gt(a, b) = lt(b, a): one primitive.
void Overhead_Gt(benchmark::State& state) {
  Tensor& x = tiny();
  static Tensor* y = new Tensor(random_tensor(cpu(), {2, 4}, 31, 2));
  compare_overhead(
      state,
      [&](Stream& s) {
        call(s, "gt", {&x, y});
      },
      [&](Stream& s) {
        call(s, "lt", {y, &x});
      });
}

// softmax: max, sub, exp, sum, div.
void Overhead_Softmax(benchmark::State& state) {
  Tensor& x = tiny();
  const std::vector<int64_t> axes{-1};
  compare_overhead(
      state, [&](Stream& s) { call(s, "softmax", {&x}); },
      [&](Stream& s) {
        Tensor m = call(s, "max", {&x}, {Attr("axes", axes), Attr("keepdim", true)});
        Tensor d = call(s, "sub", {&x, &m});
        Tensor e = call(s, "exp", {&d});
        Tensor sum = call(s, "sum", {&e}, {Attr("axes", axes), Attr("keepdim", true)});
        call(s, "div", {&e, &sum});
      });
}

// tril: arange x2, sub, fill (the diagonal), le, fill (the zero), where.
void Overhead_Tril(benchmark::State& state) {
  Tensor& x = tiny();
  compare_overhead(
      state, [&](Stream& s) { call(s, "tril", {&x}); },
      [&](Stream& s) {
        Tensor i = ops::call(s, "arange", {}, AttrList().add("end", 2.0), dtype::i64)[0];
        Tensor j = ops::call(s, "arange", {}, AttrList().add("end", 4.0), dtype::i64)[0];
        Tensor iv = i.view({2, 1}), jv = j.view({1, 4});
        Tensor off = call(s, "sub", {&jv, &iv});
        Tensor diag = ops::fill(s, {}, dtype::i64, 0.0);
        Tensor keep = call(s, "le", {&off, &diag});
        Tensor zero = ops::fill(s, {}, dtype::f32, 0.0);
        call(s, "where", {&keep, &x, &zero});
      });
}

BENCHMARK(Overhead_Gt)->Iterations(200)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(Overhead_Softmax)->Iterations(200)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(Overhead_Tril)->Iterations(200)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace oar::bench
