// The reference implementation's building blocks, shared by reference.cc
// (operator set v1) and the reference_<part>.cc files that implement later
// groups of operators (the same groups as core/ops/schema_parts.h). Private to
// the conformance suite.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "conformance/reference/reference.h"

namespace oar::conformance::ref {

using Shape = std::vector<int64_t>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

[[noreturn]] void fail(oar_status_t code, const std::string& what);
[[noreturn]] void bad_dtype(DLDataType t);
bool is_float(DLDataType t);
int64_t product(const Shape& s, size_t from = 0, size_t to = SIZE_MAX);

// Index arithmetic over row-major shapes.
Shape strides_of(const Shape& s);
// Row-major over |extents|: base + sum(coordinate[d] * strides[d]) per element.
std::vector<int64_t> index_table(const Shape& extents, const Shape& strides, int64_t base = 0);
// Offsets into |shape| of every combination of the dimensions |select| keeps.
std::vector<int64_t> offsets(const Shape& shape, const std::vector<bool>& select);
// Offsets into |in| for each element of |out| under NumPy broadcasting.
std::vector<int64_t> broadcast_table(const Shape& out, const Shape& in);

// Every element of |t| as a double.
std::vector<double> values(const HostTensor& t);
void copy_element(HostTensor& dst, int64_t di, const HostTensor& src, int64_t si);
// index[i], refused with OUT_OF_RANGE naming |op| unless 0 <= index < n.
int64_t checked_index(const HostTensor& index, int64_t i, int64_t n, const char* op);
double nan_max(double a, double b);  // NaN if either is NaN
double nan_min(double a, double b);
int64_t add_wrap(int64_t a, int64_t b);  // two's-complement wrapping
int64_t mul_wrap(int64_t a, int64_t b);
int64_t neg_wrap(int64_t a);
double gelu(double x, bool tanh_form);

// What an operator's implementation receives.
struct Ctx {
  const ops::OpSchema& schema;
  const std::vector<HostTensor>& in;
  ops::Attrs attrs;
  std::vector<HostTensor>& out;
  const HostTensor& x() const { return in[0]; }
  HostTensor& y() { return out[0]; }
  int64_t axis() const {
    const int64_t a = attrs.get_int("axis");
    return a < 0 ? a + int64_t(in[0].shape.size()) : a;
  }
  // The axis of a layout operator: x needs a dimension to index.
  int64_t layout_axis() const {
    if (in[0].shape.empty()) {
      fail(OAR_STATUS_INVALID_ARGUMENT, std::string(schema.name) + ": x needs a dimension");
    }
    return axis();
  }
};
using Impl = std::function<void(Ctx&)>;
using F1 = std::function<double(double)>;
using I1 = std::function<int64_t(int64_t)>;
using F2 = std::function<double(double, double)>;
using I2 = std::function<int64_t(int64_t, int64_t)>;

// The reference implementation of each operator, by name.
using ReferenceTable = std::map<std::string, Impl>;

// Elementwise over broadcast inputs; floats in double, integers/bool in int64.
void unary(Ctx& c, const F1& f, const I1& g = {});
void binary(Ctx& c, const F2& f, const I2& g = {});
// Which dimensions of x |axes| names (none given: all); |negate| flips a mask.
std::vector<bool> reduced_dims(const Ctx& c, const std::vector<int64_t>& axes);
std::vector<bool> negate(std::vector<bool> v);
// Rows along |axis| of x: |fn|(values of the row) -> written back to y in place.
void along_axis(Ctx& c, int64_t axis, const std::function<void(std::vector<double>&)>& fn);
double row_max(const std::vector<double>& row);
// A 2-D attribute with |fallback| for none and one value standing for both.
std::vector<int64_t> pair_attr(const ops::Attrs& attrs, const char* name, Shape fallback);

// The groups of operators after set v1, one file each (reference_<part>.cc).
void add_grad_references(ReferenceTable& table);
void add_nn_grad_references(ReferenceTable& table);
void add_optimizer_references(ReferenceTable& table);
void add_layout_v2_references(ReferenceTable& table);
void add_math_v2_references(ReferenceTable& table);

}  // namespace oar::conformance::ref
