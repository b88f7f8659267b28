// Running operators: the dispatcher finds the kernel a device's plugin
// registered for (operator, dtypes of every tensor) in O(1), checks the call,
// and hands the plugin a call record. A missing kernel is an oar::Error that
// names the operator, the dtypes, the device and the signatures that exist.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oar/kernel.h"
#include "oar/tensor.hpp"

namespace oar {

class Stream;

// An interned operator name; make one once and reuse it on hot paths.
namespace ops {
struct OpSchema;
}

class OpId {
 public:
  explicit OpId(std::string_view name);
  uint32_t value() const { return value_; }
  // The operator's schema, or nullptr for an operator outside the set (a
  // framework's own custom operator, checked by its kernel alone).
  const ops::OpSchema* schema() const { return schema_; }

 private:
  uint32_t value_;
  const ops::OpSchema* schema_;
};

// One typed attribute. Strings and arrays are borrowed for the call.
struct Attr {
  Attr(const char* name, int64_t v) : attr{name, OAR_ATTR_TYPE_INT, {}} { attr.value.i = v; }
  Attr(const char* name, int v) : Attr(name, int64_t(v)) {}
  Attr(const char* name, double v) : attr{name, OAR_ATTR_TYPE_FLOAT, {}} { attr.value.f = v; }
  Attr(const char* name, bool v) : attr{name, OAR_ATTR_TYPE_BOOL, {}} { attr.value.b = v; }
  Attr(const char* name, const char* v) : attr{name, OAR_ATTR_TYPE_STRING, {}} { attr.value.s = v; }
  // Arrays are borrowed: keep the vector alive until dispatch returns.
  Attr(const char* name, const std::vector<int64_t>& v) : attr{name, OAR_ATTR_TYPE_INT_ARRAY, {}} {
    attr.value.ints.data = v.data();
    attr.value.ints.count = v.size();
  }
  Attr(const char* name, const std::vector<double>& v) : attr{name, OAR_ATTR_TYPE_FLOAT_ARRAY, {}} {
    attr.value.floats.data = v.data();
    attr.value.floats.count = v.size();
  }
  oar_attr_t attr;
};

// Attributes built at run time (from a test file, a model, another
// framework's call): the list owns every name, string and array, so the
// caller's sources may go away once add() returns. raw() views the list as
// the C ABI's records; the view stays valid while the list lives and is not
// changed.
class AttrList {
 public:
  AttrList() = default;
  AttrList& add(std::string name, int64_t v);
  AttrList& add(std::string name, int v) { return add(std::move(name), int64_t(v)); }
  AttrList& add(std::string name, double v);
  AttrList& add(std::string name, bool v);
  AttrList& add(std::string name, std::string v);
  AttrList& add(std::string name, const char* v) { return add(std::move(name), std::string(v)); }
  AttrList& add(std::string name, std::vector<int64_t> v);
  AttrList& add(std::string name, std::vector<double> v);
  // A copy of a C record (its name, string or array is copied).
  AttrList& add(const oar_attr_t& attr);
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::vector<oar_attr_t> raw() const;

 private:
  struct Entry {
    std::string name;
    int32_t type = 0;
    decltype(oar_attr_t::value) scalar{};  // int, float, bool
    std::string text;
    std::vector<int64_t> ints;
    std::vector<double> floats;
  };
  std::vector<Entry> entries_;
};

// Runs |op| on |stream| with tensors of the stream's device.
void dispatch(Stream& stream, const OpId& op, std::initializer_list<const Tensor*> inputs,
              std::initializer_list<const Tensor*> outputs, std::initializer_list<Attr> attrs = {});

// The same with attributes built at run time.
void dispatch(Stream& stream, const OpId& op, std::initializer_list<const Tensor*> inputs,
              std::initializer_list<const Tensor*> outputs, const AttrList& attrs);

// The same over raw DLTensors (data = allocation handle, byte_offset = offset);
// what the typed helpers and DLPack-based frameworks call.
void dispatch(Stream& stream, const OpId& op, const DLTensor* inputs, size_t num_inputs,
              DLTensor* outputs, size_t num_outputs, const oar_attr_t* attrs = nullptr,
              size_t num_attrs = 0);

}  // namespace oar
