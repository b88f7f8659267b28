// The one asynchronous error of the operator set (docs/ops.md, "Errors"): an
// index value outside its dimension, or negative, fails the stream with
// OUT_OF_RANGE. For every indexed operator, both index dtypes and both kinds
// of bad index, on every device (no fault injection needed), the failure must
// reach everything docs/abi.md says it reaches (policy P14, section 5):
// stream_query and stream_synchronize of the stream (again and again: it
// stays failed), event_query and event_synchronize of every event recorded
// after the kernel (not those recorded before), host callbacks queued after
// it, and device_synchronize; a stream that waits on an event recorded after
// it is still ordered after that work, and reports OK or the same error.
// Values whose low 32 bits are in range catch a kernel that reads 64-bit
// indices as 32-bit ones. Each case runs on streams of its own, which it
// leaves failed; the check is the error, never the data. The message of the
// error, at the call or at synchronize, must name the operator, the bad index
// value and the bound as "[0, bound)", as on every plugin (docs/ops.md,
// "Errors"); where the core ran the operator through its decomposition, the
// primitive that read the index (gather, scatter, scatter_add) may be the one
// named (docs/ops.md, "Primitives and decompositions").
#include <cctype>
#include <chrono>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "conformance/harness/test.h"
#include "conformance/suites/abi/abi_util.h"
#include "conformance/suites/ops/op_cases.h"
#include "core/ops/decompositions/decompose.h"
#include "oar/ops.hpp"

namespace oar::conformance {
namespace {

using namespace std::chrono_literals;
using abi::expect_status;

using Call = std::function<void(Stream&, const Tensor& data, const Tensor& index)>;

struct IndexCase {
  const char* op;
  std::vector<int64_t> data_shape;   // x, weight or logits (f32)
  std::vector<int64_t> index_shape;  // i32 or i64
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
      {"embedding_grad",
       {2, 2, 3},
       {2, 2},
       5,
       [](Stream& s, const Tensor& dy, const Tensor& i) {
         ops::call(s, "embedding_grad", {&dy, &i}, {{"num_embeddings", 5}});
       }},
      {"cross_entropy_grad",
       {3, 7},
       {3},
       7,
       [](Stream& s, const Tensor& logits, const Tensor& target) {
         const Tensor dloss = Tensor::empty(s.device(), {3}, dtype::f32, &s);
         ops::call(s, "cross_entropy_grad", {&dloss, &logits, &target}, {{"reduction", "none"}});
       }},
      // The operator set v2's indexing (docs/ops.md, "one_hot", "scatter,
      // scatter_add"): the data tensor is unused by one_hot; scatter's src
      // (values irrelevant: the check is the error) is made here.
      {"one_hot",
       {1},
       {2, 3},
       4,
       [](Stream& s, const Tensor&, const Tensor& i) {
         ops::call(s, "one_hot", {&i}, {{"num_classes", 4}}, dtype::f32);
       }},
      {"scatter",
       {4, 6},
       {4, 2},
       6,
       [](Stream& s, const Tensor& x, const Tensor& i) {
         const Tensor src = Tensor::empty(s.device(), {4, 2}, dtype::f32, &s);
         ops::call(s, "scatter", {&x, &i, &src}, {{"axis", 1}});
       }},
      {"scatter_add",
       {6, 4},
       {2, 4},
       6,
       [](Stream& s, const Tensor& x, const Tensor& i) {
         const Tensor src = Tensor::empty(s.device(), {2, 4}, dtype::f32, &s);
         ops::call(s, "scatter_add", {&x, &i, &src}, {{"axis", 0}});
       }},
  };
}

// The bad values of one test: the first is checked through every observer,
// the others (extremes, and values whose low 32 bits are in range) through
// stream_synchronize.
std::vector<int64_t> bad_values(bool past_the_end, bool i64, int64_t extent) {
  constexpr int64_t k2to32 = int64_t(1) << 32;
  if (past_the_end) {
    if (!i64) return {extent, std::numeric_limits<int32_t>::max()};
    return {extent, k2to32 + 1, std::numeric_limits<int64_t>::max()};
  }
  if (!i64) return {-1, std::numeric_limits<int32_t>::min()};
  return {-1, -k2to32 + 1, std::numeric_limits<int64_t>::min()};
}

// A stream holding one bad index among good ones, ready for the operator.
struct Prepared {
  Stream stream;
  Tensor data;
  Tensor index;
  bool decomposed = false;  // the call ran through the operator's decomposition
};

Prepared prepare(Device& device, const IndexCase& c, bool i64, int64_t bad_value) {
  Prepared p{device.create_stream(), Tensor::empty(device, c.data_shape, dtype::f32),
             Tensor::empty(device, c.index_shape, i64 ? dtype::i64 : dtype::i32)};
  std::vector<float> values(size_t(p.data.numel()), 0.25f);
  p.data.copy_from_host(p.stream, values.data());
  if (i64) {
    std::vector<int64_t> indices(size_t(p.index.numel()), 0);
    indices.back() = bad_value;  // one bad value among good ones
    p.index.copy_from_host(p.stream, indices.data());
    p.stream.synchronize();
  } else {
    std::vector<int32_t> indices(size_t(p.index.numel()), 0);
    indices.back() = int32_t(bad_value);
    p.index.copy_from_host(p.stream, indices.data());
    p.stream.synchronize();
  }
  return p;
}

// True if |text| holds |token| with no letter, digit, '_' or '-' right
// before it nor a letter, digit or '_' right after it.
bool has_token(const std::string& text, const std::string& token) {
  auto word = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (size_t at = text.find(token); at != std::string::npos; at = text.find(token, at + 1)) {
    const size_t end = at + token.size();
    if (at > 0 && (word(text[at - 1]) || text[at - 1] == '-')) continue;
    if (end < text.size() && word(text[end])) continue;
    return true;
  }
  return false;
}

// The message of an index error names the operator, the index value and the
// bound (as "[0, bound)"; the value is looked for outside that range).
void expect_index_message(const IndexCase& c, int64_t bad, const std::string& message,
                          const std::string& what, bool decomposed) {
  const std::string range = "[0, " + std::to_string(c.extent) + ")";
  std::string rest = message;
  const size_t at = rest.find(range);
  if (at != std::string::npos) rest.erase(at, range.size());
  std::string missing;
  // A decomposition reads its indices with gather, scatter or scatter_add.
  const bool primitive = has_token(message, "gather") || has_token(message, "scatter") ||
                         has_token(message, "scatter_add");
  if (!has_token(message, c.op) && !(decomposed && primitive))
    missing += std::string(missing.empty() ? "" : ",") + " the operator (" + c.op + ")";
  if (!has_token(rest, std::to_string(bad)))
    missing += std::string(missing.empty() ? "" : ",") + " the index (" + std::to_string(bad) + ")";
  if (at == std::string::npos)
    missing += std::string(missing.empty() ? "" : ",") + " the bound (as " + range + ")";
  if (!missing.empty()) {
    fail("the error of " + what + " is \"" + message + "\"; it does not name" + missing +
         "; docs/ops.md (\"Errors\"): the message names the operator, the index and the bound");
  }
}

// Runs the operator; returns false if the call itself failed with
// OUT_OF_RANGE (allowed: the error is reported, at once), fails on any other
// error.
bool launch(const IndexCase& c, Prepared& p, int64_t bad, const std::string& what) {
  const uint64_t decompositions = decompose::decomposition_count();
  try {
    c.call(p.stream, p.data, p.index);
    p.decomposed = decompose::decomposition_count() != decompositions;
  } catch (const Error& e) {
    p.decomposed = decompose::decomposition_count() != decompositions;
    if (e.code() != OAR_STATUS_OUT_OF_RANGE) {
      fail(what + " failed at the call with " + e.what() + "; docs/ops.md requires OUT_OF_RANGE");
    }
    expect_index_message(c, bad, e.message(), what + " (at the call)", p.decomposed);
    return false;
  }
  return true;
}

void expect_stream_fails(Device& device, const IndexCase& c, Prepared& p, int64_t bad,
                         const std::string& what) {
  const std::string call = "stream_synchronize after " + what;
  const oar_status_t status = device.api().stream_synchronize(p.stream.handle());
  std::string message = expect_status(device, status, OAR_STATUS_OUT_OF_RANGE, call);
  if (status == OAR_STATUS_OUT_OF_RANGE) {
    // The harness puts |call| (which names the operator and the value) first.
    if (message.compare(0, call.size() + 2, call + ": ") == 0) message.erase(0, call.size() + 2);
    expect_index_message(c, bad, message, call, p.decomposed);
  }
}

// The full check for one bad value.
void expect_failure_propagates(Device& device, const IndexCase& c, bool i64, int64_t bad) {
  const oar_plugin_api_t& api = device.api();
  const std::string what = std::string(c.op) + " with " + (i64 ? "i64" : "i32") + " index " +
                           std::to_string(bad) + " (dimension of " + std::to_string(c.extent) + ")";
  Prepared p = prepare(device, c, i64, bad);
  const oar_stream_t s = p.stream.handle();
  Buffer scratch = device.allocate_uncached(4096);
  abi::SynchronizeOnExit drain{device};
  Event before = device.create_event();
  before.record(p.stream);
  if (!launch(c, p, bad, what)) return;
  // Work after the failing kernel, observed by events and a host callback.
  Event after_kernel = device.create_event();
  after_kernel.record(p.stream);
  p.stream.fill(scratch, 0, 0x11, 4096);
  std::unique_ptr<abi::Probe> callback;
  if (abi::has_callbacks(device)) callback = std::make_unique<abi::Probe>(p.stream);
  Event after_more = device.create_event();
  after_more.record(p.stream);
  // Another stream waits on the failed stream's event.
  Stream waiter = device.create_stream();
  waiter.wait(after_more);
  std::unique_ptr<abi::Probe> waited;
  if (callback) waited = std::make_unique<abi::Probe>(waiter);
  Event on_waiter = device.create_event();
  on_waiter.record(waiter);

  // stream_query: not idle while pending, then the error (never idle and OK).
  oar_status_t query = OAR_STATUS_OK;
  bool idle = false;
  abi::wait_until([&] {
    idle = false;
    query = api.stream_query(s, &idle);
    return query != OAR_STATUS_OK || idle;
  });
  if (query == OAR_STATUS_OK) {
    fail(idle ? "stream_query reported the stream idle and healthy after " + what +
                    "; docs/abi.md: the stream has failed and query returns its error"
              : "stream_query still reported work pending " +
                    std::to_string(abi::kWaitLimit.count()) + " s after " + what);
  }
  expect_status(device, query, OAR_STATUS_OUT_OF_RANGE, "stream_query after " + what);

  // Events recorded after the kernel: query (polled until done) and synchronize.
  for (Event* event : {&after_kernel, &after_more}) {
    const std::string which = event == &after_kernel
                                  ? "an event recorded right after " + what
                                  : "an event recorded after " + what + " and more work";
    oar_status_t status = OAR_STATUS_OK;
    bool done = false;
    abi::wait_until([&] {
      done = false;
      status = api.event_query(event->handle(), &done);
      return status != OAR_STATUS_OK || done;
    });
    if (status == OAR_STATUS_OK) {
      fail(done ? "event_query reported " + which +
                      " complete and OK; docs/abi.md: events recorded after a failure return it"
                : "event_query still reported " + which + " incomplete after " +
                      std::to_string(abi::kWaitLimit.count()) + " s");
    }
    expect_status(device, status, OAR_STATUS_OUT_OF_RANGE, "event_query of " + which);
    expect_status(device, api.event_synchronize(event->handle()), OAR_STATUS_OUT_OF_RANGE,
                  "event_synchronize of " + which);
  }
  // An event recorded before the kernel completed without error.
  bool before_done = false;
  expect_status(device, api.event_query(before.handle(), &before_done), OAR_STATUS_OK,
                "event_query of an event recorded before " + what);
  expect(before_done, "an event recorded before " + what + " is not complete after it");
  expect_status(device, api.event_synchronize(before.handle()), OAR_STATUS_OK,
                "event_synchronize of an event recorded before " + what);

  // The stream stays failed; the callback queued after the kernel got the error.
  expect_stream_fails(device, c, p, bad, what);
  expect_stream_fails(device, c, p, bad, what + " (a second time: the stream stays failed)");
  if (callback) {
    callback->wait_finished("queued after " + what);
    expect(callback->status() == OAR_STATUS_OUT_OF_RANGE,
           "a host callback queued after " + what + " got status " +
               status_name(callback->status()) + "; docs/abi.md: it gets the stream's error");
  }
  expect_status(device, api.device_synchronize(device.handle()), OAR_STATUS_OUT_OF_RANGE,
                "device_synchronize while a stream has failed with " + what);

  // The waiting stream: ordered after the failed work, then OK or the same error.
  oar_status_t waiter_status = api.stream_synchronize(waiter.handle());
  if (waiter_status != OAR_STATUS_OK) {
    expect_status(device, waiter_status, OAR_STATUS_OUT_OF_RANGE,
                  "stream_synchronize of a stream that waited on an event recorded after " + what);
  }
  if (waited) {
    expect(waited->finished() && waited->started_at() >= callback->finished_at(),
           "work queued after stream_wait_event on an event recorded after " + what +
               " ran before the work before that event had finished");
  }
  bool waiter_done = false;
  oar_status_t waiter_event = api.event_query(on_waiter.handle(), &waiter_done);
  if (waiter_status != OAR_STATUS_OK) {
    expect_status(device, waiter_event, waiter_status,
                  "event_query of an event recorded on the waiting stream, which failed with " +
                      std::string(status_name(waiter_status)));
    return;
  }
  expect_status(device, waiter_event, OAR_STATUS_OK,
                "event_query of an event recorded on the waiting stream, which is healthy");
  expect(waiter_done,
         "an event recorded on the waiting stream is not complete after its "
         "stream_synchronize");
}

void expect_out_of_range(Device& device, const IndexCase& c, bool i64, bool past_the_end) {
  const std::vector<int64_t> values = bad_values(past_the_end, i64, c.extent);
  expect_failure_propagates(device, c, i64, values[0]);
  for (size_t v = 1; v < values.size(); ++v) {
    const std::string what = std::string(c.op) + " with " + (i64 ? "i64" : "i32") + " index " +
                             std::to_string(values[v]) + " (dimension of " +
                             std::to_string(c.extent) + ")";
    Prepared p = prepare(device, c, i64, values[v]);
    if (!launch(c, p, values[v], what)) continue;
    expect_stream_fails(device, c, p, values[v], what);
  }
}

}  // namespace

void register_index_error_tests(Registry& registry, const oar_device_properties_t&) {
  for (const IndexCase& c : index_cases()) {
    const std::string op = c.op;
    const std::string group = "ops/" + op;
    for (bool i64 : {true, false}) {
      const std::string index = i64 ? "i64" : "i32";
      registry.add({group + "/f32/" + index + "_index_past_the_end_fails_the_stream", "ops", op,
                    "f32", group, [c, i64](TestContext& context) {
                      expect_out_of_range(context.device, c, i64, true);
                    }});
      registry.add(
          {group + "/f32/" + index + "_negative_index_fails_the_stream", "ops", op, "f32", group,
           [c, i64](TestContext& context) { expect_out_of_range(context.device, c, i64, false); }});
    }
  }
}

}  // namespace oar::conformance
