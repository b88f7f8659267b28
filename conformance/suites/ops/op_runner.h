// Running one operator call on the device under test and on the reference,
// from the same host inputs: shared by the operator and model suites.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conformance/reference/reference.h"
#include "conformance/suites/ops/compare.h"
#include "conformance/suites/ops/tensor_data.h"
#include "oar/ops.hpp"

namespace oar::conformance {

// An attribute that owns its string or array (oar_attr_t only borrows).
struct AttrValue {
  std::string name;
  int32_t type = OAR_ATTR_TYPE_INT;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;
  std::string text() const;  // "axis=1"
};
AttrValue attr(const char* name, int64_t value);
AttrValue attr(const char* name, double value);
AttrValue attr(const char* name, bool value);
AttrValue attr(const char* name, const char* value);
AttrValue attr(const char* name, std::vector<int64_t> value);

// Borrowing views of |attrs|, valid while |attrs| lives.
std::vector<oar_attr_t> raw_attrs(const std::vector<AttrValue>& attrs);

// The dtype of the data tensors of a call (the one the schema's rule keys on).
DLDataType data_dtype(const ops::OpSchema& schema, const std::vector<DLDataType>& inputs,
                      DLDataType out_dtype);
// The dtypes of the outputs: the rule's, |out_dtype| for cast and fill.
std::vector<DLDataType> result_dtypes(const ops::OpSchema& schema,
                                      const std::vector<DLDataType>& inputs, DLDataType out_dtype);

// Guard bytes. Every tensor the operator suite hands a kernel is a view at
// guard_margin() bytes inside a buffer of its own, so that a kernel that
// writes (or reads) past either end of it touches bytes the suite checks.
// Output margins hold kGuardByte; an output's own bytes hold kSentinelByte
// until the kernel writes them (NaN for every float dtype, -1 for integers),
// so an element the kernel leaves unwritten, or accumulates into, shows.
// Input margins hold kSentinelByte too: a read past an input's end meets a
// NaN (or -1), not a plausible neighbour.
inline constexpr uint8_t kGuardByte = 0xA5;
inline constexpr uint8_t kSentinelByte = 0xFF;
// max(512, the device's min_alignment): the caching allocator's own
// granularity, so that a guarded tensor is as aligned as any other.
uint64_t guard_margin(const Device& device);

// A new contiguous tensor of |shape| in a guarded buffer: margins filled with
// kGuardByte and the tensor with kSentinelByte, ordered on |stream|.
Tensor guarded_empty(Stream& stream, const std::vector<int64_t>& shape, DLDataType dtype);

// A guarded tensor's whole buffer (margins and elements) copied to the host,
// queued on a stream: complete when the stream has run the copy.
struct GuardedBytes {
  uint64_t margin = 0;                          // where the elements start
  std::unique_ptr<std::vector<uint8_t>> bytes;  // never moves while the copy is queued
};
GuardedBytes queue_read(Stream& stream, const Tensor& tensor);
// The first element's byte in |read|.
const uint8_t* elements_of(const GuardedBytes& read);

// |read| of output |index| of the call |what|: fails if a byte of either
// margin changed (naming how many and where), else returns the elements.
HostTensor checked_output(const std::string& what, size_t index, const Tensor& output,
                          const GuardedBytes& read);

// An input in a guarded buffer, and the bytes it must still hold after a
// kernel read it (kernels never write their inputs).
struct GuardedInput {
  Tensor tensor;  // contiguous, or a transposed (non-contiguous) view
  uint64_t margin = 0;
  std::vector<uint8_t> bytes;  // the buffer's content: margins, then elements in storage order
};
// Queues the upload of |host| (stored transposed when |transposed|) into a
// guarded buffer whose margins hold kSentinelByte, on |stream|. The copy reads
// |bytes|: keep the result alive (moving it is fine) until the stream ran it.
GuardedInput guarded_input(Stream& stream, const HostTensor& host, bool transposed);
// Queues the copy of |host| over |input|'s elements on |stream| and records
// it as what |input| must hold afterwards. guarded_input's upload must be
// complete; keep |input| alive until the stream has run this one.
void queue_upload(Stream& stream, GuardedInput& input, const HostTensor& host, bool transposed);
// Fails naming input |index| of |what| if |read| differs from what the input
// held before the call (its margins or its elements).
void expect_input_unchanged(const std::string& what, size_t index, const GuardedInput& input,
                            const GuardedBytes& read);

// The outputs of |schema| on |inputs|: guarded tensors of the inferred shapes
// (|fill_shape| for fill), their margins and sentinels filled on |stream|.
std::vector<Tensor> allocate_outputs(Stream& stream, const ops::OpSchema& schema,
                                     const std::vector<const Tensor*>& inputs,
                                     const std::vector<AttrValue>& attrs, DLDataType out_dtype = {},
                                     const std::vector<int64_t>& fill_shape = {});
// Calls |schema|'s kernel through oar::dispatch (returns before it is done).
void dispatch_op(Stream& stream, const ops::OpSchema& schema,
                 const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& outputs,
                 const std::vector<AttrValue>& attrs);

// allocate_outputs, then dispatch_op; returns the outputs (not waited for).
std::vector<Tensor> run_device(Stream& stream, const ops::OpSchema& schema,
                               const std::vector<const Tensor*>& inputs,
                               const std::vector<AttrValue>& attrs, DLDataType out_dtype = {},
                               const std::vector<int64_t>& fill_shape = {});

// Runs the reference; an exception from it is rethrown as a TestFailure that
// says the reference, not the device, failed.
std::vector<HostTensor> run_host(const std::string& what, const ops::OpSchema& schema,
                                 const std::vector<HostTensor>& inputs,
                                 const std::vector<AttrValue>& attrs, DLDataType out_dtype = {},
                                 const std::vector<int64_t>& fill_shape = {});

// One operator test: inputs, attributes and how to compare.
struct OpCase {
  std::string name;  // the shape/attribute case: "broadcast_row", "transpose_b"
  std::vector<InputSpec> inputs;
  std::vector<AttrValue> attrs;
  DLDataType out_dtype{};           // cast and fill
  std::vector<int64_t> fill_shape;  // fill
  int64_t k = 1;                    // factors per output (prod)
};

// " (add of f32[13, 31] f32[31])": the call, as failure messages name it.
std::string describe(const ops::OpSchema& schema, const OpCase& c);

// |c|'s host inputs, each seeded by |seed_text| + "#<index>".
std::vector<HostTensor> make_inputs(const OpCase& c, const std::string& seed_text);

// The reference's outputs for |inputs|, and what bounds their rounding error.
struct Expected {
  std::vector<HostTensor> outputs;
  bool scaled = false;   // sums of terms: compared with a magnitude
  HostTensor magnitude;  // the same sum over absolute values (when scaled)
  double acc = -1;       // >= 0: replaces the family's acc (a decomposed call's bound)
};
Expected expected_results(const std::string& what, const ops::OpSchema& schema, const OpCase& c,
                          Family family, const std::vector<HostTensor>& inputs);
// Fails naming |what| unless |got| matches |expected| within |family|'s tolerance.
void expect_results(const std::string& what, const OpCase& c, Family family,
                    const std::vector<HostTensor>& got, const Expected& expected);

// Uploads |c|'s inputs (seeded by |id|), runs |schema| on the device and the
// reference, and compares every output with the family's tolerance for the
// output dtype. Every tensor is guarded: a kernel that writes outside its
// outputs (their margins, or its inputs) fails too. Throws TestFailure naming
// |id| on any difference.
void run_op_case(Stream& stream, const std::string& id, const ops::OpSchema& schema,
                 const OpCase& c, Family family);

}  // namespace oar::conformance
