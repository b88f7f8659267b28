// The plain reference implementation of every operator of the set: simple
// loops with wide accumulation (double for floats, int64 for integers), no
// plugin code, no shared kernels. The conformance suite compares each plugin's
// results against it with the per-dtype tolerances in docs/conformance.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dlpack/dlpack.h"
#include "oar/kernel.h"
#include "oar/ops.hpp"

namespace oar::conformance {

// A contiguous host tensor in one of the operator set's dtypes, stored in its
// own format (f16/bf16 bits, i64, bool as one byte).
struct HostTensor {
  std::vector<int64_t> shape;
  DLDataType dtype{};
  std::vector<uint8_t> bytes;

  static HostTensor zeros(std::vector<int64_t> shape, DLDataType dtype);
  int64_t numel() const;
  // Element |i| (row-major) as a double (bool: 0/1; f16/bf16 decoded).
  double get(int64_t i) const;
  // Element |i| as an integer (integers and bool only).
  int64_t get_int(int64_t i) const;
  // Stores |value| rounded to the dtype (round to nearest even for f16/bf16;
  // integers: truncation toward zero).
  void set(int64_t i, double value);
  void set_int(int64_t i, int64_t value);
};

// Runs the reference of |schema| on |inputs|; writes outputs of
// |output_dtypes| (the schema's rule decides them; cast and fill need them)
// with the shapes ops::infer_shapes gives (fill: |fill_shape|). Throws
// oar::Error INVALID_ARGUMENT for calls the schema refuses.
std::vector<HostTensor> run_reference(const ops::OpSchema& schema,
                                      const std::vector<HostTensor>& inputs,
                                      const std::vector<oar_attr_t>& attrs,
                                      const std::vector<DLDataType>& output_dtypes,
                                      const std::vector<int64_t>& fill_shape = {});

// Whether run_reference implements the operator |name|.
bool has_reference(const std::string& name);

// IEEE half and bfloat16 conversions, written independently of any plugin.
double half_bits_to_double(uint16_t bits);
uint16_t double_to_half_bits(double value);
double bf16_bits_to_double(uint16_t bits);
uint16_t double_to_bf16_bits(double value);

}  // namespace oar::conformance
