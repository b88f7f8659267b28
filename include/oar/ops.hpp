// The operator set: one schema table that defines every operator (inputs,
// outputs, attributes with types and defaults, dtype rules, shape inference),
// and typed helpers over oar::dispatch for frameworks. docs/ops.md states each
// operator's exact semantics.
//
// The dispatcher checks every call of a schema operator against its schema
// before the plugin sees it: arity, attribute names and types, dtypes, and the
// output shapes (which must equal the inferred ones). Kernels may rely on that.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "oar/dispatch.hpp"
#include "oar/kernel.h"
#include "oar/tensor.hpp"

namespace oar::ops {

// The most dimensions a schema operator's tensors may have.
inline constexpr int kMaxDims = 8;

// Sets of dtypes, as bits.
enum DtypeBits : uint32_t {
  kF16 = 1u << 0,
  kBF16 = 1u << 1,
  kF32 = 1u << 2,
  kF64 = 1u << 3,
  kI32 = 1u << 4,
  kI64 = 1u << 5,
  kBool = 1u << 6,
  kI8 = 1u << 7,
  kU8 = 1u << 8,
  kI16 = 1u << 9,
  kFloats = kF16 | kBF16 | kF32 | kF64,
  kInts = kI32 | kI64,
  kNumbers = kFloats | kInts,
  kAll = kNumbers | kBool,
  // The narrow integers (quantized values, masks). Not part of kInts,
  // kNumbers or kAll: an operator takes them only where its schema names
  // kSmallInts (or one of its bits) explicitly.
  kSmallInts = kI8 | kU8 | kI16,
  // Every integer dtype (narrow and wide).
  kAllInts = kInts | kSmallInts,
};

// The bit of |dtype| (0 for dtypes outside the operator set).
uint32_t dtype_bit(DLDataType dtype);
// Every dtype whose bit is in |bits|, in a fixed order
// (f16 bf16 f32 f64 i32 i64 bool i8 u8 i16).
std::vector<DLDataType> dtypes_in(uint32_t bits);

// How an operator's dtypes relate.
enum class DtypeRule {
  kSame,       // all inputs and outputs share one dtype from |dtypes|
  kCompare,    // inputs share one dtype from |dtypes|; outputs are bool
  kCast,       // input any dtype of |dtypes|, output any dtype of |dtypes|
  kWhere,      // input 0 is bool; the other inputs and the output share one dtype
  kIndexed,    // input |index_input| is i32 or i64; the rest share one dtype
  kArgReduce,  // the input has a dtype from |dtypes|; the output is i64
  kCustom,     // the schema's own check_dtypes_fn and output_dtypes_fn decide
};

struct OpSchema;
class Attrs;
// An operator's own shape rule: the output shapes from the input shapes and
// attributes (throws oar::Error INVALID_ARGUMENT naming the operator).
using ShapeRule = std::vector<std::vector<int64_t>> (*)(
    const OpSchema& schema, const std::vector<std::vector<int64_t>>& inputs, const Attrs& attrs);
// An operator's own dtype check (DtypeRule::kCustom): throws like check_dtypes.
using DtypeCheck = void (*)(const OpSchema& schema, const DLTensor* inputs, size_t num_inputs,
                            const DLTensor* outputs, size_t num_outputs);
// The output dtypes of a kCustom operator whose first data input has |input|.
using OutputDtypes = std::vector<DLDataType> (*)(const OpSchema& schema, DLDataType input);

struct TensorSpec {
  const char* name;
  bool optional = false;  // may be left out (only trailing inputs)
  bool variadic = false;  // one or more (only the last input)
};

struct AttrSpec {
  const char* name;
  int32_t type;           // oar_attr_type_e
  bool required = false;  // otherwise the default below applies
  int64_t default_int = 0;
  double default_float = 0;
  bool default_bool = false;
  const char* default_string = "";
  std::vector<int64_t> default_ints = {};
};

struct OpSchema {
  const char* name;
  const char* category;  // creation, layout, unary, binary, compare, reduction, nn
  std::vector<TensorSpec> inputs;
  std::vector<const char*> outputs;
  std::vector<AttrSpec> attrs;
  uint32_t dtypes;
  DtypeRule rule = DtypeRule::kSame;
  int index_input = -1;  // for kIndexed
  const char* summary = "";
  // Operators added after set v1 carry their own rules; nullptr: the built-in
  // rule of the category and |rule| applies.
  ShapeRule shape_fn = nullptr;
  DtypeCheck check_dtypes_fn = nullptr;     // required for kCustom
  OutputDtypes output_dtypes_fn = nullptr;  // required for kCustom
};

// Every operator of the set, in documentation order.
const std::vector<OpSchema>& schemas();
// The schema of |name|, or nullptr for an operator outside the set.
const OpSchema* find_schema(std::string_view name);

// Attributes as a kernel or reference implementation reads them: the call's
// values, else the schema's defaults.
class Attrs {
 public:
  Attrs(const OpSchema& schema, const oar_attr_t* attrs, size_t count);
  int64_t get_int(const char* name) const;
  double get_float(const char* name) const;
  bool get_bool(const char* name) const;
  std::string get_string(const char* name) const;
  std::vector<int64_t> get_ints(const char* name) const;
  // A 2-D attribute (stride, padding, ...): empty means |fallback|, one value
  // stands for both; throws INVALID_ARGUMENT for any other count.
  std::array<int64_t, 2> get_pair(const char* name, std::vector<int64_t> fallback) const;

 private:
  const oar_attr_t* find(const char* name, int32_t type) const;
  const AttrSpec& spec(const char* name) const;
  const OpSchema& schema_;
  const oar_attr_t* attrs_;
  size_t count_;
};

// Checks a call against |schema| and writes the output shapes it implies.
// Throws oar::Error INVALID_ARGUMENT naming the operator and the problem.
// |output_dtypes| are the caller's (cast needs them; others are checked).
std::vector<std::vector<int64_t>> infer_shapes(const OpSchema& schema, const DLTensor* inputs,
                                               size_t num_inputs, const oar_attr_t* attrs,
                                               size_t num_attrs);
void check_dtypes(const OpSchema& schema, const DLTensor* inputs, size_t num_inputs,
                  const DLTensor* outputs, size_t num_outputs);

// The dtypes a call with inputs of |input_dtype| produces (kCast: |input_dtype|).
std::vector<DLDataType> output_dtypes(const OpSchema& schema, DLDataType input_dtype);

// Runs |op| allocating its outputs (shapes inferred, dtypes from the rule;
// |out_dtype| overrides for cast) on |stream|'s device.
std::vector<Tensor> call(Stream& stream, std::string_view op,
                         const std::vector<const Tensor*>& inputs,
                         std::initializer_list<Attr> attrs = {}, DLDataType out_dtype = {0, 0, 0});

// The same with attributes built at run time (owned by |attrs|), for callers
// driven by data. |out_shape| gives the output's shape where the schema infers
// none (fill); elsewhere, given, it must equal the inferred shape (the
// dispatcher refuses any other). An operator without inputs takes its output
// dtype from |out_dtype|.
std::vector<Tensor> call(Stream& stream, std::string_view op,
                         const std::vector<const Tensor*>& inputs, const AttrList& attrs,
                         DLDataType out_dtype = {0, 0, 0},
                         const std::vector<int64_t>* out_shape = nullptr);

// Typed helpers for the most used operators.
// A new tensor of |shape| and |dtype| with every element |value| (converted).
Tensor fill(Stream& stream, std::vector<int64_t> shape, DLDataType dtype, double value);
Tensor add(Stream& stream, const Tensor& a, const Tensor& b);
Tensor mul(Stream& stream, const Tensor& a, const Tensor& b);
Tensor matmul(Stream& stream, const Tensor& a, const Tensor& b, bool transpose_a = false,
              bool transpose_b = false);
void matmul(Stream& stream, const Tensor& a, const Tensor& b, Tensor& out, bool transpose_a = false,
            bool transpose_b = false);
Tensor softmax(Stream& stream, const Tensor& x, int64_t axis = -1);
Tensor relu(Stream& stream, const Tensor& x);
Tensor cast(Stream& stream, const Tensor& x, DLDataType dtype);
Tensor contiguous(Stream& stream, const Tensor& x);

}  // namespace oar::ops
