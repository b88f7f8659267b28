// The op API a data-driven caller uses: attributes built at run time and
// owned by the API, tensors from host data in one call, fill given a shape,
// and the kernel query that tries no dispatch.
#include <cstring>
#include <string>
#include <vector>

#include "cpu_fixture.h"
#include "oar/ops.hpp"

namespace oar::testing {
namespace {

using OpApiTest = CpuTest;

std::vector<float> values_of(Stream& stream, const Tensor& t) {
  std::vector<float> values(size_t(t.numel()));
  t.copy_to_host(stream, values.data());
  stream.synchronize();
  return values;
}

// The attributes come from strings and vectors that die before the call.
AttrList attrs_from_data(const std::vector<std::pair<std::string, std::string>>& fields) {
  AttrList list;
  for (const auto& [name, text] : fields) {
    std::string key = name;  // a temporary: the list must copy it
    if (text == "true" || text == "false") {
      list.add(key, text == "true");
    } else if (text.front() == '[') {
      std::vector<int64_t> ints;
      for (size_t i = 1; i + 1 < text.size(); i += 2) ints.push_back(text[i] - '0');
      list.add(key, ints);
    } else {
      list.add(key, text);
    }
    key.assign(key.size(), 'X');  // scribble over the source
  }
  return list;
}

TEST_F(OpApiTest, CallTakesAttributesBuiltAtRunTime) {
  Stream& stream = device().default_stream();
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  Tensor t = Tensor::from_host(stream, x.data(), {2, 3, 4}, dtype::f32);
  AttrList attrs = attrs_from_data({{"axes", "[0,2]"}, {"keepdim", "true"}});
  ASSERT_EQ(attrs.size(), 2u);
  std::vector<Tensor> y = ops::call(stream, "sum", {&t}, attrs);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{1, 3, 1}));
  // Row j: sum over i in {0, 1}, k in 0..3 of 12 i + 4 j + k = 48 + 32 j + 12.
  EXPECT_EQ(values_of(stream, y[0]), (std::vector<float>{60, 92, 124}));
  // A string attribute outlives its source too: gelu's tanh form differs
  // from the erf form at 1.0 (0.84119 vs 0.84134).
  float one = 1.0f;
  Tensor x1 = Tensor::from_host(stream, &one, {1}, dtype::f32);
  float tanh_form = values_of(
      stream, ops::call(stream, "gelu", {&x1}, attrs_from_data({{"approximate", "tanh"}}))[0])[0];
  float erf_form = values_of(stream, ops::call(stream, "gelu", {&x1}, AttrList())[0])[0];
  EXPECT_NEAR(tanh_form, 0.841192f, 2e-5f);
  EXPECT_NEAR(erf_form, 0.841345f, 2e-5f);
}

TEST_F(OpApiTest, AttrListCopiesCRecordsAndReportsTypeErrors) {
  Stream& stream = device().default_stream();
  std::vector<float> x{1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_host(stream, x.data(), {2, 3}, dtype::f32);
  AttrList attrs;
  {
    std::vector<int64_t> perm{1, 0};
    std::string name = "perm";
    oar_attr_t raw{name.c_str(), OAR_ATTR_TYPE_INT_ARRAY, {}};
    raw.value.ints.data = perm.data();
    raw.value.ints.count = perm.size();
    attrs.add(raw);
    perm.assign({7, 7});
    name.assign("xxxx");
  }
  std::vector<oar_attr_t> raw = attrs.raw();
  ASSERT_EQ(raw.size(), 1u);
  EXPECT_STREQ(raw[0].name, "perm");
  Tensor y = ops::call(stream, "transpose", {&t}, attrs)[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values_of(stream, y), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  // A bool where an int array is expected: refused by the schema.
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    ops::call(stream, "transpose", {&t}, AttrList().add("perm", true));
  });
  EXPECT_NE(message.find("perm"), std::string::npos) << message;
  oar_attr_t unnamed{nullptr, OAR_ATTR_TYPE_INT, {}};
  error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { AttrList().add(unnamed); });
}

TEST_F(OpApiTest, FromHostKeepsItsOwnCopyUntilTheStreamPassesIt) {
  Stream stream = device().create_stream();
  std::promise<void> gate = block(stream);  // the upload waits behind this
  std::vector<float> host{1.5f, -2.0f, 3.25f, 0.0f, 8.0f, -0.5f};
  Tensor t = Tensor::from_host(stream, host.data(), {3, 2}, dtype::f32);
  std::fill(host.begin(), host.end(), 99.0f);  // changed before the upload ran
  gate.set_value();
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(t.dtype() == dtype::f32);
  EXPECT_EQ(values_of(stream, t), (std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, 8.0f, -0.5f}));
  EXPECT_EQ(host, std::vector<float>(6, 99.0f));
  // Empty tensors need no data; others do.
  EXPECT_EQ(Tensor::from_host(stream, nullptr, {0, 4}, dtype::f32).numel(), 0);
  error_of(OAR_STATUS_INVALID_ARGUMENT,
           [&] { Tensor::from_host(stream, nullptr, {2}, dtype::f32); });
}

TEST_F(OpApiTest, FillThroughCallGivenAShape) {
  Stream& stream = device().default_stream();
  std::vector<int64_t> shape{2, 3};
  Tensor y = ops::call(stream, "fill", {}, AttrList().add("value", 2.5), dtype::f32, &shape)[0];
  EXPECT_EQ(y.shape(), shape);
  EXPECT_EQ(values_of(stream, y), std::vector<float>(6, 2.5f));
  Tensor z = ops::fill(stream, {4}, dtype::i32, -3.0);
  std::vector<int32_t> ints(4);
  z.copy_to_host(stream, ints.data());
  stream.synchronize();
  EXPECT_EQ(ints, std::vector<int32_t>(4, -3));
  // Without a shape the call says what is missing.
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    ops::call(stream, "fill", {}, AttrList().add("value", 1.0), dtype::f32);
  });
  EXPECT_NE(message.find("output shape"), std::string::npos) << message;
  // A shape that contradicts the inferred one is refused by the dispatcher.
  std::vector<float> x{1, 2};
  Tensor t = Tensor::from_host(stream, x.data(), {2}, dtype::f32);
  std::vector<int64_t> wrong{3};
  message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    ops::call(stream, "relu", {&t}, AttrList(), {0, 0, 0}, &wrong);
  });
  EXPECT_NE(message.find("must have shape [2]"), std::string::npos) << message;
}

}  // namespace
}  // namespace oar::testing

namespace oar::testing {
namespace {

TEST(OpApiKernelQuery, HasKernelAgreesWithDispatch) {
  Runtime runtime(cpu_only());
  Device& device = *runtime.devices().at(0);
  EXPECT_TRUE(device.has_kernel("add", {dtype::f32, dtype::f32}, {dtype::f32}));
  EXPECT_TRUE(device.has_kernel("cast", {dtype::f32}, {dtype::i32}));
  // Wrong output dtype, mixed inputs, wrong arity, an unknown operator.
  EXPECT_FALSE(device.has_kernel("add", {dtype::f32, dtype::f32}, {dtype::f64}));
  EXPECT_FALSE(device.has_kernel("add", {dtype::f32, dtype::i32}, {dtype::f32}));
  EXPECT_FALSE(device.has_kernel("add", {dtype::f32}, {dtype::f32}));
  EXPECT_FALSE(device.has_kernel("no_such_operator", {dtype::f32}, {dtype::f32}));
  // The query is the dispatcher's own lookup: where it says no, dispatch
  // says "no kernel"; where it says yes, dispatch runs.
  Stream& stream = device.default_stream();
  Tensor a = Tensor::empty(device, {2}, dtype::f32);
  Tensor c = Tensor::empty(device, {2}, dtype::f64);
  static const OpId add("add");
  try {
    dispatch(stream, add, {&a, &a}, {&c});
    ADD_FAILURE() << "add (f32, f32) -> (f64) ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("add"), std::string::npos) << e.what();
  }
  Tensor b = Tensor::empty(device, {2}, dtype::f32);
  dispatch(stream, add, {&a, &a}, {&b});
  stream.synchronize();
}

}  // namespace
}  // namespace oar::testing

namespace oar::testing {
namespace {

TEST_F(OpApiTest, AttributeTypeErrorsNameTheExpectedTypeAndTheValue) {
  Stream& stream = device().default_stream();
  std::vector<float> x{1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_host(stream, x.data(), {2, 3}, dtype::f32);
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    ops::call(stream, "sum", {&t}, AttrList().add("axes", 1));
  });
  EXPECT_NE(message.find("sum: attribute axes must be an int array, not an int (1)"),
            std::string::npos)
      << message;
  message = error_of(OAR_STATUS_INVALID_ARGUMENT,
                     [&] { ops::call(stream, "softmax", {&t}, AttrList().add("axis", 1.5)); });
  EXPECT_NE(message.find("attribute axis must be an int, not a float (1.5)"), std::string::npos)
      << message;
  message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    ops::call(stream, "gelu", {&t}, AttrList().add("approximate", std::vector<int64_t>{1, 2}));
  });
  EXPECT_NE(message.find("must be a string, not an int array ([1, 2])"), std::string::npos)
      << message;
  // Attrs (what kernels read) says the same when a kernel is handed a wrong type.
  const ops::OpSchema* softmax = ops::find_schema("softmax");
  ASSERT_NE(softmax, nullptr);
  oar_attr_t raw{"axis", OAR_ATTR_TYPE_BOOL, {}};
  raw.value.b = true;
  ops::Attrs attrs(*softmax, &raw, 1);
  message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { attrs.get_int("axis"); });
  EXPECT_NE(message.find("softmax: attribute axis must be an int, not a bool (true)"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace oar::testing

namespace oar::testing {
namespace {

// The dispatcher remembers calls whose schema check passed (per thread, by
// the full signature: dtypes, shapes, attributes). A call that differs in any
// of them is checked again.
TEST_F(OpApiTest, RememberedSchemaChecksNeverPassADifferentCall) {
  Stream& stream = device().default_stream();
  static const OpId softmax("softmax");
  static const OpId add("add");
  Tensor x = Tensor::empty(device(), {2, 3}, dtype::f32);
  Tensor y = Tensor::empty(device(), {2, 3}, dtype::f32);
  Tensor wrong = Tensor::empty(device(), {3, 2}, dtype::f32);
  for (int repeat = 0; repeat < 3; ++repeat) {
    dispatch(stream, softmax, {&x}, {&y}, {Attr("axis", int64_t(1))});
    // Another attribute value, type or name; another output shape.
    error_of(OAR_STATUS_INVALID_ARGUMENT,
             [&] { dispatch(stream, softmax, {&x}, {&y}, {Attr("axis", int64_t(2))}); });
    error_of(OAR_STATUS_INVALID_ARGUMENT,
             [&] { dispatch(stream, softmax, {&x}, {&y}, {Attr("axis", 1.0)}); });
    error_of(OAR_STATUS_INVALID_ARGUMENT,
             [&] { dispatch(stream, softmax, {&x}, {&y}, {Attr("axes", int64_t(1))}); });
    error_of(OAR_STATUS_INVALID_ARGUMENT,
             [&] { dispatch(stream, softmax, {&x}, {&wrong}, {Attr("axis", int64_t(1))}); });
    // The same shapes through another operator, and a broadcast that fails.
    dispatch(stream, add, {&x, &y}, {&y});
    error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { dispatch(stream, add, {&x, &wrong}, {&y}); });
  }
  // Strings are compared by content, not by pointer.
  Tensor g = Tensor::empty(device(), {4}, dtype::f32);
  static const OpId gelu("gelu");
  std::string mode = "tanh";
  dispatch(stream, gelu, {&g}, {&g}, {Attr("approximate", mode.c_str())});
  mode = "tang";
  std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
    dispatch(stream, gelu, {&g}, {&g}, {Attr("approximate", mode.c_str())});
  });
  EXPECT_NE(message.find("tang"), std::string::npos) << message;
  stream.synchronize();
}

}  // namespace
}  // namespace oar::testing

namespace oar::testing {
namespace {

// One wording on every plugin (opencl and vulkan say the same words): the core
// names the operator once, the plugin says why.
TEST_F(OpApiTest, EmptyAxisRefusalOfMaxMinAndArgReductionsNamesTheOperatorOnce) {
  Stream& stream = device().default_stream();
  Tensor x = Tensor::empty(device(), {3, 0}, dtype::f32);
  const std::string why = "over an empty axis there is no value to return (no identity)";
  for (const char* op : {"max", "min"}) {
    std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT, [&] {
      ops::call(stream, op, {&x}, AttrList().add("axes", std::vector<int64_t>{1}));
    });
    EXPECT_NE(message.find(std::string(op) + ": " + why), std::string::npos) << message;
    EXPECT_EQ(message.find(std::string(op) + ": " + op), std::string::npos) << message;
  }
  for (const char* op : {"argmax", "argmin"}) {
    std::string message = error_of(OAR_STATUS_INVALID_ARGUMENT,
                                   [&] { ops::call(stream, op, {&x}, AttrList().add("axis", 1)); });
    EXPECT_NE(message.find(std::string(op) + ": " + why), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace oar::testing
