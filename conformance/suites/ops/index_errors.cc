// The one asynchronous error of the operator set (docs/ops.md, "Errors"): an
// index value outside its dimension, or negative, fails the stream with
// OUT_OF_RANGE. Each case runs on a stream of its own, which it leaves failed;
// the data stay on the device, so the check is the error, never the values.
#include <functional>
#include <string>
#include <vector>

#include "conformance/harness/test.h"
#include "conformance/suites/ops/op_cases.h"
#include "oar/ops.hpp"

namespace oar::conformance {
namespace {

using Call = std::function<void(Stream&, const Tensor& data, const Tensor& index)>;

struct IndexCase {
  const char* op;
  std::vector<int64_t> data_shape;   // x, weight or logits (f32)
  std::vector<int64_t> index_shape;  // i64
  int64_t extent;                    // the first index value that is out of range
  Call call;
};

std::vector<IndexCase> index_cases() {
  return {
      {"index_select",
       {4, 6},
       {3},
       6,
       [](Stream& s, const Tensor& x, const Tensor& i) {
         ops::call(s, "index_select", {&x, &i}, {{"axis", 1}});
       }},
      {"gather",
       {4, 6},
       {4, 2},
       6,
       [](Stream& s, const Tensor& x, const Tensor& i) {
         ops::call(s, "gather", {&x, &i}, {{"axis", 1}});
       }},
      {"embedding",
       {5, 3},
       {2, 2},
       5,
       [](Stream& s, const Tensor& w, const Tensor& i) {
         ops::call(s, "embedding", {&w, &i});
       }},
      {"cross_entropy",
       {3, 7},
       {3},
       7,
       [](Stream& s, const Tensor& logits, const Tensor& target) {
         ops::call(s, "cross_entropy", {&logits, &target}, {{"reduction", "none"}});
       }},
  };
}

void expect_out_of_range(Device& device, const IndexCase& c, int64_t bad_value) {
  Stream stream = device.create_stream();
  Tensor data = Tensor::empty(device, c.data_shape, dtype::f32);
  Tensor index = Tensor::empty(device, c.index_shape, dtype::i64);
  std::vector<float> values(size_t(data.numel()), 0.25f);
  std::vector<int64_t> indices(size_t(index.numel()), 0);
  indices.back() = bad_value;  // one bad value among good ones
  data.copy_from_host(stream, values.data());
  index.copy_from_host(stream, indices.data());
  stream.synchronize();  // the stream is healthy before the operator

  const std::string what = std::string(c.op) + " with index " + std::to_string(bad_value) +
                           " (dimension of " + std::to_string(c.extent) + ")";
  try {
    c.call(stream, data, index);
    stream.synchronize();
  } catch (const Error& e) {
    if (e.code() != OAR_STATUS_OUT_OF_RANGE) {
      fail(what + " failed with " + e.what() + "; docs/ops.md requires OUT_OF_RANGE");
    }
    return;
  }
  fail(what + " succeeded; docs/ops.md requires the stream to fail with OUT_OF_RANGE");
}

}  // namespace

void register_index_error_tests(Registry& registry, const oar_device_properties_t&) {
  for (const IndexCase& c : index_cases()) {
    const std::string op = c.op;
    const std::string group = "ops/" + op;
    registry.add({group + "/f32/index_past_the_end_fails_the_stream", "ops", op, "f32", group,
                  [c](TestContext& context) { expect_out_of_range(context.device, c, c.extent); }});
    registry.add({group + "/f32/negative_index_fails_the_stream", "ops", op, "f32", group,
                  [c](TestContext& context) { expect_out_of_range(context.device, c, -1); }});
  }
}

}  // namespace oar::conformance
