// Tests of the SDK's kernel helpers (oar/sdk/kernel.hpp): the schema a plugin
// reads without liboar, signatures for every dtype rule, optional and
// variadic inputs, KernelTable's attribute defaults and error handling,
// element types, tensor spans and broadcast loops.
#include "oar/sdk/kernel.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace oar::sdk {
namespace {

template <typename Body>
oar_status_t status_of(Body&& body) {
  try {
    body();
    return OAR_STATUS_OK;
  } catch (const Error& e) {
    return e.code();
  }
}

// A registrar that records what a plugin registers, as the core's would.
struct Recorded {
  std::string op;
  Signature dtypes;
  size_t inputs;
  size_t outputs;
  uint32_t flags;
  oar_kernel_fn fn;
  void* user_data;
};

class FakeRegistrar {
 public:
  FakeRegistrar() {
    registrar_.struct_size = OAR_KERNEL_REGISTRAR_STRUCT_SIZE;
    registrar_.context = this;
    registrar_.register_kernel = [](void* context, const oar_kernel_def_t* def) {
      auto* self = static_cast<FakeRegistrar*>(context);
      self->kernels.push_back(
          {def->op_name, Signature(def->dtypes, def->dtypes + def->num_inputs + def->num_outputs),
           def->num_inputs, def->num_outputs, def->flags, def->fn, def->user_data});
      return oar_status_t(OAR_STATUS_OK);
    };
  }
  KernelRegistrar sdk() const { return KernelRegistrar(&registrar_); }

  std::vector<Recorded> kernels;

 private:
  oar_kernel_registrar_t registrar_{};
};

bool has(const std::vector<Signature>& signatures, const Signature& wanted) {
  for (const Signature& s : signatures) {
    if (s.size() != wanted.size()) continue;
    bool same = true;
    for (size_t i = 0; i < s.size(); ++i) same = same && s[i] == wanted[i];
    if (same) return true;
  }
  return false;
}

TEST(SdkKernelTest, ThePluginReadsTheSchemaWithoutLiboar) {
  const ops::OpSchema& softmax = schema_of("softmax");
  EXPECT_STREQ(softmax.name, "softmax");
  EXPECT_EQ(status_of([] { schema_of("no_such_op", "test"); }), OAR_STATUS_INTERNAL);
}

TEST(SdkKernelTest, SignaturesFollowEachDtypeRule) {
  const auto add = signatures_for(schema_of("add"), ops::kF32 | ops::kI64);
  EXPECT_EQ(add.size(), 2u);
  EXPECT_TRUE(has(add, {dtype::f32, dtype::f32, dtype::f32}));
  const auto eq = signatures_for(schema_of("eq"), ops::kF16);
  EXPECT_TRUE(has(eq, {dtype::f16, dtype::f16, dtype::boolean}));
  const auto where = signatures_for(schema_of("where"), ops::kBF16);
  EXPECT_TRUE(has(where, {dtype::boolean, dtype::bf16, dtype::bf16, dtype::bf16}));
  const auto gather = signatures_for(schema_of("gather"), ops::kF32);
  EXPECT_TRUE(has(gather, {dtype::f32, dtype::i32, dtype::f32}));
  EXPECT_TRUE(has(gather, {dtype::f32, dtype::i64, dtype::f32}));
  const auto argmax = signatures_for(schema_of("argmax"), ops::kF32);
  EXPECT_TRUE(has(argmax, {dtype::f32, dtype::i64}));
  const auto cast = signatures_for(schema_of("cast"), ops::kF32 | ops::kBool);
  EXPECT_EQ(cast.size(), 4u);
  EXPECT_TRUE(has(cast, {dtype::boolean, dtype::f32}));
  // Dtypes the operator does not take are left out: mean is float-only.
  EXPECT_TRUE(signatures_for(schema_of("mean"), ops::kI32).empty());
}

TEST(SdkKernelTest, OptionalAndVariadicInputsGetOneSignaturePerInputCount) {
  // conv2d's bias is optional: with and without it.
  const auto conv = signatures_for(schema_of("conv2d"), ops::kF32);
  EXPECT_EQ(conv.size(), 2u);
  EXPECT_TRUE(has(conv, {dtype::f32, dtype::f32, dtype::f32}));
  EXPECT_TRUE(has(conv, {dtype::f32, dtype::f32, dtype::f32, dtype::f32}));
  // concat takes one or more inputs: 1..max_variadic of them.
  const auto concat = signatures_for(schema_of("concat"), ops::kF32, 4);
  EXPECT_EQ(concat.size(), 4u);
  EXPECT_TRUE(has(concat, {dtype::f32, dtype::f32}));
  EXPECT_TRUE(has(concat, Signature(5, dtype::f32)));
  EXPECT_EQ(signatures_for(schema_of("concat"), ops::kF32).size(), kMaxVariadicInputs);
}

// What the test body saw, for the assertions below.
struct Seen {
  int64_t axis = 0;
  bool keepdim = true;
  size_t inputs = 0;
};

void record_softmax(const KernelCall& call) {
  auto* seen = static_cast<Seen*>(call.user_data);
  seen->axis = call.attrs.get_int("axis");
  seen->inputs = call.num_inputs();
}

void record_sum(const KernelCall& call) {
  static_cast<Seen*>(call.user_data)->keepdim = call.attrs.get_bool("keepdim");
}

void refuse(const KernelCall&) { throw Error(OAR_STATUS_INVALID_ARGUMENT, "refused"); }

TEST(SdkKernelTest, KernelTableRegistersEveryDtypeAndCallsTheBodyWithSchemaDefaults) {
  FakeRegistrar registrar;
  KernelTable table;
  Seen seen;
  table.add(registrar.sdk(), "softmax", &record_softmax, ops::kFloats,
            OAR_KERNEL_FLAG_STRIDED_INPUTS, &seen);
  ASSERT_EQ(registrar.kernels.size(), 4u);  // f16 bf16 f32 f64
  for (const Recorded& k : registrar.kernels) {
    EXPECT_EQ(k.op, "softmax");
    EXPECT_EQ(k.inputs, 1u);
    EXPECT_EQ(k.outputs, 1u);
    EXPECT_EQ(k.flags, uint32_t(OAR_KERNEL_FLAG_STRIDED_INPUTS));
  }
  oar_kernel_call_t call{};
  call.struct_size = OAR_KERNEL_CALL_STRUCT_SIZE;
  call.num_inputs = 1;
  call.user_data = registrar.kernels[0].user_data;
  // No attributes passed: the schema's default axis, -1.
  seen.axis = 7;
  EXPECT_EQ(registrar.kernels[0].fn(&call), OAR_STATUS_OK);
  EXPECT_EQ(seen.axis, -1);
  EXPECT_EQ(seen.inputs, 1u);
  // A passed attribute wins over the default.
  oar_attr_t axis{};
  axis.name = "axis";
  axis.type = OAR_ATTR_TYPE_INT;
  axis.value.i = 0;
  call.attrs = &axis;
  call.num_attrs = 1;
  EXPECT_EQ(registrar.kernels[0].fn(&call), OAR_STATUS_OK);
  EXPECT_EQ(seen.axis, 0);
  // The wrong attribute type is the caller's error, not the plugin's crash.
  axis.type = OAR_ATTR_TYPE_FLOAT;
  EXPECT_EQ(registrar.kernels[0].fn(&call), OAR_STATUS_INVALID_ARGUMENT);

  table.add(registrar.sdk(), "sum", &record_sum, ops::kF32, 0, &seen);
  oar_kernel_call_t sum{};
  sum.struct_size = OAR_KERNEL_CALL_STRUCT_SIZE;
  sum.user_data = registrar.kernels.back().user_data;
  EXPECT_EQ(registrar.kernels.back().fn(&sum), OAR_STATUS_OK);
  EXPECT_FALSE(seen.keepdim);
}

TEST(SdkKernelTest, ABodysErrorBecomesItsStatus) {
  FakeRegistrar registrar;
  KernelTable table;
  table.add(registrar.sdk(), "relu", &refuse, ops::kF32);
  oar_kernel_call_t call{};
  call.struct_size = OAR_KERNEL_CALL_STRUCT_SIZE;
  call.user_data = registrar.kernels[0].user_data;
  EXPECT_EQ(registrar.kernels[0].fn(&call), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(registrar.kernels[0].fn(nullptr), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(status_of([&] { table.add(registrar.sdk(), "relu", nullptr, ops::kF32); }),
            OAR_STATUS_INVALID_ARGUMENT);
}

TEST(SdkKernelTest, RequireNotNullTakesFunctionPointers) {
  oar_host_callback_fn callback = nullptr;
  EXPECT_EQ(status_of([&] { require_not_null(callback, "callback"); }),
            OAR_STATUS_INVALID_ARGUMENT);
  callback = [](void*, oar_status_t) {};
  EXPECT_EQ(status_of([&] { require_not_null(callback, "callback"); }), OAR_STATUS_OK);
}

TEST(SdkKernelTest, WithDtypeMapsEveryDtypeOfTheSetToItsStorageType) {
  auto name = [](DLDataType t) {
    return with_dtype(t, [](auto v) -> std::string {
      using T = decltype(v);
      if constexpr (std::is_same_v<T, half>) return "half";
      if constexpr (std::is_same_v<T, bfloat16>) return "bfloat16";
      if constexpr (std::is_same_v<T, bool>) return "bool";
      if constexpr (std::is_same_v<T, float>) return "float";
      if constexpr (std::is_same_v<T, double>) return "double";
      if constexpr (std::is_same_v<T, int32_t>) return "int32";
      return "int64";
    });
  };
  EXPECT_EQ(name(dtype::f16), "half");
  EXPECT_EQ(name(dtype::bf16), "bfloat16");
  EXPECT_EQ(name(dtype::boolean), "bool");
  EXPECT_EQ(name(DLDataType{OAR_DTYPE_CODE_BOOL, 8, 1}), "bool");
  EXPECT_EQ(name(dtype::f64), "double");
  EXPECT_EQ(name(dtype::i64), "int64");
  EXPECT_EQ(status_of([&] { name(dtype::u8); }), OAR_STATUS_INVALID_ARGUMENT);
  // A restricted set refuses the rest without instantiating for them.
  EXPECT_EQ(status_of([] { with_dtype<ops::kFloats>(dtype::i32, [](auto) {}); }),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(dtype_of<bfloat16>() == dtype::bf16);
  EXPECT_TRUE(dtype_of<bool>() == dtype::boolean);
}

TEST(SdkKernelTest, HalfAndBfloatConvertWithRoundingToNearestEven) {
  EXPECT_EQ(half_to_float(float_to_half(1.5f)), 1.5f);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bffu);  // the largest half
  EXPECT_EQ(float_to_half(1e6f), 0x7c00u);      // overflows to inf
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));          // smallest subnormal
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00u);  // tie to even: down
  EXPECT_EQ(bf16_to_float(float_to_bf16(-2.0f)), -2.0f);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80u);  // tie to even: down
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
  bool b = false;
  store(&b, 3);
  EXPECT_EQ(*reinterpret_cast<uint8_t*>(&b), 1u);
  EXPECT_EQ(load(&b), 1);
}

TEST(SdkKernelTest, TheDataPointerHasTheByteOffsetApplied) {
  float storage[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int64_t shape[1] = {4};
  DLTensor t{};
  t.data = storage;
  t.byte_offset = 2 * sizeof(float);
  t.ndim = 1;
  t.dtype = dtype::f32;
  t.shape = shape;
  t.strides = nullptr;  // row-major
  EXPECT_EQ(reinterpret_cast<float*>(data_pointer(t)), storage + 2);
  TensorView v = view_of(t);
  EXPECT_EQ(v.ptr<float>()[0], 2.0f);
  EXPECT_EQ(v.strides[0], 1);
  EXPECT_TRUE(v.contiguous());
  ByteSpan span = byte_span(t, "t");
  EXPECT_EQ(span.offset, 8u);
  EXPECT_EQ(span.size, 16u);
}

TEST(SdkKernelTest, SpansOfHugeShapesAreRefusedNotWrapped) {
  int64_t shape[2] = {int64_t(1) << 40, int64_t(1) << 40};
  int64_t strides[2] = {int64_t(1) << 40, 1};
  DLTensor t{};
  t.ndim = 2;
  t.dtype = dtype::f32;
  t.shape = shape;
  t.strides = strides;
  EXPECT_EQ(status_of([&] { byte_span(t, "t"); }), OAR_STATUS_INVALID_ARGUMENT);
}

TEST(SdkKernelTest, BroadcastLoopsVisitEveryOutputElementOnceInRanges) {
  // y[2,3] = a[2,3] + b[3] with a transposed (strided) a.
  float a_data[6] = {0, 3, 1, 4, 2, 5};  // a[i][j] = a_data[j * 2 + i] = 3 * i + j
  float b_data[3] = {10, 20, 30};
  float y_data[6] = {};
  TensorView y, a, b;
  y.data = reinterpret_cast<char*>(y_data);
  y.ndim = 2;
  y.shape[0] = 2;
  y.shape[1] = 3;
  y.strides[0] = 3;
  y.strides[1] = 1;
  a = y;
  a.data = reinterpret_cast<char*>(a_data);
  a.strides[0] = 1;
  a.strides[1] = 2;
  b.data = reinterpret_cast<char*>(b_data);
  b.ndim = 1;
  b.shape[0] = 3;
  b.strides[0] = 1;
  const TensorView views[3] = {y, a, b};
  map_elements<float>(views, [](float x, float z) { return x + z; });
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(y_data[i * 3 + j], float(3 * i + j) + b_data[j]);
  }
  // Ranges split the same visit: [0, 4) then [4, 6).
  const Loop<3> loop = make_loop(views);
  int visited = 0;
  auto count = [&](const int64_t*, int64_t n) { visited += int(n); };
  for_each_run(loop, 0, 4, count);
  for_each_run(loop, 4, 6, count);
  EXPECT_EQ(visited, 6);
  // Shapes that do not broadcast are refused.
  TensorView c = b;
  c.shape[0] = 2;
  const TensorView bad[2] = {y, c};
  EXPECT_EQ(status_of([&] { make_loop(bad); }), OAR_STATUS_INVALID_ARGUMENT);
}

// The bits a fill by pattern writes: one rounding to the dtype, integers
// truncated and wrapped, bool from != 0.
TEST(SdkKernelTest, ScalarBitsRoundOnceTruncateAndWrap) {
  EXPECT_EQ(scalar_bits(1.0, dtype::f32), 0x3f800000u);
  EXPECT_EQ(scalar_bits(1.0, dtype::f16), 0x3c00u);
  EXPECT_EQ(scalar_bits(-2.0, dtype::bf16), 0xc000u);
  // 1 + 2^-11 + 2^-30 is just above the half-way point between two f16
  // values: rounding to f32 first (to the tie) and then to f16 (to even)
  // would give 1.0; one rounding gives the next f16 up.
  EXPECT_EQ(scalar_bits(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30), dtype::f16), 0x3c01u);
  double half = 0.5;
  uint64_t half_bits;
  std::memcpy(&half_bits, &half, 8);
  EXPECT_EQ(scalar_bits(0.5, dtype::f64), half_bits);
  EXPECT_EQ(scalar_bits(-1.9, dtype::i32), 0xffffffffu);  // truncated to -1, 32 bits
  EXPECT_EQ(scalar_bits(-1.9, dtype::i64), ~uint64_t(0));
  EXPECT_EQ(scalar_bits(300.0, dtype::i32) & 0xff, 44u);  // an i8 fill writes the low byte
  EXPECT_EQ(scalar_bits(std::nan(""), dtype::i64), 0u);
  EXPECT_EQ(scalar_bits(std::nan(""), dtype::boolean), 1u);
  EXPECT_EQ(scalar_bits(0.0, dtype::boolean), 0u);
}

}  // namespace
}  // namespace oar::sdk
