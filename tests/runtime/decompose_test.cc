// Decompositions (core/ops/decompositions/): each one forced on the cpu and
// sim plugins agrees with the plugin's own kernel within the tolerance
// docs/ops.md states ("Primitives and decompositions"); a plugin without the
// kernel runs the decomposition; OAR_DECOMPOSE=0 restores UNIMPLEMENTED.
#include "core/ops/decompositions/decompose.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "decompose_test_util.h"
#include "oar/oar.hpp"

namespace oar::testing {
namespace {

// The tolerance of a decomposition against the fused kernel (docs/ops.md):
// f16/bf16 are computed in f32 by both and rounded once, so they differ by
// at most one ulp of the output; f32/f64 by a few ulp of the compute type.
struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance_for(DLDataType dtype) {
  if (dtype == dtype::f64) return {1e-12, 1e-14};
  if (dtype == dtype::f16) return {1e-3, 1e-5};
  if (dtype == dtype::bf16) return {8e-3, 1e-4};
  return {1e-5, 1e-6};
}

// One call of an operator: inputs built on the device, the attributes, and
// the call itself.
struct Case {
  std::string name;
  std::function<std::vector<Tensor>(Device&, DLDataType)> inputs;
  std::function<Tensor(Stream&, const std::vector<Tensor>&)> run;
};

// The cases of layout.cc and math.cc (decompose_layout_math_cases.h).
void add_layout_and_math_cases(std::vector<Case>& c);

std::vector<Case> cases() {
  std::vector<Case> c;
  auto unary = [&](const char* op, std::vector<Attr> attrs_storage = {}) {
    (void)attrs_storage;
    return Case{
        op,
        [](Device& d, DLDataType t) {
          std::vector<double> v = random_values(257, -6, 6, 1);
          v[0] = kInf, v[1] = -kInf, v[2] = kNaN, v[3] = 0, v[4] = -0.0, v[5] = 30, v[6] = -30;
          return std::vector<Tensor>{upload(d, v, {257}, t)};
        },
        [op](Stream& s, const std::vector<Tensor>& in) { return ops::call(s, op, {&in[0]})[0]; }};
  };
  for (const char* op : {"sigmoid", "silu", "relu", "reciprocal", "rsqrt"}) c.push_back(unary(op));
  auto pair = [](Device& d, DLDataType t) {
    std::vector<double> a = random_values(64, -2, 2, 20), b = random_values(64, -2, 2, 21);
    for (size_t i = 0; i < 16; ++i) b[i] = a[i];  // ties
    a[20] = kNaN, b[21] = kNaN, a[22] = 0, b[22] = -0.0, a[23] = kInf, b[23] = kInf;
    return std::vector<Tensor>{upload(d, a, {8, 8}, t), upload(d, b, {8, 8}, t)};
  };
  for (const char* op : {"gt", "ge", "ne"}) {
    c.push_back({op, pair, [op](Stream& s, const std::vector<Tensor>& in) {
                   return ops::call(s, op, {&in[0], &in[1]})[0];
                 }});
  }
  auto truth = [](Device& d, DLDataType) {
    // Bytes 0, 1 and 2 (2 is true too).
    std::vector<uint8_t> a{0, 0, 1, 1, 2, 2, 0, 2, 1}, b{0, 1, 0, 1, 2, 0, 2, 1, 2};
    Tensor ta = Tensor::empty(d, {9}, dtype::boolean), tb = Tensor::empty(d, {9}, dtype::boolean);
    ta.copy_from_host(d.default_stream(), a.data());
    tb.copy_from_host(d.default_stream(), b.data());
    d.default_stream().synchronize();
    return std::vector<Tensor>{ta, tb};
  };
  for (const char* op : {"logical_and", "logical_or", "logical_xor"}) {
    c.push_back({op, truth, [op](Stream& s, const std::vector<Tensor>& in) {
                   return ops::call(s, op, {&in[0], &in[1]})[0];
                 }});
  }
  for (const char* op : {"logical_not", "bitwise_not"}) {
    c.push_back({std::string(op), truth, [op](Stream& s, const std::vector<Tensor>& in) {
                   return ops::call(s, op, {&in[0]})[0];
                 }});
  }
  c.push_back({"bitwise_not_i32",
               [](Device& d, DLDataType) {
                 std::vector<int32_t> v{0, 1, -1, 7, INT32_MIN, INT32_MAX};
                 Tensor t = Tensor::empty(d, {6}, dtype::i32);
                 t.copy_from_host(d.default_stream(), v.data());
                 d.default_stream().synchronize();
                 return std::vector<Tensor>{t};
               },
               [](Stream& s, const std::vector<Tensor>& in) {
                 return ops::call(s, "bitwise_not", {&in[0]})[0];
               }});
  c.push_back({"clip",
               [](Device& d, DLDataType t) {
                 std::vector<double> x = random_values(40, -3, 3, 23);
                 x[0] = kNaN, x[1] = kInf, x[2] = -kInf;
                 std::vector<double> lo = random_values(8, -2, 0, 24),
                                     hi = random_values(8, 0, 2, 25);
                 lo[3] = 1.5, hi[3] = -1.5;  // min > max: max
                 lo[4] = kNaN;
                 return std::vector<Tensor>{upload(d, x, {5, 8}, t), upload(d, lo, {8}, t),
                                            upload(d, hi, {8}, t)};
               },
               [](Stream& s, const std::vector<Tensor>& in) {
                 return ops::call(s, "clip", {&in[0], &in[1], &in[2]})[0];
               }});
  auto table_and_index = [](Device& d, DLDataType t) {
    std::vector<int64_t> index{3, 0, 2, 2, 1, 3};
    Tensor ti = Tensor::empty(d, {2, 3}, dtype::i64);
    ti.copy_from_host(d.default_stream(), index.data());
    return std::vector<Tensor>{upload(d, random_values(60, -3, 3, 22), {5, 4, 3}, t), ti};
  };
  c.push_back({"embedding", table_and_index, [](Stream& s, const std::vector<Tensor>& in) {
                 Tensor weight = in[0].view({5, 12});
                 return ops::call(s, "embedding", {&weight, &in[1]})[0];
               }});
  c.push_back(
      {"index_select", table_and_index, [](Stream& s, const std::vector<Tensor>& in) {
         Tensor index = in[1].view({6});
         return ops::call(s, "index_select", {&in[0], &index}, {Attr("axis", int64_t(1))})[0];
       }});
  Case gelu = unary("gelu");
  c.push_back(gelu);
  gelu.name = "gelu_tanh";
  gelu.run = [](Stream& s, const std::vector<Tensor>& in) {
    return ops::call(s, "gelu", {&in[0]}, {Attr("approximate", "tanh")})[0];
  };
  c.push_back(gelu);

  auto logits = [](Device& d, DLDataType t) {
    std::vector<double> v = random_values(6 * 37, -5, 5, 2);
    v[3] = -kInf;                                            // a -inf entry in a finite row
    for (int i = 0; i < 37; ++i) v[size_t(37 + i)] += 1000;  // a row near 1000
    for (int i = 0; i < 37; ++i) v[size_t(74 + i)] = -kInf;  // a row of -inf: NaN
    v[111] = kNaN;                                           // a NaN row
    return std::vector<Tensor>{upload(d, v, {6, 37}, t)};
  };
  for (const char* op : {"softmax", "log_softmax"}) {
    c.push_back({op, logits, [op](Stream& s, const std::vector<Tensor>& in) {
                   return ops::call(s, op, {&in[0]})[0];
                 }});
    c.push_back(
        {std::string(op) + "_axis0", logits, [op](Stream& s, const std::vector<Tensor>& in) {
           return ops::call(s, op, {&in[0]}, {Attr("axis", int64_t(0))})[0];
         }});
  }
  c.push_back({"mean",
               [](Device& d, DLDataType t) {
                 return std::vector<Tensor>{upload(d, random_values(105, -2, 3, 3), {5, 7, 3}, t)};
               },
               [](Stream& s, const std::vector<Tensor>& in) {
                 std::vector<int64_t> axes{0, -1};
                 return ops::call(s, "mean", {&in[0]}, {Attr("axes", axes)})[0];
               }});
  auto norm_inputs = [](Device& d, DLDataType t) {
    std::vector<double> x = random_values(6 * 33, -2, 2, 4);
    for (int i = 0; i < 33; ++i) x[size_t(i)] += 100;  // a row with a common offset
    return std::vector<Tensor>{upload(d, x, {6, 33}, t),
                               upload(d, random_values(33, 0.5, 1.5, 5), {33}, t),
                               upload(d, random_values(33, -1, 1, 6), {33}, t)};
  };
  c.push_back({"layer_norm", norm_inputs, [](Stream& s, const std::vector<Tensor>& in) {
                 return ops::call(s, "layer_norm", {&in[0], &in[1], &in[2]})[0];
               }});
  c.push_back({"rms_norm", norm_inputs, [](Stream& s, const std::vector<Tensor>& in) {
                 return ops::call(s, "rms_norm", {&in[0], &in[1]})[0];
               }});
  c.push_back({"batch_norm",
               [](Device& d, DLDataType t) {
                 return std::vector<Tensor>{
                     upload(d, random_values(120, -2, 2, 7), {2, 3, 4, 5}, t),
                     upload(d, random_values(3, -1, 1, 8), {3}, t),
                     upload(d, random_values(3, 0.1, 2, 9), {3}, t),
                     upload(d, random_values(3, 0.5, 1.5, 10), {3}, t),
                     upload(d, random_values(3, -1, 1, 11), {3}, t)};
               },
               [](Stream& s, const std::vector<Tensor>& in) {
                 return ops::call(s, "batch_norm", {&in[0], &in[1], &in[2], &in[3], &in[4]})[0];
               }});
  for (const char* reduction : {"mean", "sum", "none"}) {
    c.push_back(
        {std::string("cross_entropy_") + reduction,
         [](Device& d, DLDataType t) {
           std::vector<int64_t> target{0, 10, 3, 7, 7, 1, 9};
           Tensor ti = Tensor::empty(d, {7}, dtype::i64);
           ti.copy_from_host(d.default_stream(), target.data());
           return std::vector<Tensor>{upload(d, random_values(77, -4, 4, 12), {7, 11}, t), ti};
         },
         [reduction](Stream& s, const std::vector<Tensor>& in) {
           return ops::call(s, "cross_entropy", {&in[0], &in[1]},
                            {Attr("reduction", reduction)})[0];
         }});
  }
  for (const Attention& a : kAttentions) {
    c.push_back({std::string("attention") + a.name,
                 [a](Device& d, DLDataType t) {
                   return std::vector<Tensor>{
                       upload(d, random_values(size_t(2 * a.lq * 8), -2, 2, 13), {2, a.lq, 8}, t),
                       upload(d, random_values(size_t(2 * a.lk * 8), -2, 2, 14), {2, a.lk, 8}, t),
                       upload(d, random_values(size_t(2 * a.lk * 4), -2, 2, 15), {2, a.lk, 4}, t)};
                 },
                 [a](Stream& s, const std::vector<Tensor>& in) {
                   return ops::call(
                       s, "scaled_dot_product_attention", {&in[0], &in[1], &in[2]},
                       {Attr("causal", a.causal), Attr("causal_alignment", a.alignment)})[0];
                 }});
  }
  struct Conv {
    const char* name;
    int64_t c, o, kh, kw, groups;
    std::vector<int64_t> stride, padding, dilation;
    bool bias;
  };
  for (const Conv& v :
       {Conv{"conv2d", 3, 4, 3, 3, 1, {1}, {1}, {1}, true},
        Conv{"conv2d_strided_dilated", 2, 3, 3, 2, 1, {2, 1}, {2, 0}, {1, 2}, false},
        Conv{"conv2d_groups", 4, 6, 3, 3, 2, {1}, {1}, {1}, true},
        Conv{"conv2d_1x1_groups_no_bias", 4, 2, 1, 1, 2, {1}, {0}, {1}, false}}) {
    c.push_back(
        {v.name,
         [v](Device& d, DLDataType t) {
           std::vector<Tensor> in{
               upload(d, random_values(size_t(2 * v.c * 7 * 9), -2, 2, 16), {2, v.c, 7, 9}, t),
               upload(d, random_values(size_t(v.o * v.c / v.groups * v.kh * v.kw), -1, 1, 17),
                      {v.o, v.c / v.groups, v.kh, v.kw}, t)};
           if (v.bias) in.push_back(upload(d, random_values(size_t(v.o), -1, 1, 18), {v.o}, t));
           return in;
         },
         [v](Stream& s, const std::vector<Tensor>& in) {
           std::vector<const Tensor*> args;
           for (const Tensor& t : in) args.push_back(&t);
           return ops::call(s, "conv2d", args,
                            {Attr("stride", v.stride), Attr("padding", v.padding),
                             Attr("dilation", v.dilation), Attr("groups", v.groups)})[0];
         }});
  }
  auto pool_input = [](Device& d, DLDataType t) {
    std::vector<double> v = random_values(2 * 3 * 7 * 8, -3, 3, 19);
    v[0] = -kInf, v[1] = -kInf, v[8] = -kInf, v[9] = -kInf;  // a corner window of -inf
    v[60] = kNaN;
    return std::vector<Tensor>{upload(d, v, {2, 3, 7, 8}, t)};
  };
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    c.push_back({std::string(op) + "_3x3_s2_p1", pool_input,
                 [op](Stream& s, const std::vector<Tensor>& in) {
                   std::vector<int64_t> k{3}, st{2}, p{1};
                   return ops::call(
                       s, op, {&in[0]},
                       {Attr("kernel_size", k), Attr("stride", st), Attr("padding", p)})[0];
                 }});
    c.push_back(
        {std::string(op) + "_2x3", pool_input, [op](Stream& s, const std::vector<Tensor>& in) {
           std::vector<int64_t> k{2, 3};
           return ops::call(s, op, {&in[0]}, {Attr("kernel_size", k)})[0];
         }});
  }
  c.push_back({"avg_pool2d_exclude_pad", pool_input, [](Stream& s, const std::vector<Tensor>& in) {
                 std::vector<int64_t> k{3}, st{1}, p{1};
                 return ops::call(s, "avg_pool2d", {&in[0]},
                                  {Attr("kernel_size", k), Attr("stride", st), Attr("padding", p),
                                   Attr("count_include_pad", false)})[0];
               }});
  add_layout_and_math_cases(c);
  return c;
}

// Defines add_layout_and_math_cases() with the helpers above.
#include "decompose_layout_math_cases.h"  // NOLINT(build/include)

bool close(double got, double want, Tolerance tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

// Runs every case natively and forced through its decomposition on the first
// device of |manifest|; every decomposed operator is covered.
void compare_forced_with_native(const char* manifest) {
  Runtime runtime(only(manifest));
  ASSERT_FALSE(runtime.devices().empty()) << manifest;
  Device& device = *runtime.devices()[0];
  std::vector<std::string> covered;
  for (const Case& c : cases()) {
    for (DLDataType t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) {
      if (!claimed(device, t)) continue;
      SCOPED_TRACE(c.name + " " + dtype_name(t));
      std::vector<Tensor> in = c.inputs(device, t);
      const auto [native, decomposed] = run_native_and_forced(
          device, [&] { return download(device, c.run(device.default_stream(), in)); });
      ASSERT_EQ(native.size(), decomposed.size());
      Tolerance tol = tolerance_for(t);
      size_t bad = 0;
      for (size_t i = 0; i < native.size(); ++i) {
        if (!close(decomposed[i], native[i], tol) && bad++ < 3) {
          ADD_FAILURE() << "element " << i << ": decomposed " << decomposed[i] << ", native "
                        << native[i];
        }
      }
      EXPECT_EQ(bad, 0u);
    }
    covered.push_back(c.name);
  }
  for (const std::string& op : decompose::decomposed_operators()) {
    // The gradients and optimizer steps have their cases in decompose_grad_test.cc.
    const std::string category = OpId(op).schema()->category;
    if (category == "grad" || category == "nn_grad" || category == "optimizer") continue;
    bool found = false;
    for (const std::string& name : covered) {
      found = found || name.rfind(op == "scaled_dot_product_attention" ? "attention" : op, 0) == 0;
    }
    EXPECT_TRUE(found) << op << " has a decomposition but no case here";
  }
}

TEST(DecomposeTest, ForcedMatchesTheCpuKernels) {
  compare_forced_with_native(OAR_TEST_CPU_MANIFEST);
}

TEST(DecomposeTest, ForcedMatchesTheSimKernels) {
  compare_forced_with_native(OAR_TEST_SIM_MANIFEST);
}

// A cpu plugin without the composite kernels (decompose_drops_kernels.cc).
class NoCompositesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime_ = std::make_unique<Runtime>(only(OAR_TEST_NO_COMPOSITES_MANIFEST));
    ASSERT_EQ(runtime_->devices().size(), 1u) << "the cpu_no_composites plugin did not load";
    device_ = runtime_->devices()[0];
  }
  void TearDown() override {
    if (device_ != nullptr) decompose::clear_device_mode(*device_);
  }
  Device& device() { return *device_; }
  std::unique_ptr<Runtime> runtime_;
  Device* device_ = nullptr;
};

TEST_F(NoCompositesTest, MissingKernelsFallBackToTheDecomposition) {
  Stream& s = device().default_stream();
  Tensor x = upload(device(), {1, 2, 3, -1, 0, 1}, {2, 3}, dtype::f32);
  const uint64_t before = decompose::decomposition_count();
  std::vector<double> y = download(device(), ops::softmax(s, x));
  EXPECT_EQ(decompose::decomposition_count(), before + 1);
  const double e = std::exp(1.0), first = 1 / (1 + e + e * e);
  EXPECT_NEAR(y[0], first, 1e-6);
  EXPECT_NEAR(y[3], first, 1e-6);
  EXPECT_NEAR(y[0] + y[1] + y[2], 1.0, 1e-6);
  // A composite that uses another composite (cross_entropy -> log_softmax)
  // and one that needs the mean (layer_norm -> mean) fall back all the way.
  Tensor target = Tensor::empty(device(), {2}, dtype::i64);
  std::vector<int64_t> t{2, 0};
  target.copy_from_host(s, t.data());
  std::vector<double> loss = download(
      device(), ops::call(s, "cross_entropy", {&x, &target}, {Attr("reduction", "none")})[0]);
  EXPECT_NEAR(loss[0], -std::log(e * e * first), 1e-6);
  EXPECT_NEAR(loss[1], -std::log(first), 1e-6);
}

TEST_F(NoCompositesTest, AnIndexOutOfRangeStillFailsTheStream) {
  Stream& s = device().default_stream();
  Tensor x = upload(device(), {1, 2, 3, -1, 0, 1}, {2, 3}, dtype::f32);
  Tensor target = Tensor::empty(device(), {2}, dtype::i64);
  std::vector<int64_t> t{3, 0};
  target.copy_from_host(s, t.data());
  try {
    ops::call(s, "cross_entropy", {&x, &target});
    s.synchronize();
    ADD_FAILURE() << "a target of 3 with 3 classes was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_OUT_OF_RANGE) << e.what();
  }
}

TEST_F(NoCompositesTest, SchemaErrorsComeBeforeTheDecomposition) {
  Stream& s = device().default_stream();
  Tensor x = upload(device(), {1, 2, 3}, {3}, dtype::f32);
  try {
    ops::call(s, "gelu", {&x}, {Attr("approximate", "fast")});
    s.synchronize();
    ADD_FAILURE() << "approximate=fast was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_INVALID_ARGUMENT) << e.what();
  }
}

TEST_F(NoCompositesTest, SwitchedOffTheMissingKernelIsUnimplemented) {
  Stream& s = device().default_stream();
  Tensor x = upload(device(), {1, 2, 3}, {3}, dtype::f32);
  decompose::set_device_mode(device(), decompose::Mode::kOff);
  try {
    ops::softmax(s, x);
    ADD_FAILURE() << "softmax ran with decomposition off";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_UNIMPLEMENTED) << e.what();
    EXPECT_NE(std::string(e.what()).find("no kernel for softmax"), std::string::npos) << e.what();
  }
}

TEST_F(NoCompositesTest, EnvironmentZeroSwitchesItOff) {
  Stream& s = device().default_stream();
  Tensor x = upload(device(), {1, 2, 3}, {3}, dtype::f32);
  ::setenv("OAR_DECOMPOSE", "0", 1);
  decompose::reload_environment();
  EXPECT_EQ(decompose::device_mode(device()), decompose::Mode::kOff);
  bool unimplemented = false;
  try {
    ops::softmax(s, x);
  } catch (const Error& e) {
    unimplemented = e.code() == OAR_STATUS_UNIMPLEMENTED;
  }
  ::unsetenv("OAR_DECOMPOSE");
  decompose::reload_environment();
  EXPECT_TRUE(unimplemented) << "OAR_DECOMPOSE=0 must give the old UNIMPLEMENTED error";
  EXPECT_EQ(download(device(), ops::softmax(s, x)).size(), 3u) << "unset: the fallback is back";
}

TEST(DecomposeModeTest, ParsesTheEnvironment) {
  EXPECT_EQ(decompose::parse_mode(nullptr), decompose::Mode::kFallback);
  EXPECT_EQ(decompose::parse_mode("0"), decompose::Mode::kOff);
  EXPECT_EQ(decompose::parse_mode("off"), decompose::Mode::kOff);
  EXPECT_EQ(decompose::parse_mode("force"), decompose::Mode::kForce);
  EXPECT_EQ(decompose::parse_mode("1"), decompose::Mode::kFallback);
}

}  // namespace
}  // namespace oar::testing
