// Typed helpers over dispatch: outputs allocated from the inferred shapes.
#include "oar/ops.hpp"

#include <algorithm>
#include <string>

#include "oar/device.hpp"
#include "oar/error.hpp"
#include "oar/stream.hpp"

namespace oar::ops {
namespace {

const OpSchema& schema_of(std::string_view op) {
  const OpSchema* schema = find_schema(op);
  if (schema == nullptr) {
    throw Error(OAR_STATUS_NOT_FOUND, "no operator named " + std::string(op) + " in the set");
  }
  return *schema;
}

}  // namespace

namespace {

std::vector<Tensor> call_raw(Stream& stream, std::string_view op,
                             const std::vector<const Tensor*>& inputs, const oar_attr_t* attrs,
                             size_t num_attrs, DLDataType out_dtype,
                             const std::vector<int64_t>* out_shape) {
  const OpSchema& schema = schema_of(op);
  std::vector<DLTensor> in;
  for (const Tensor* t : inputs) in.push_back(t->dl());
  std::vector<std::vector<int64_t>> shapes =
      infer_shapes(schema, in.data(), in.size(), attrs, num_attrs);
  if (out_shape != nullptr) {
    // The dispatcher checks a given shape against the inferred one.
    shapes.assign(std::max<size_t>(shapes.size(), 1), *out_shape);
  }
  if (shapes.empty()) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                std::string(schema.name) +
                    " has no inputs to infer a shape from; give call() the output shape or "
                    "dispatch it with an output tensor");
  }
  // An operator without inputs (arange) takes its dtype from the caller.
  if (in.empty() && out_dtype.bits == 0) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                std::string(schema.name) + " has no inputs: give call() the output dtype");
  }
  DLDataType data_dtype =
      in.empty() ? out_dtype : in[schema.rule == DtypeRule::kWhere ? 1 : 0].dtype;
  std::vector<DLDataType> dtypes = output_dtypes(schema, data_dtype);
  if (out_dtype.bits != 0) dtypes[0] = out_dtype;
  if (dtypes.size() < shapes.size()) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                std::string(schema.name) + " has " + std::to_string(dtypes.size()) +
                    " output(s), not " + std::to_string(shapes.size()));
  }
  std::vector<Tensor> outputs;
  std::vector<DLTensor> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    outputs.push_back(Tensor::empty(stream.device(), shapes[i], dtypes[i], &stream));
  }
  for (const Tensor& t : outputs) out.push_back(t.dl());
  dispatch(stream, OpId(op), in.data(), in.size(), out.data(), out.size(), attrs, num_attrs);
  return outputs;
}

}  // namespace

std::vector<Tensor> call(Stream& stream, std::string_view op,
                         const std::vector<const Tensor*>& inputs,
                         std::initializer_list<Attr> attrs, DLDataType out_dtype) {
  std::vector<oar_attr_t> raw;
  for (const Attr& a : attrs) raw.push_back(a.attr);
  return call_raw(stream, op, inputs, raw.data(), raw.size(), out_dtype, nullptr);
}

std::vector<Tensor> call(Stream& stream, std::string_view op,
                         const std::vector<const Tensor*>& inputs, const AttrList& attrs,
                         DLDataType out_dtype, const std::vector<int64_t>* out_shape) {
  std::vector<oar_attr_t> raw = attrs.raw();
  return call_raw(stream, op, inputs, raw.data(), raw.size(), out_dtype, out_shape);
}

Tensor fill(Stream& stream, std::vector<int64_t> shape, DLDataType dtype, double value) {
  return call(stream, "fill", {}, AttrList().add("value", value), dtype, &shape)[0];
}

Tensor add(Stream& stream, const Tensor& a, const Tensor& b) {
  return call(stream, "add", {&a, &b})[0];
}

Tensor mul(Stream& stream, const Tensor& a, const Tensor& b) {
  return call(stream, "mul", {&a, &b})[0];
}

Tensor matmul(Stream& stream, const Tensor& a, const Tensor& b, bool transpose_a,
              bool transpose_b) {
  return call(stream, "matmul", {&a, &b},
              {Attr("transpose_a", transpose_a), Attr("transpose_b", transpose_b)})[0];
}

void matmul(Stream& stream, const Tensor& a, const Tensor& b, Tensor& out, bool transpose_a,
            bool transpose_b) {
  static const OpId op("matmul");
  dispatch(stream, op, {&a, &b}, {&out},
           {Attr("transpose_a", transpose_a), Attr("transpose_b", transpose_b)});
}

Tensor softmax(Stream& stream, const Tensor& x, int64_t axis) {
  return call(stream, "softmax", {&x}, {Attr("axis", axis)})[0];
}

Tensor relu(Stream& stream, const Tensor& x) { return call(stream, "relu", {&x})[0]; }

Tensor cast(Stream& stream, const Tensor& x, DLDataType dtype) {
  return call(stream, "cast", {&x}, {}, dtype)[0];
}

Tensor contiguous(Stream& stream, const Tensor& x) {
  if (x.is_contiguous()) return x;
  return call(stream, "copy", {&x})[0];
}

}  // namespace oar::ops
