// Tests of the reference implementation against values derived by hand, and a
// sweep proving that every operator of the schema table has a reference.
#include "conformance/reference/reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <limits>

#include "oar/dtype.hpp"
#include "oar/error.hpp"

namespace oar::conformance {
namespace {

using Shape = std::vector<int64_t>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Attributes with storage for their strings and arrays.
class A {
 public:
  A& i(const char* name, int64_t v) {
    return add(name, OAR_ATTR_TYPE_INT, [&](auto& a) { a.i = v; });
  }
  A& f(const char* name, double v) {
    return add(name, OAR_ATTR_TYPE_FLOAT, [&](auto& a) { a.f = v; });
  }
  A& b(const char* name, bool v) {
    return add(name, OAR_ATTR_TYPE_BOOL, [&](auto& a) { a.b = v; });
  }
  A& s(const char* name, std::string v) {
    strings_.push_back(std::move(v));
    return add(name, OAR_ATTR_TYPE_STRING, [&](auto& a) { a.s = strings_.back().c_str(); });
  }
  A& ints(const char* name, Shape v) {
    arrays_.push_back(std::move(v));
    return add(name, OAR_ATTR_TYPE_INT_ARRAY, [&](auto& a) {
      a.ints.data = arrays_.back().data();
      a.ints.count = arrays_.back().size();
    });
  }
  const std::vector<oar_attr_t>& list() const { return list_; }

 private:
  template <typename Fn>
  A& add(const char* name, int32_t type, Fn fn) {
    oar_attr_t a{};
    a.name = name;
    a.type = type;
    fn(a.value);
    list_.push_back(a);
    return *this;
  }
  std::deque<std::string> strings_;
  std::deque<Shape> arrays_;
  std::vector<oar_attr_t> list_;
};

HostTensor T(Shape shape, std::vector<double> v, DLDataType dtype = dtype::f32) {
  HostTensor t = HostTensor::zeros(std::move(shape), dtype);
  for (size_t i = 0; i < v.size(); ++i) t.set(int64_t(i), v[i]);
  return t;
}
HostTensor I(Shape shape, std::vector<int64_t> v, DLDataType dtype = dtype::i64) {
  HostTensor t = HostTensor::zeros(std::move(shape), dtype);
  for (size_t i = 0; i < v.size(); ++i) t.set_int(int64_t(i), v[i]);
  return t;
}

HostTensor run1(const char* op, const std::vector<HostTensor>& in, const A& attrs = A(),
                std::vector<DLDataType> out = {}, Shape fill = {}) {
  const ops::OpSchema* schema = ops::find_schema(op);
  EXPECT_NE(schema, nullptr) << op;
  return run_reference(*schema, in, attrs.list(), out, fill).at(0);
}

// The status run1 fails with (OK when it succeeds).
oar_status_t fails(const char* op, const std::vector<HostTensor>& in, const A& attrs = A()) {
  try {
    run1(op, in, attrs);
  } catch (const Error& e) {
    return e.code();
  }
  return OAR_STATUS_OK;
}

void expect(const HostTensor& t, Shape shape, std::vector<double> v, double tol = 0) {
  ASSERT_EQ(t.shape, shape);
  ASSERT_EQ(t.numel(), int64_t(v.size()));
  for (size_t i = 0; i < v.size(); ++i) {
    const double got = t.get(int64_t(i));
    if (std::isnan(v[i])) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i << " is " << got;
    } else if (tol == 0) {
      EXPECT_EQ(got, v[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got, v[i], tol) << "element " << i;
    }
  }
}
void expect_int(const HostTensor& t, Shape shape, std::vector<int64_t> v) {
  ASSERT_EQ(t.shape, shape);
  ASSERT_EQ(t.numel(), int64_t(v.size()));
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(t.get_int(int64_t(i)), v[i]) << "element " << i;
}

// ---- Conversions --------------------------------------------------------------

TEST(HalfTest, RoundsToNearestEven) {
  EXPECT_EQ(double_to_half_bits(1.0), 0x3C00);
  EXPECT_EQ(double_to_half_bits(1 + 0x1p-11), 0x3C00);      // tie: to even (1.0)
  EXPECT_EQ(double_to_half_bits(1 + 3 * 0x1p-11), 0x3C02);  // tie: up to even
  EXPECT_EQ(double_to_half_bits(1 + 0x1p-11 + 0x1p-30), 0x3C01);
  EXPECT_EQ(double_to_half_bits(-2.0), 0xC000);
  EXPECT_EQ(double_to_half_bits(65504), 0x7BFF);
  EXPECT_EQ(double_to_half_bits(65519.99), 0x7BFF);
  EXPECT_EQ(double_to_half_bits(65520), 0x7C00);  // rounds past the largest finite
  EXPECT_EQ(double_to_half_bits(1e300), 0x7C00);
  EXPECT_EQ(double_to_half_bits(-kInf), 0xFC00);
  EXPECT_EQ(double_to_half_bits(-0.0), 0x8000);
  EXPECT_EQ(double_to_half_bits(kNaN) & 0x7FFF, 0x7E00);
  EXPECT_EQ(half_bits_to_double(0x3555), 0.333251953125);
  EXPECT_EQ(half_bits_to_double(0x7BFF), 65504.0);
  EXPECT_EQ(half_bits_to_double(0xFC00), -kInf);
  EXPECT_TRUE(std::isnan(half_bits_to_double(0x7C01)));
  EXPECT_TRUE(std::signbit(half_bits_to_double(0x8000)));
}

TEST(HalfTest, Subnormals) {
  EXPECT_EQ(half_bits_to_double(0x0001), 0x1p-24);
  EXPECT_EQ(half_bits_to_double(0x03FF), 1023 * 0x1p-24);
  EXPECT_EQ(half_bits_to_double(0x0400), 0x1p-14);
  EXPECT_EQ(double_to_half_bits(0x1p-24), 0x0001);
  EXPECT_EQ(double_to_half_bits(0x1p-25), 0x0000);      // tie: to even (0)
  EXPECT_EQ(double_to_half_bits(3 * 0x1p-25), 0x0002);  // 1.5 quanta: tie up to even
  EXPECT_EQ(double_to_half_bits(0.75 * 0x1p-24), 0x0001);
  EXPECT_EQ(double_to_half_bits(1023.5 * 0x1p-24), 0x0400);  // carries into the normals
  EXPECT_EQ(double_to_half_bits(-0x1p-26), 0x8000);
}

TEST(Bf16Test, RoundsToNearestEven) {
  EXPECT_EQ(double_to_bf16_bits(1.0), 0x3F80);
  EXPECT_EQ(double_to_bf16_bits(3.0), 0x4040);
  EXPECT_EQ(double_to_bf16_bits(1 + 0x1p-8), 0x3F80);      // tie: to even
  EXPECT_EQ(double_to_bf16_bits(1 + 3 * 0x1p-8), 0x3F82);  // tie: up to even
  EXPECT_EQ(double_to_bf16_bits(1 + 0x1p-8 + 0x1p-20), 0x3F81);
  EXPECT_EQ(double_to_bf16_bits(kNaN) & 0x7FFF, 0x7FC0);
  EXPECT_EQ(double_to_bf16_bits(0x1p-133), 0x0001);  // smallest subnormal
  EXPECT_EQ(double_to_bf16_bits(0x1p128), 0x7F80);
  EXPECT_EQ(bf16_bits_to_double(0x7F7F), 255 * 0x1p120);
  EXPECT_EQ(bf16_bits_to_double(0xBF80), -1.0);
  EXPECT_EQ(bf16_bits_to_double(0x0001), 0x1p-133);
}

TEST(Bf16Test, TheTieAboveTheLargestRoundsToInfinity) {
  EXPECT_EQ(double_to_bf16_bits(255 * 0x1p120 + 0x1p119), 0x7F80);
  EXPECT_EQ(double_to_bf16_bits(255 * 0x1p120 + 0x1p118), 0x7F7F);
}

// Integers just above a tie of the target: rounded through f64 (or f32) they
// would become the tie and round to even, down; rounded once they go up.
TEST(HostTensorTest, IntegersRoundOnceToNarrowFloats) {
  HostTensor b = HostTensor::zeros({2}, dtype::bf16);
  b.set_int(0, (int64_t(1) << 62) + (int64_t(1) << 54) + 1);
  b.set_int(1, (int64_t(1) << 30) + (int64_t(1) << 22) + 1);
  EXPECT_EQ(b.get(0), 0x1p62 + 0x1p55);
  EXPECT_EQ(b.get(1), 0x1p30 + 0x1p23);
  HostTensor f = HostTensor::zeros({1}, dtype::f32);
  f.set_int(0, (int64_t(1) << 60) + (int64_t(1) << 36) + 1);
  EXPECT_EQ(f.get(0), 0x1p60 + 0x1p37);
}

TEST(HostTensorTest, SetTruncatesAndSetIntWraps) {
  HostTensor t = HostTensor::zeros({3}, dtype::i32);
  t.set(0, 2.9);
  t.set(1, -2.9);
  t.set_int(2, (int64_t(1) << 32) + 7);
  expect_int(t, {3}, {2, -2, 7});
  HostTensor b = T({3}, {0.0, 0.5, kNaN}, dtype::boolean);
  expect_int(b, {3}, {0, 1, 1});
  EXPECT_EQ(b.bytes, (std::vector<uint8_t>{0, 1, 1}));
}

// ---- Layout -------------------------------------------------------------------

TEST(ReferenceTest, FillCopyCast) {
  expect_int(run1("fill", {}, A().f("value", 2.9), {dtype::i32}, {2}), {2}, {2, 2});
  expect(run1("fill", {}, A().f("value", 1 + 0x1p-11), {dtype::f16}, {1, 1}), {1, 1}, {1.0});
  expect(run1("fill", {}, A().f("value", 3), {dtype::f32}, {}), {}, {3});
  expect(run1("copy", {T({2}, {1.5, -2})}), {2}, {1.5, -2});
  expect_int(run1("cast", {T({4}, {2.7, -2.7, 0.0, -0.5})}, A(), {dtype::i32}), {4}, {2, -2, 0, 0});
  expect_int(run1("cast", {T({3}, {0, 0.25, kNaN})}, A(), {dtype::boolean}), {3}, {0, 1, 1});
  expect_int(run1("cast", {I({2}, {(int64_t(1) << 32) + 5, -1})}, A(), {dtype::i32}), {2}, {5, -1});
  expect(run1("cast", {I({2}, {1, 0}, dtype::boolean)}, A(), {dtype::f16}), {2}, {1, 0});
  // i64 -> f32 rounds once: 2^60 + 2^36 + 1 is just above the tie, so up.
  const int64_t big = (int64_t(1) << 60) + (int64_t(1) << 36) + 1;
  expect(run1("cast", {I({1}, {big})}, A(), {dtype::f32}), {1}, {0x1p60 + 0x1p37});
  // f32 -> f16 and bf16 -> f16.
  expect(run1("cast", {T({2}, {1 + 0x1p-11, 1 + 3 * 0x1p-11})}, A(), {dtype::f16}), {2},
         {1.0, 1 + 0x1p-9});
  expect(run1("cast", {T({1}, {3.0}, dtype::bf16)}, A(), {dtype::f16}), {1}, {3.0});
}

TEST(ReferenceTest, TransposeConcat) {
  HostTensor x = T({2, 3}, {0, 1, 2, 3, 4, 5});
  expect(run1("transpose", {x}, A().ints("perm", {1, 0})), {3, 2}, {0, 3, 1, 4, 2, 5});
  expect(run1("concat", {x, T({1, 3}, {6, 7, 8})}), {3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  expect(run1("concat", {x, T({2, 1}, {9, 8}), T({2, 0}, {})}, A().i("axis", -1)), {2, 4},
         {0, 1, 2, 9, 3, 4, 5, 8});
}

TEST(ReferenceTest, SliceUsesPythonRules) {
  HostTensor x = I({6}, {0, 1, 2, 3, 4, 5}, dtype::i32);
  expect_int(run1("slice", {x}, A().i("axis", 0).i("start", -4).i("end", -1)), {3}, {2, 3, 4});
  expect_int(run1("slice", {x}, A().i("axis", 0).i("start", 1).i("step", 2)), {3}, {1, 3, 5});
  expect_int(run1("slice", {x}, A().i("axis", 0).i("start", -100).i("end", 100).i("step", 4)), {2},
             {0, 4});
  expect_int(run1("slice", {x}, A().i("axis", 0).i("start", 4).i("end", 2)), {0}, {});
  HostTensor m = T({2, 3}, {0, 1, 2, 3, 4, 5});
  expect(run1("slice", {m}, A().i("axis", -1).i("start", 1)), {2, 2}, {1, 2, 4, 5});
}

TEST(ReferenceTest, IndexedCopies) {
  HostTensor x = T({2, 2}, {1, 2, 3, 4});
  expect(run1("gather", {x, I({2, 2}, {0, 0, 1, 0})}, A().i("axis", 1)), {2, 2}, {1, 1, 4, 3});
  expect(run1("gather", {x, I({1, 2}, {1, 0}, dtype::i32)}, A().i("axis", 0)), {1, 2}, {3, 2});
  expect(run1("index_select", {x, I({3}, {1, 1, 0})}, A().i("axis", 1)), {2, 3},
         {2, 2, 1, 4, 4, 3});
  expect(run1("embedding", {T({3, 2}, {0, 1, 10, 11, 20, 21}), I({2, 1}, {2, 0})}), {2, 1, 2},
         {20, 21, 0, 1});
  EXPECT_EQ(fails("gather", {x, I({2, 2}, {0, 2, 0, 0})}, A().i("axis", 1)),
            OAR_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(fails("index_select", {x, I({1}, {-1})}), OAR_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(fails("embedding", {x, I({1}, {2})}), OAR_STATUS_OUT_OF_RANGE);
}

// ---- Elementwise --------------------------------------------------------------

TEST(ReferenceTest, UnaryValues) {
  HostTensor x = T({4}, {-1.5, 0, 1, 4}, dtype::f64);
  expect(run1("floor", {x}), {4}, {-2, 0, 1, 4});
  expect(run1("ceil", {x}), {4}, {-1, 0, 1, 4});
  expect(run1("relu", {x}), {4}, {0, 0, 1, 4});
  expect(run1("neg", {x}), {4}, {1.5, 0, -1, -4});
  expect(run1("abs", {x}), {4}, {1.5, 0, 1, 4});
  expect(run1("reciprocal", {x}), {4}, {-1 / 1.5, kInf, 1, 0.25});
  expect(run1("rsqrt", {x}), {4}, {kNaN, kInf, 1, 0.5});
  expect(run1("sqrt", {x}), {4}, {kNaN, 0, 1, 2});
  expect(run1("log", {x}), {4}, {kNaN, -kInf, 0, std::log(4.0)});
  expect(run1("sigmoid", {T({3}, {0, -kInf, 1}, dtype::f64)}), {3}, {0.5, 0, 0.7310585786300049},
         1e-15);
  expect(run1("silu", {T({2}, {0, 1}, dtype::f64)}), {2}, {0, 0.7310585786300049}, 1e-15);
  HostTensor one = T({2}, {1, 0}, dtype::f64);
  expect(run1("gelu", {one}), {2}, {0.8413447460685429, 0}, 1e-15);
  expect(run1("gelu", {one}, A().s("approximate", "tanh")), {2}, {0.8411919906082768, 0}, 1e-15);
  EXPECT_EQ(fails("gelu", {one}, A().s("approximate", "fast")), OAR_STATUS_INVALID_ARGUMENT);
  expect(run1("relu", {T({1}, {kNaN})}), {1}, {kNaN});
}

TEST(ReferenceTest, IntegerArithmeticWraps) {
  HostTensor a = I({3}, {INT32_MAX, INT32_MIN, 65536}, dtype::i32);
  HostTensor b = I({3}, {1, -1, 65536}, dtype::i32);
  expect_int(run1("add", {a, b}), {3}, {INT32_MIN, INT32_MAX, 131072});
  expect_int(run1("mul", {a, b}), {3}, {INT32_MAX, INT32_MIN, 0});
  expect_int(run1("sub", {a, b}), {3}, {INT32_MAX - 1, INT32_MIN + 1, 0});
  HostTensor c = I({2}, {INT64_MAX, INT64_MIN});
  expect_int(run1("add", {c, I({1}, {1})}), {2}, {INT64_MIN, INT64_MIN + 1});
  expect_int(run1("mul", {c, I({1}, {2})}), {2}, {-2, 0});
  expect_int(run1("sum", {I({2}, {INT32_MAX, 1}, dtype::i32)}), {}, {INT32_MIN});
  expect_int(run1("prod", {I({2}, {1 << 16, 1 << 16}, dtype::i32)}), {}, {0});
}

TEST(ReferenceTest, IntegerNegationWraps) {
  if ((ops::find_schema("neg")->dtypes & ops::kI32) == 0) {
    GTEST_SKIP() << "schema.cc: neg/abs/relu refuse integers (kSigned is built from the "
                    "attribute-type constant kInts, not ops::kInts)";
  }
  HostTensor a = I({3}, {INT32_MAX, INT32_MIN, 65536}, dtype::i32);
  expect_int(run1("neg", {a}), {3}, {-INT32_MAX, INT32_MIN, -65536});
  expect_int(run1("abs", {a}), {3}, {INT32_MAX, INT32_MIN, 65536});
  expect_int(run1("relu", {a}), {3}, {INT32_MAX, 0, 65536});
  expect_int(run1("neg", {I({1}, {INT64_MIN})}), {1}, {INT64_MIN});
}

TEST(ReferenceTest, BinaryBroadcasts) {
  HostTensor a = T({2, 1}, {10, 20});
  HostTensor b = T({3}, {1, 2, 3});
  expect(run1("add", {a, b}), {2, 3}, {11, 12, 13, 21, 22, 23});
  expect(run1("sub", {b, a}), {2, 3}, {-9, -8, -7, -19, -18, -17});
  expect(run1("div", {a, T({}, {4})}), {2, 1}, {2.5, 5});
  expect(run1("pow", {b, T({1}, {2})}), {3}, {1, 4, 9});
  expect_int(run1("lt", {a, T({3}, {5, 15, 25})}), {2, 3}, {0, 1, 1, 0, 0, 1});
  HostTensor cond = I({2, 1}, {1, 0}, dtype::boolean);
  expect(run1("where", {cond, b, T({}, {-1})}), {2, 3}, {1, 2, 3, -1, -1, -1});
  expect_int(run1("maximum", {I({2}, {-3, 4}, dtype::i32), I({1}, {0}, dtype::i32)}), {2}, {0, 4});
}

TEST(ReferenceTest, NaNSemantics) {
  HostTensor a = T({3}, {kNaN, 1, kNaN});
  HostTensor b = T({3}, {1, kNaN, kNaN});
  expect(run1("maximum", {a, b}), {3}, {kNaN, kNaN, kNaN});
  expect(run1("minimum", {a, T({1}, {-kInf})}), {3}, {kNaN, -kInf, kNaN});
  expect_int(run1("eq", {a, b}), {3}, {0, 0, 0});
  expect_int(run1("ne", {a, b}), {3}, {1, 1, 1});
  for (const char* op : {"lt", "le", "gt", "ge"}) expect_int(run1(op, {a, b}), {3}, {0, 0, 0});
  expect(run1("max", {T({3}, {1, kNaN, 3})}), {}, {kNaN});
  expect(run1("min", {T({3}, {1, kNaN, -3})}), {}, {kNaN});
  expect(run1("sum", {T({2}, {kInf, -kInf})}), {}, {kNaN});
}

TEST(ReferenceTest, HalfRoundsOnceAtTheStore) {
  HostTensor one = T({2}, {1, 1}, dtype::f16);
  HostTensor eps = T({2}, {0x1p-11, 3 * 0x1p-11}, dtype::f16);
  expect(run1("add", {one, eps}), {2}, {1.0, 1 + 0x1p-9});
  HostTensor tiny = T({2}, {0x1p-24, 0x1p-24}, dtype::f16);
  expect(run1("mul", {tiny, T({2}, {0.5, 1.5}, dtype::f16)}), {2}, {0.0, 0x1p-23});
  expect(run1("mul", {T({1}, {256}, dtype::f16), T({1}, {256}, dtype::f16)}), {1}, {kInf});
  HostTensor bf = T({1}, {1}, dtype::bf16);
  expect(run1("add", {bf, T({1}, {0x1p-8}, dtype::bf16)}), {1}, {1.0});
  expect(run1("add", {bf, T({1}, {0x1p-7 + 0x1p-8}, dtype::bf16)}), {1}, {1 + 0x1p-6});
}

// ---- Reductions -----------------------------------------------------------------

TEST(ReferenceTest, ReductionsWithKeepdim) {
  HostTensor x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  expect(run1("sum", {x}, A().ints("axes", {1})), {2}, {6, 15});
  expect(run1("sum", {x}, A().ints("axes", {0}).b("keepdim", true)), {1, 3}, {5, 7, 9});
  expect(run1("sum", {x}), {}, {21});
  expect(run1("mean", {x}, A().ints("axes", {-1}).b("keepdim", true)), {2, 1}, {2, 5});
  expect(run1("prod", {x}, A().ints("axes", {0, 1}).b("keepdim", true)), {1, 1}, {720});
  expect(run1("max", {x}, A().ints("axes", {0})), {3}, {4, 5, 6});
  expect(run1("min", {x}, A().ints("axes", {1})), {2}, {1, 4});
  expect_int(run1("argmax", {x}, A().i("axis", 0).b("keepdim", true)), {1, 3}, {1, 1, 1});
  expect_int(run1("argmin", {x}, A().i("axis", 1)), {2}, {0, 0});
}

TEST(ReferenceTest, ArgReductionsTiesAndNaN) {
  expect_int(run1("argmax", {T({4}, {3, 1, 3, 2})}, A().i("axis", 0)), {}, {0});
  expect_int(run1("argmin", {I({4}, {3, 1, 3, 1}, dtype::i32)}, A().i("axis", 0)), {}, {1});
  HostTensor n = T({4}, {1, kNaN, 3, kNaN});
  expect_int(run1("argmax", {n}, A().i("axis", 0)), {}, {1});
  expect_int(run1("argmin", {n}, A().i("axis", 0)), {}, {1});
}

TEST(ReferenceTest, EmptyReductions) {
  HostTensor e = T({0}, {});
  expect(run1("sum", {e}), {}, {0});
  expect(run1("prod", {e}), {}, {1});
  expect(run1("mean", {e}), {}, {kNaN});
  expect(run1("sum", {T({2, 0}, {})}, A().ints("axes", {1})), {2}, {0, 0});
  for (const char* op : {"max", "min"}) {
    EXPECT_EQ(fails(op, {e}), OAR_STATUS_INVALID_ARGUMENT) << op;
  }
  for (const char* op : {"argmax", "argmin"}) {
    EXPECT_EQ(fails(op, {e}, A().i("axis", 0)), OAR_STATUS_INVALID_ARGUMENT);
  }
  expect(run1("max", {T({0, 2}, {})}, A().ints("axes", {1})), {0}, {});  // nothing reduced empty
}

// ---- Neural network ---------------------------------------------------------------

TEST(ReferenceTest, Matmul) {
  HostTensor a = T({2, 2}, {1, 2, 3, 4});
  HostTensor b = T({2, 2}, {5, 6, 7, 8});
  expect(run1("matmul", {a, b}), {2, 2}, {19, 22, 43, 50});
  expect(run1("matmul", {a, b}, A().b("transpose_b", true)), {2, 2}, {17, 23, 39, 53});
  expect(run1("matmul", {a, b}, A().b("transpose_a", true)), {2, 2}, {26, 30, 38, 44});
  expect(run1("matmul", {T({2, 1, 2}, {1, 2, 3, 4}), T({2, 1}, {1, 1})}), {2, 1, 1}, {3, 7});
  expect(run1("matmul", {T({2, 0}, {}), T({0, 3}, {})}), {2, 3}, {0, 0, 0, 0, 0, 0});
}

TEST(ReferenceTest, SoftmaxIsStable) {
  expect(run1("softmax", {T({2, 2}, {1000, 1000, -kInf, 0})}), {2, 2}, {0.5, 0.5, 0, 1});
  expect(run1("softmax", {T({2, 2}, {1, 2, 3, 4})}, A().i("axis", 0)), {2, 2},
         {0.11920292202211755, 0.11920292202211755, 0.8807970779778823, 0.8807970779778823}, 1e-7);
  expect(run1("log_softmax", {T({2}, {1000, 1000}, dtype::f64)}), {2},
         {-0.6931471805599453, -0.6931471805599453}, 1e-12);
  expect(run1("softmax", {T({2}, {kNaN, 1})}), {2}, {kNaN, kNaN});
}

TEST(ReferenceTest, Norms) {
  expect(run1("layer_norm", {T({1, 2}, {1, 3}), T({2}, {2, 1}), T({2}, {0, 1})}, A().f("eps", 0)),
         {1, 2}, {-2, 2});
  expect(run1("rms_norm", {T({2}, {1, 7}), T({2}, {1, 2})}, A().f("eps", 0)), {2}, {0.2, 2.8},
         1e-7);
  expect(run1("batch_norm",
              {T({1, 2, 1, 1}, {3, 5}), T({2}, {1, 1}), T({2}, {4, 16}), T({2}, {2, 3}),
               T({2}, {1, 0})},
              A().f("eps", 0)),
         {1, 2, 1, 1}, {3, 3});
}

TEST(ReferenceTest, Conv2dPaddingStrideGroups) {
  // Channel 0 = 1..9, channel 1 = ones; group 0 uses the diagonal kernel,
  // group 1 the all-ones kernel; stride 2, padding 1 -> 2x2 outputs.
  HostTensor x = T({1, 2, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  HostTensor w = T({2, 1, 2, 2}, {1, 0, 0, 1, 1, 1, 1, 1});
  HostTensor bias = T({2}, {0.5, -1});
  A attrs;
  attrs.ints("stride", {2}).ints("padding", {1, 1}).i("groups", 2);
  expect(run1("conv2d", {x, w, bias}, attrs), {1, 2, 2, 2}, {1.5, 3.5, 7.5, 14.5, 0, 1, 1, 3});
  // Dilation 2: the four corners of channel 0.
  HostTensor x0 = T({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect(run1("conv2d", {x0, T({1, 1, 2, 2}, {1, 1, 1, 1})}, A().ints("dilation", {2, 2})),
         {1, 1, 1, 1}, {20});
}

TEST(ReferenceTest, Pools) {
  HostTensor x = T({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect(run1("max_pool2d", {x}, A().ints("kernel_size", {2, 2}).ints("stride", {1, 1})),
         {1, 1, 2, 2}, {5, 6, 8, 9});
  A padded;
  padded.ints("kernel_size", {2}).ints("padding", {1});
  expect(run1("max_pool2d", {T({1, 1, 3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9})}, padded),
         {1, 1, 2, 2}, {-1, -2, -4, -5});  // padding never wins
  expect(run1("max_pool2d", {x}, padded), {1, 1, 2, 2}, {1, 3, 7, 9});
  expect(run1("avg_pool2d", {x}, padded), {1, 1, 2, 2}, {0.25, 1.25, 2.75, 7});
  A exclude;
  exclude.ints("kernel_size", {2}).ints("padding", {1}).b("count_include_pad", false);
  expect(run1("avg_pool2d", {x}, exclude), {1, 1, 2, 2}, {1, 2.5, 5.5, 7});
}

TEST(ReferenceTest, CausalAttention) {
  // D = 1, scale 0 -> 1/sqrt(1). Query 1 sees keys 0, 1 with scores 0, 1:
  // 10 * (1 - sigmoid(1)) + 20 * sigmoid(1).
  HostTensor q = T({2, 1}, {1, 1}, dtype::f64), k = T({2, 1}, {0, 1}, dtype::f64);
  HostTensor v = T({2, 1}, {10, 20}, dtype::f64);
  const double mixed = 17.31058578630005;
  expect(run1("scaled_dot_product_attention", {q, k, v}, A().b("causal", true)), {2, 1},
         {10, mixed}, 1e-12);
  expect(run1("scaled_dot_product_attention", {q, k, v}), {2, 1}, {mixed, mixed}, 1e-12);
  // Bottom-right alignment: one query over two keys sees both.
  expect(run1("scaled_dot_product_attention", {T({1, 1}, {1}, dtype::f64), k, v},
              A().b("causal", true)),
         {1, 1}, {mixed}, 1e-12);
  // Two queries, one key: query 0 sees nothing (0), query 1 sees key 0.
  expect(run1("scaled_dot_product_attention",
              {q, T({1, 1}, {0}, dtype::f64), T({1, 1}, {10}, dtype::f64)}, A().b("causal", true)),
         {2, 1}, {0, 10});
  // Top-left alignment: query i sees keys 0..i whatever Lk is, so one query
  // over two keys sees key 0 only, and two queries over one key both see it.
  expect(run1("scaled_dot_product_attention", {T({1, 1}, {1}, dtype::f64), k, v},
              A().b("causal", true).s("causal_alignment", "top_left")),
         {1, 1}, {10}, 1e-12);
  expect(run1("scaled_dot_product_attention",
              {q, T({1, 1}, {0}, dtype::f64), T({1, 1}, {10}, dtype::f64)},
              A().b("causal", true).s("causal_alignment", "top_left")),
         {2, 1}, {10, 10}, 1e-12);
  // An explicit scale: scores 0 and 2 * 1 = 2 weigh 20 by sigmoid(2).
  expect(
      run1("scaled_dot_product_attention", {T({1, 1}, {1}, dtype::f64), k, v}, A().f("scale", 2)),
      {1, 1}, {10 + 10 * 0.8807970779778823}, 1e-12);
}

TEST(ReferenceTest, RotaryEmbedding) {
  HostTensor x = T({1, 4}, {1, 2, 3, 4});
  HostTensor cos = T({1, 2}, {0, 1}), sin = T({1, 2}, {1, 0});
  expect(run1("rotary_embedding", {x, cos, sin}), {1, 4}, {-3, 2, 1, 4});
  expect(run1("rotary_embedding", {x, cos, sin}, A().b("interleaved", true)), {1, 4},
         {-2, 1, 3, 4});
}

TEST(ReferenceTest, CrossEntropy) {
  HostTensor logits = T({2, 2}, {0, 0, 1, 3}, dtype::f64);
  HostTensor target = I({2}, {1, 0});
  expect(run1("cross_entropy", {logits, target}, A().s("reduction", "none")), {2},
         {0.6931471805599453, 2.1269280110429727}, 1e-15);
  expect(run1("cross_entropy", {logits, target}), {}, {1.410037595801459}, 1e-15);
  expect(run1("cross_entropy", {logits, target}, A().s("reduction", "sum")), {},
         {2.820075191602918}, 1e-15);
  expect(run1("cross_entropy", {T({0, 3}, {}), I({0}, {})}), {}, {kNaN});
  EXPECT_EQ(fails("cross_entropy", {logits, I({2}, {0, 2})}), OAR_STATUS_OUT_OF_RANGE);
}

TEST(ReferenceTest, SchemaRefusals) {
  EXPECT_EQ(fails("add", {T({2}, {1, 2}), T({3}, {1, 2, 3})}), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(fails("exp", {I({1}, {1})}), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(fails("add", {T({1}, {1}), T({1}, {1}, dtype::f64)}), OAR_STATUS_INVALID_ARGUMENT);
  // Not refused by the schema, refused by the reference: gather needs an axis
  // to index, and index sizes within x's off the axis.
  EXPECT_EQ(fails("gather", {T({}, {1}), I({}, {0})}, A().i("axis", 0)),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(fails("gather", {T({1, 2}, {1, 2}), I({2, 1}, {0, 0})}, A().i("axis", 1)),
            OAR_STATUS_INVALID_ARGUMENT);
}

TEST(ReferenceTest, Scalars) {
  HostTensor s = T({}, {2.5});
  expect(run1("softmax", {s}, A().i("axis", 0)), {}, {1});
  expect(run1("log_softmax", {s}, A().i("axis", 0)), {}, {0});
  EXPECT_EQ(fails("softmax", {s}), OAR_STATUS_INVALID_ARGUMENT);  // -1 + 0 is not an axis
  expect(run1("sum", {s}, A().ints("axes", {0})), {}, {2.5});
  expect(run1("max", {s}), {}, {2.5});
  expect_int(run1("argmax", {s}, A().i("axis", 0)), {}, {0});
  expect(run1("embedding", {T({2, 1}, {7, 8}), I({}, {1})}), {1}, {8});
  expect(run1("mul", {s, T({2}, {2, kInf})}), {2}, {5, kInf});
}

// ---- Every operator has a reference ---------------------------------------------

// A small valid call of |schema| with data dtype |t|.
struct Case {
  std::vector<Shape> shapes;
  A attrs;
};
Case case_for(const ops::OpSchema& s) {
  const std::string name = s.name, category = s.category;
  Case c;
  auto set = [&](std::vector<Shape> shapes) { c.shapes = std::move(shapes); };
  if (category == "unary" || name == "copy" || name == "cast") set({{2, 3}});
  if (category == "binary" || category == "compare") set({{2, 3}, {3}});
  if (name == "where") set({{2, 1}, {2, 3}, {3}});
  if (category == "reduction") {
    set({{2, 3}});
    s.rule == ops::DtypeRule::kArgReduce ? c.attrs.i("axis", 1) : c.attrs.ints("axes", {1});
  }
  if (name == "fill") c.attrs.f("value", 1.5);
  if (name == "transpose") set({{2, 3}}), c.attrs.ints("perm", {1, 0});
  if (name == "concat") set({{2, 3}, {1, 3}});
  if (name == "slice") set({{2, 3}}), c.attrs.i("axis", 1).i("start", 1);
  if (name == "index_select") set({{2, 3}, {2}}), c.attrs.i("axis", 1);
  if (name == "gather") set({{2, 3}, {2, 2}}), c.attrs.i("axis", 1);
  if (name == "embedding") set({{4, 3}, {2}});
  if (name == "matmul") set({{2, 3}, {3, 2}});
  if (name == "matmul_w8") set({{2, 3}, {4, 3}, {4}});  // x, weight (i8), scale
  if (name == "softmax" || name == "log_softmax") set({{2, 3}});
  if (name == "layer_norm") set({{2, 3}, {3}, {3}});
  if (name == "rms_norm") set({{2, 3}, {3}});
  if (name == "batch_norm") set({{2, 3, 2}, {3}, {3}, {3}, {3}});
  if (name == "conv2d")
    set({{1, 2, 4, 4}, {2, 1, 3, 3}, {2}}), c.attrs.i("groups", 2).ints("padding", {1});
  if (name == "max_pool2d" || name == "avg_pool2d")
    set({{1, 1, 4, 4}}), c.attrs.ints("kernel_size", {2});
  if (name == "scaled_dot_product_attention")
    set({{1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 2}}), c.attrs.b("causal", true);
  if (name == "rotary_embedding") set({{1, 3, 4}, {3, 2}, {3, 2}});
  if (name == "cross_entropy") set({{3, 4}, {3}});
  if (name == "layer_norm_grad" || name == "rms_norm_grad") set({{2, 3}, {2, 3}, {3}});
  if (name == "max_pool2d_grad" || name == "avg_pool2d_grad")
    set({{1, 1, 2, 2}, {1, 1, 4, 4}}), c.attrs.ints("kernel_size", {2});
  if (name == "conv2d_grad_input")
    set({{1, 2, 4, 4}, {2, 1, 3, 3}}),
        c.attrs.i("groups", 2).ints("padding", {1}).ints("input_size", {4, 4});
  if (name == "scaled_dot_product_attention_grad")
    set({{1, 2, 3, 2}, {1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 2}}), c.attrs.b("causal", true);
  if (name == "conv2d_grad_weight")
    set({{1, 2, 4, 4}, {1, 2, 4, 4}}),
        c.attrs.i("groups", 2).ints("padding", {1}).ints("kernel_size", {3, 3});
  if (category == "grad") set({{2, 3}, {2, 3}});  // dy and x (or y): one shape
  if (name == "embedding_grad") set({{2, 3}, {2}}), c.attrs.i("num_embeddings", 4);
  if (name == "cross_entropy_grad") set({{}, {3, 4}, {3}});
  if (name == "rotary_embedding_grad") set({{1, 3, 4}, {3, 2}, {3, 2}});
  if (name == "sgd" || name == "adam" || name == "adamw")  // param, grad, state...: one shape
    set(std::vector<Shape>(s.inputs.size(), Shape{2, 3})), c.attrs.f("lr", 0.1).i("step", 1);
  if (name == "grad_norm") set({{2, 3}, {3}});
  if (name == "clip_grad_norm") set({{2, 3}, {}}), c.attrs.f("max_norm", 1);
  if (category == "math") set(std::vector<Shape>(s.inputs.size(), Shape{2, 3}));  // math_v2
  if (name == "topk") c.attrs.i("k", 2);                                          // math_v2
  if (name == "flip" || name == "tril" || name == "triu") set({{2, 3}});          // layout_v2
  if (name == "expand") set({{1, 3}}), c.attrs.ints("shape", {2, 3});
  if (name == "pad") set({{2, 3}}), c.attrs.ints("pads", {1, 0, 0, 1}).s("mode", "reflect");
  if (name == "one_hot") set({{3}}), c.attrs.i("num_classes", 2);
  if (name == "scatter" || name == "scatter_add")
    set({{2, 3}, {2, 3}, {2, 3}}), c.attrs.i("axis", 1);
  if (name == "arange") c.attrs.f("end", 4);
  return c;
}

TEST(ReferenceCoverageTest, EveryOperatorRunsOnEveryDtype) {
  int calls = 0;
  for (const ops::OpSchema& s : ops::schemas()) {
    SCOPED_TRACE(s.name);
    EXPECT_TRUE(has_reference(s.name));
    Case c = case_for(s);
    EXPECT_TRUE(!c.shapes.empty() || s.inputs.empty()) << "no test case for " << s.name;
    for (DLDataType t : ops::dtypes_in(s.dtypes)) {
      std::vector<HostTensor> in;
      for (size_t i = 0; i < c.shapes.size(); ++i) {
        const bool index = int(i) == s.index_input;
        const bool cond = s.rule == ops::DtypeRule::kWhere && i == 0;
        // Optimizer state and total_norm (inputs other than param and grad):
        // f32 for f16/bf16 params, else the param's dtype.
        const std::string input_name = i < s.inputs.size() ? s.inputs[i].name : "grads";
        const bool state = std::string(s.category) == "optimizer" && input_name != "param" &&
                           input_name != "grad" && input_name != "grads";
        const DLDataType state_dtype = t == dtype::f64 ? dtype::f64 : dtype::f32;
        HostTensor x = HostTensor::zeros(c.shapes[i], index   ? dtype::i64
                                                      : cond  ? dtype::boolean
                                                      : state ? state_dtype
                                                              : t);
        for (int64_t e = 0; e < x.numel(); ++e) {
          (index || cond) ? x.set_int(e, e % 2) : x.set(e, double((e * 7) % 11) * 0.25 - 1);
        }
        if (std::string(s.name) == "matmul_w8" && i == 1) {  // the weight is i8
          x = HostTensor::zeros(c.shapes[i], dtype::i8);
          for (int64_t e = 0; e < x.numel(); ++e) x.set_int(e, e * 37 % 256 - 128);
        }
        in.push_back(std::move(x));
      }
      const std::vector<DLDataType> outs =
          s.rule == ops::DtypeRule::kCast ? ops::dtypes_in(s.dtypes) : std::vector<DLDataType>{t};
      for (DLDataType out : outs) {
        const bool explicit_out = s.inputs.empty() || s.rule == ops::DtypeRule::kCast;
        std::vector<HostTensor> y;
        ASSERT_NO_THROW(y = run_reference(
                            s, in, c.attrs.list(),
                            explicit_out ? std::vector<DLDataType>{out} : std::vector<DLDataType>{},
                            {2, 2}))
            << dtype_name(t) << " -> " << dtype_name(out);
        ASSERT_EQ(y.size(), s.outputs.size());
        EXPECT_GT(y[0].numel(), 0);
        ++calls;
      }
    }
  }
  EXPECT_GT(calls, int(ops::schemas().size()));
}

}  // namespace
}  // namespace oar::conformance
