// Decompositions of the gradients and optimizer steps
// (core/ops/decompositions/gradients.cc, optimizers.cc): each one forced on
// the cpu and sim plugins agrees with the plugin's own kernel within the
// family tolerance of docs/conformance.md that docs/ops.md names for it
// ("Primitives and decompositions"), in f32, f64, f16 and bf16 where claimed;
// the optimizer steps also with their outputs bound to their inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/ops/decompositions/decompose.h"
#include "decompose_test_util.h"
#include "oar/oar.hpp"

namespace oar::testing {
namespace {

Tensor upload_index(Device& device, const std::vector<int64_t>& values, std::vector<int64_t> shape,
                    DLDataType dtype = dtype::i64) {
  Stream& stream = device.default_stream();
  Tensor t = Tensor::empty(device, std::move(shape), dtype::i64);
  t.copy_from_host(stream, values.data());
  if (dtype != dtype::i64) t = ops::cast(stream, t, dtype);
  stream.synchronize();
  return t;
}

// The family tolerances of docs/conformance.md (rtol, atol per dtype).
enum class Family { kTranscendental, kNormalized, kAccumulate };
struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance_for(Family family, DLDataType t) {
  const bool f64 = t == dtype::f64, f16 = t == dtype::f16, bf16 = t == dtype::bf16;
  switch (family) {
    case Family::kTranscendental:
      return f64    ? Tolerance{1e-12, 1e-14}
             : f16  ? Tolerance{2e-3, 2e-5}
             : bf16 ? Tolerance{2e-2, 2e-4}
                    : Tolerance{2e-5, 2e-6};
    case Family::kNormalized:
      return f64    ? Tolerance{1e-10, 1e-12}
             : f16  ? Tolerance{1e-2, 2e-3}
             : bf16 ? Tolerance{4e-2, 2e-2}
                    : Tolerance{5e-5, 5e-6};
    case Family::kAccumulate:
      // rtol / atol of the family; its magnitude term (acc · Σ|terms|) is not
      // used here, so this is the stricter bound.
      return f64    ? Tolerance{1e-12, 1e-14}
             : f16  ? Tolerance{1e-2, 1e-3}
             : bf16 ? Tolerance{4e-2, 1e-2}
                    : Tolerance{1e-5, 1e-6};
  }
  return {0, 0};
}

using Inputs = std::function<std::vector<Tensor>(Device&, DLDataType)>;
using Run = std::function<std::vector<Tensor>(Stream&, const std::vector<Tensor>&)>;
struct Case {
  std::string name;
  std::string op;
  Family family;
  Inputs inputs;
  Run run;
};

std::vector<const Tensor*> pointers(const std::vector<Tensor>& in) {
  std::vector<const Tensor*> p;
  for (const Tensor& t : in) p.push_back(&t);
  return p;
}

// Attributes copied into a list that owns them (Attr borrows its arrays).
AttrList attr_list(std::initializer_list<Attr> attrs) {
  AttrList list;
  for (const Attr& a : attrs) list.add(a.attr);
  return list;
}

Run simple(std::string op, AttrList attrs = {}) {
  return [op, attrs](Stream& s, const std::vector<Tensor>& in) {
    return ops::call(s, op, pointers(in), attrs);
  };
}

// The state dtype of a parameter: f32 for f16/bf16.
DLDataType state_of(DLDataType t) { return (t == dtype::f16 || t == dtype::bf16) ? dtype::f32 : t; }

std::vector<Case> cases() {
  std::vector<Case> c;
  using F = Family;
  // Pointwise gradients: the second input with IEEE specials and tails.
  auto pointwise = [](double lo, double hi, std::vector<double> specials) {
    return [lo, hi, specials](Device& d, DLDataType t) {
      std::vector<double> dy = random_values(97, -4, 4, 1), x = random_values(97, lo, hi, 2);
      for (size_t i = 0; i < specials.size(); ++i) x[i] = specials[i], dy[i] = 1.5;
      dy[90] = kNaN, dy[91] = kInf, x[91] = -1, dy[92] = -kInf, x[92] = 2;
      return std::vector<Tensor>{upload(d, dy, {97}, t), upload(d, x, {97}, t)};
    };
  };
  const std::vector<double> ieee = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0,  -1.0, 0.5,   -0.5,  3.0,
                                    20,   -20,  50,    -50, 100,  -100, 1000, -1000, 30000, -30000};
  c.push_back({"relu_grad", "relu_grad", F::kTranscendental,
               [](Device& d, DLDataType t) {
                 std::vector<double> dy = random_values(40, -4, 4, 3), x(40);
                 for (size_t i = 0; i < x.size(); ++i) x[i] = double(int(i % 7) - 3);
                 x[7] = kNaN, x[8] = kInf, x[9] = -kInf, x[10] = -0.0;
                 dy[0] = kNaN, dy[1] = kInf, dy[2] = -kInf;  // x = -3: masked
                 return std::vector<Tensor>{upload(d, dy, {40}, t), upload(d, x, {40}, t)};
               },
               simple("relu_grad")});
  c.push_back({"sigmoid_grad", "sigmoid_grad", F::kTranscendental,
               pointwise(0, 1, {kNaN, 0.0, -0.0, 1.0, -1.0, 0.5}), simple("sigmoid_grad")});
  c.push_back({"tanh_grad", "tanh_grad", F::kTranscendental,
               pointwise(-1, 1, {kNaN, 0.0, 1.0, -1.0, 0.9995, -0.9995}), simple("tanh_grad")});
  c.push_back(
      {"silu_grad", "silu_grad", F::kTranscendental, pointwise(-6, 6, ieee), simple("silu_grad")});
  c.push_back(
      {"gelu_grad", "gelu_grad", F::kTranscendental, pointwise(-6, 6, ieee), simple("gelu_grad")});
  c.push_back({"gelu_grad_tanh", "gelu_grad", F::kTranscendental, pointwise(-6, 6, ieee),
               simple("gelu_grad", attr_list({Attr("approximate", "tanh")}))});
  // Rows: y as the forward makes it, a NaN row.
  for (const char* op : {"softmax_grad", "log_softmax_grad"}) {
    const bool soft = std::string(op) == "softmax_grad";
    Inputs rows = [soft](Device& d, DLDataType t) {
      std::vector<double> dy = random_values(6 * 37, -4, 4, 4);
      std::vector<double> y = random_values(6 * 37, soft ? 0 : -8, soft ? 1 : 0, 5);
      dy[40] = kNaN;
      return std::vector<Tensor>{upload(d, dy, {6, 37}, t), upload(d, y, {6, 37}, t)};
    };
    c.push_back({op, op, F::kNormalized, rows, simple(op)});
    c.push_back({std::string(op) + "_axis0", op, F::kNormalized, rows,
                 simple(op, attr_list({Attr("axis", int64_t(0))}))});
  }
  for (DLDataType index_type : {dtype::i64, dtype::i32}) {
    c.push_back({std::string("embedding_grad_") + dtype_name(index_type), "embedding_grad",
                 F::kNormalized,
                 [index_type](Device& d, DLDataType t) {
                   return std::vector<Tensor>{
                       upload(d, random_values(2 * 5 * 6, -3, 3, 6), {2, 5, 6}, t),
                       upload_index(d, {3, 0, 2, 2, 1, 3, 3, 3, 0, 2}, {2, 5}, index_type)};
                 },
                 simple("embedding_grad", attr_list({Attr("num_embeddings", int64_t(6))}))});
  }
  for (const char* reduction : {"mean", "sum", "none"}) {
    c.push_back(
        {std::string("cross_entropy_grad_") + reduction, "cross_entropy_grad", F::kNormalized,
         [reduction](Device& d, DLDataType t) {
           std::vector<double> logits = random_values(7 * 11, -4, 4, 7);
           logits[22] = kNaN;  // a NaN row
           for (int i = 33; i < 44; ++i) logits[size_t(i)] += 1000;
           const bool none = std::string(reduction) == "none";
           std::vector<double> dloss = random_values(none ? 7 : 1, 0.5, 2, 8);
           std::vector<int64_t> shape;
           if (none) shape = {7};
           return std::vector<Tensor>{upload(d, dloss, shape, t), upload(d, logits, {7, 11}, t),
                                      upload_index(d, {0, 10, 3, 7, 7, 1, 9}, {7})};
         },
         simple("cross_entropy_grad", attr_list({Attr("reduction", reduction)}))});
  }
  for (bool interleaved : {false, true}) {
    c.push_back({interleaved ? "rotary_embedding_grad_interleaved" : "rotary_embedding_grad",
                 "rotary_embedding_grad", F::kNormalized,
                 [](Device& d, DLDataType t) {
                   std::vector<double> angle = random_values(5 * 4, -3, 3, 9), cs, sn;
                   for (double a : angle) cs.push_back(std::cos(a)), sn.push_back(std::sin(a));
                   return std::vector<Tensor>{upload(d, random_values(80, -2, 2, 10), {2, 5, 8}, t),
                                              upload(d, cs, {5, 4}, t), upload(d, sn, {5, 4}, t)};
                 },
                 simple("rotary_embedding_grad", attr_list({Attr("interleaved", interleaved)}))});
  }
  Inputs norm_inputs = [](Device& d, DLDataType t) {
    std::vector<double> x = random_values(6 * 33, -2, 2, 11);
    for (int i = 0; i < 33; ++i) x[size_t(i)] += 100;  // a row at a common offset
    return std::vector<Tensor>{upload(d, random_values(6 * 33, -2, 2, 12), {2, 3, 33}, t),
                               upload(d, x, {2, 3, 33}, t),
                               upload(d, random_values(33, 0.5, 1.5, 13), {33}, t)};
  };
  c.push_back({"layer_norm_grad", "layer_norm_grad", F::kNormalized, norm_inputs,
               simple("layer_norm_grad")});
  c.push_back(
      {"rms_norm_grad", "rms_norm_grad", F::kNormalized, norm_inputs, simple("rms_norm_grad")});
  // Pools: ties (small integers), a window of -inf, a NaN, overlapping windows.
  struct Pool {
    const char* name;
    std::vector<int64_t> kernel, stride, padding;
    bool include_pad;
  };
  for (const Pool& p : {Pool{"3x3_s2_p1", {3}, {2}, {1}, true}, Pool{"2x3", {2, 3}, {}, {0}, true},
                        Pool{"3x3_s1_p1", {3}, {1}, {1}, true},
                        Pool{"3x3_s1_p1_exclude_pad", {3}, {1}, {1}, false}}) {
    for (const char* op : {"max_pool2d_grad", "avg_pool2d_grad"}) {
      const bool avg = std::string(op) == "avg_pool2d_grad";
      if (!p.include_pad && !avg) continue;
      AttrList forward = attr_list({Attr("kernel_size", p.kernel), Attr("padding", p.padding)});
      if (!p.stride.empty()) forward.add("stride", p.stride);
      AttrList attrs = forward;
      if (avg) attrs.add("count_include_pad", p.include_pad);
      c.push_back({std::string(op) + "_" + p.name, op, F::kNormalized,
                   [forward](Device& d, DLDataType t) {
                     std::vector<double> x(2 * 3 * 7 * 8);
                     std::mt19937 rng(14);
                     for (double& v : x) v = double(int(rng() % 5) - 2);  // many ties
                     x[0] = -kInf, x[1] = -kInf, x[8] = -kInf, x[9] = -kInf;
                     x[60] = kNaN, x[62] = kNaN;
                     x[100] = kInf;
                     // dy has the forward output's shape.
                     Tensor xt = upload(d, x, {2, 3, 7, 8}, t);
                     Tensor y = ops::call(d.default_stream(), "max_pool2d", {&xt}, forward)[0];
                     std::vector<int64_t> shape = y.shape();
                     return std::vector<Tensor>{
                         upload(d, random_values(size_t(y.numel()), -2, 2, 15), shape, t), xt};
                   },
                   simple(op, attrs)});
    }
  }
  struct Conv {
    const char* name;
    int64_t c, o, kh, kw, groups;
    std::vector<int64_t> stride, padding, dilation;
  };
  for (const Conv& v : {Conv{"3x3_p1", 3, 4, 3, 3, 1, {1}, {1}, {1}},
                        Conv{"strided_dilated", 2, 3, 3, 2, 1, {2, 1}, {2, 0}, {1, 2}},
                        Conv{"groups", 4, 6, 3, 3, 2, {1}, {1}, {1}},
                        Conv{"1x1_groups_stride2", 4, 2, 1, 1, 2, {2}, {0}, {1}}}) {
    // x [2, C, 7, 9]; dy from the forward's shape.
    const AttrList geometry = attr_list({Attr("stride", v.stride), Attr("padding", v.padding),
                                         Attr("dilation", v.dilation), Attr("groups", v.groups)});
    auto dy_shape = [geometry](Device& d, const Tensor& x, const Tensor& w) {
      return ops::call(d.default_stream(), "conv2d", {&x, &w}, geometry)[0].shape();
    };
    for (bool input : {true, false}) {
      AttrList attrs = geometry;
      std::vector<int64_t> size =
          input ? std::vector<int64_t>{7, 9} : std::vector<int64_t>{v.kh, v.kw};
      c.push_back({std::string(input ? "conv2d_grad_input_" : "conv2d_grad_weight_") + v.name,
                   input ? "conv2d_grad_input" : "conv2d_grad_weight", F::kAccumulate,
                   [v, input, dy_shape](Device& d, DLDataType t) {
                     Tensor x = upload(d, random_values(size_t(2 * v.c * 63), -2, 2, 16),
                                       {2, v.c, 7, 9}, t);
                     Tensor w = upload(
                         d, random_values(size_t(v.o * v.c / v.groups * v.kh * v.kw), -1, 1, 17),
                         {v.o, v.c / v.groups, v.kh, v.kw}, t);
                     std::vector<int64_t> shape = dy_shape(d, x, w);
                     int64_t n = 1;
                     for (int64_t e : shape) n *= e;
                     Tensor dy = upload(d, random_values(size_t(n), -2, 2, 18), shape, t);
                     return std::vector<Tensor>{dy, input ? w : x};
                   },
                   [input, attrs, size](Stream& s, const std::vector<Tensor>& in) {
                     AttrList list = attrs;
                     list.add(input ? "input_size" : "kernel_size", size);
                     return ops::call(s, input ? "conv2d_grad_input" : "conv2d_grad_weight",
                                      pointers(in), list);
                   }});
    }
  }
  for (const Attention& a : kAttentions) {
    c.push_back(
        {std::string("scaled_dot_product_attention_grad") + a.name,
         "scaled_dot_product_attention_grad", F::kNormalized,
         [a](Device& d, DLDataType t) {
           return std::vector<Tensor>{
               upload(d, random_values(size_t(2 * a.lq * 4), -2, 2, 19), {2, a.lq, 4}, t),
               upload(d, random_values(size_t(2 * a.lq * 8), -2, 2, 20), {2, a.lq, 8}, t),
               upload(d, random_values(size_t(2 * a.lk * 8), -2, 2, 21), {2, a.lk, 8}, t),
               upload(d, random_values(size_t(2 * a.lk * 4), -2, 2, 22), {2, a.lk, 4}, t)};
         },
         simple("scaled_dot_product_attention_grad",
                attr_list({Attr("causal", a.causal), Attr("causal_alignment", a.alignment)}))});
  }
  // Optimizer steps: param, grad, state (f32 for f16/bf16 parameters).
  auto step_inputs = [](int states) {
    return [states](Device& d, DLDataType t) {
      std::vector<double> grad = random_values(67, -1, 1, 23);
      grad[5] = kNaN;
      std::vector<Tensor> in{upload(d, random_values(67, -2, 2, 24), {67}, t),
                             upload(d, grad, {67}, t)};
      for (int i = 0; i < states; ++i) {
        in.push_back(upload(d, random_values(67, i == 1 ? 0 : -0.5, 0.5, 25 + uint32_t(i)), {67},
                            state_of(t)));
      }
      return in;
    };
  };
  struct Sgd {
    const char* name;
    double momentum, dampening, weight_decay;
    bool nesterov;
    int64_t step;
  };
  for (const Sgd& v :
       {Sgd{"plain", 0, 0, 0, false, 3}, Sgd{"momentum_step1", 0.9, 0.1, 0.01, false, 1},
        Sgd{"momentum_dampening_decay", 0.9, 0.1, 0.01, false, 4},
        Sgd{"nesterov", 0.8, 0, 0.02, true, 2}}) {
    c.push_back(
        {std::string("sgd_") + v.name, "sgd", F::kTranscendental, step_inputs(1),
         simple("sgd",
                attr_list({Attr("lr", 0.05), Attr("step", v.step), Attr("momentum", v.momentum),
                           Attr("dampening", v.dampening), Attr("weight_decay", v.weight_decay),
                           Attr("nesterov", v.nesterov)}))});
  }
  for (const char* op : {"adam", "adamw"}) {
    for (int64_t step : {1, 5}) {
      c.push_back(
          {std::string(op) + "_step" + std::to_string(step), op, F::kTranscendental, step_inputs(2),
           simple(op,
                  attr_list({Attr("lr", 0.01), Attr("step", step), Attr("weight_decay", 0.05)}))});
    }
  }
  for (double p : {1.0, 2.0, kInf}) {
    for (bool nan : {false, true}) {
      c.push_back({"grad_norm_p" + std::to_string(int(std::isinf(p) ? 0 : p)) + (nan ? "_nan" : ""),
                   "grad_norm", F::kAccumulate,
                   [nan](Device& d, DLDataType t) {
                     std::vector<double> a = random_values(300, -3, 3, 27);
                     if (nan) a[7] = kNaN;
                     return std::vector<Tensor>{
                         upload(d, a, {20, 15}, t), upload(d, {}, {0, 4}, t),
                         upload(d, random_values(31, -100, 100, 28), {31}, t)};
                   },
                   simple("grad_norm", attr_list({Attr("norm_type", p)}))});
    }
  }
  c.push_back({"grad_norm_all_empty_inf", "grad_norm", F::kAccumulate,
               [](Device& d, DLDataType t) { return std::vector<Tensor>{upload(d, {}, {0}, t)}; },
               simple("grad_norm", attr_list({Attr("norm_type", kInf)}))});
  for (double total : {0.5, 40.0, kInf, kNaN}) {
    c.push_back({"clip_grad_norm_" + std::to_string(total), "clip_grad_norm", F::kTranscendental,
                 [total](Device& d, DLDataType t) {
                   std::vector<double> grad = random_values(45, -4, 4, 29);
                   grad[3] = kInf;
                   return std::vector<Tensor>{upload(d, grad, {5, 9}, t),
                                              upload(d, {total}, {}, state_of(t))};
                 },
                 simple("clip_grad_norm", attr_list({Attr("max_norm", 2.0)}))});
  }
  return c;
}

// |got| against |want| within |tol|: the ratio of the difference to the
// allowed difference (NaN and infinities must match exactly: ratio 0 or inf).
double ratio(double got, double want, Tolerance tol) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : kInf;
  if (std::isinf(want)) return got == want ? 0 : kInf;
  if (std::isnan(got)) return kInf;
  return std::fabs(got - want) / (tol.atol + tol.rtol * std::fabs(want));
}

std::vector<std::vector<double>> run_all(Device& device, const Case& c,
                                         const std::vector<Tensor>& in) {
  std::vector<std::vector<double>> out;
  for (const Tensor& t : c.run(device.default_stream(), in)) out.push_back(download(device, t));
  return out;
}

// Every case natively and forced; every gradient and optimizer operator with a
// decomposition is covered.
void compare_forced_with_native(const char* manifest) {
  Runtime runtime(only(manifest));
  ASSERT_FALSE(runtime.devices().empty()) << manifest;
  Device& device = *runtime.devices()[0];
  std::map<std::string, double> worst;  // op -> the largest ratio to its tolerance
  for (const Case& c : cases()) {
    for (DLDataType t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) {
      if (!claimed(device, t)) continue;
      SCOPED_TRACE(c.name + " " + dtype_name(t));
      std::vector<Tensor> in = c.inputs(device, t);
      const auto [native, decomposed] =
          run_native_and_forced(device, [&] { return run_all(device, c, in); });
      ASSERT_EQ(native.size(), decomposed.size());
      const Tolerance tol = tolerance_for(c.family, t);
      for (size_t o = 0; o < native.size(); ++o) {
        ASSERT_EQ(native[o].size(), decomposed[o].size());
        size_t bad = 0;
        for (size_t i = 0; i < native[o].size(); ++i) {
          const double r = ratio(decomposed[o][i], native[o][i], tol);
          double& w = worst[c.op];
          if (r > w) w = r;
          if (r > 1 && bad++ < 3) {
            ADD_FAILURE() << "output " << o << " element " << i << ": decomposed "
                          << decomposed[o][i] << ", native " << native[o][i];
          }
        }
        EXPECT_EQ(bad, 0u) << "output " << o;
      }
    }
  }
  for (const auto& [op, r] : worst) {
    std::printf("worst |decomposed - native| / tolerance  %-36s %.3g\n", op.c_str(), r);
  }
  for (const std::string& op : decompose::decomposed_operators()) {
    const std::string category = OpId(op).schema()->category;
    if (category != "grad" && category != "nn_grad" && category != "optimizer") continue;
    EXPECT_TRUE(worst.count(op) == 1) << op << " has a decomposition but no case here";
  }
}

TEST(DecomposeGradTest, ForcedMatchesTheCpuKernels) {
  compare_forced_with_native(OAR_TEST_CPU_MANIFEST);
}

TEST(DecomposeGradTest, ForcedMatchesTheSimKernels) {
  compare_forced_with_native(OAR_TEST_SIM_MANIFEST);
}

// An optimizer step with its outputs bound to its inputs (in place), forced,
// three steps: the same values as the plugin's kernel in place.
TEST(DecomposeGradTest, OptimizerStepsInPlace) {
  Runtime runtime(only(OAR_TEST_CPU_MANIFEST));
  ASSERT_FALSE(runtime.devices().empty());
  Device& device = *runtime.devices()[0];
  Stream& s = device.default_stream();
  struct Step {
    const char* op;
    int states;
    std::vector<Attr> attrs;
  };
  const std::vector<Step> steps = {
      {"sgd", 1, {Attr("lr", 0.1), Attr("momentum", 0.9), Attr("weight_decay", 0.01)}},
      {"sgd", 1, {Attr("lr", 0.1)}},
      {"adam", 2, {Attr("lr", 0.01), Attr("weight_decay", 0.1)}},
      {"adamw", 2, {Attr("lr", 0.01)}},
      {"clip_grad_norm", 0, {Attr("max_norm", 1.0)}}};
  for (const Step& step : steps) {
    for (DLDataType t : {dtype::f32, dtype::f16, dtype::bf16}) {
      SCOPED_TRACE(std::string(step.op) + " " + dtype_name(t));
      std::vector<std::vector<double>> results[2];
      for (int forced = 0; forced < 2; ++forced) {
        decompose::set_device_mode(device,
                                   forced ? decompose::Mode::kForce : decompose::Mode::kFallback);
        const bool clip = step.states == 0;
        Tensor param = upload(device, random_values(50, -2, 2, 30), {50}, t);
        Tensor grad = upload(device, random_values(50, -1, 1, 31), {50}, t);
        std::vector<Tensor> state;
        for (int i = 0; i < step.states; ++i) {
          state.push_back(upload(device, std::vector<double>(50, 0.0), {50}, state_of(t)));
        }
        Tensor norm = upload(device, {3.0}, {}, state_of(t));
        for (int64_t k = 1; k <= 3; ++k) {
          AttrList list;
          for (const Attr& a : step.attrs) list.add(a.attr);
          std::vector<const Tensor*> in, out;
          if (clip) {
            in = {&grad, &norm};
            out = {&grad};
          } else {
            list.add("step", k);
            in = {&param, &grad};
            out = {&param};
            for (const Tensor& st : state) in.push_back(&st), out.push_back(&st);
          }
          std::vector<DLTensor> dl_in, dl_out;
          for (const Tensor* x : in) dl_in.push_back(x->dl());
          for (const Tensor* x : out) dl_out.push_back(x->dl());
          const std::vector<oar_attr_t> raw = list.raw();
          dispatch(s, OpId(step.op), dl_in.data(), dl_in.size(), dl_out.data(), dl_out.size(),
                   raw.data(), raw.size());
        }
        results[forced].push_back(download(device, clip ? grad : param));
        for (const Tensor& st : state) results[forced].push_back(download(device, st));
      }
      decompose::clear_device_mode(device);
      const Tolerance tol = tolerance_for(Family::kTranscendental, t);
      for (size_t o = 0; o < results[0].size(); ++o) {
        for (size_t i = 0; i < results[0][o].size(); ++i) {
          EXPECT_LE(ratio(results[1][o][i], results[0][o][i], tol), 1.0)
              << "output " << o << " element " << i << ": decomposed " << results[1][o][i]
              << ", native " << results[0][o][i];
        }
      }
    }
  }
}

}  // namespace
}  // namespace oar::testing
