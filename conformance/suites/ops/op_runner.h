// Running one operator call on the device under test and on the reference,
// from the same host inputs: shared by the operator and model suites.
#pragma once

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

// Runs |schema| on the device through oar::dispatch with outputs of the
// inferred shapes (|fill_shape| for fill) and returns them (not waited for).
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

// Uploads |c|'s inputs (seeded by |id|), runs |schema| on the device and the
// reference, and compares every output with the family's tolerance for the
// output dtype. Throws TestFailure naming |id| on any difference.
void run_op_case(Stream& stream, const std::string& id, const ops::OpSchema& schema,
                 const OpCase& c, Family family);

}  // namespace oar::conformance
