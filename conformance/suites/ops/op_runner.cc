#include "conformance/suites/ops/op_runner.h"

#include <exception>

#include "conformance/harness/test.h"

namespace oar::conformance {
namespace {

bool has_data_input(const ops::OpSchema& schema) { return !schema.inputs.empty(); }

std::string describe(const ops::OpSchema& schema, const OpCase& c) {
  std::string text = " (" + std::string(schema.name) + " of";
  for (const InputSpec& in : c.inputs) {
    text += " " + dtype_name(in.dtype) + shape_text(in.shape) + (in.transposed ? "T" : "");
  }
  for (const AttrValue& a : c.attrs) text += " " + a.text();
  if (!c.fill_shape.empty() || !has_data_input(schema))
    text += " shape " + shape_text(c.fill_shape);
  return text + ")";
}

}  // namespace

std::string AttrValue::text() const {
  switch (type) {
    case OAR_ATTR_TYPE_INT:
      return name + "=" + std::to_string(i);
    case OAR_ATTR_TYPE_FLOAT:
      return name + "=" + std::to_string(f);
    case OAR_ATTR_TYPE_BOOL:
      return name + "=" + (b ? "true" : "false");
    case OAR_ATTR_TYPE_STRING:
      return name + "=" + s;
    default:
      return name + "=" + shape_text(ints);
  }
}

AttrValue attr(const char* name, int64_t value) {
  AttrValue a;
  a.name = name;
  a.type = OAR_ATTR_TYPE_INT;
  a.i = value;
  return a;
}
AttrValue attr(const char* name, double value) {
  AttrValue a;
  a.name = name;
  a.type = OAR_ATTR_TYPE_FLOAT;
  a.f = value;
  return a;
}
AttrValue attr(const char* name, bool value) {
  AttrValue a;
  a.name = name;
  a.type = OAR_ATTR_TYPE_BOOL;
  a.b = value;
  return a;
}
AttrValue attr(const char* name, const char* value) {
  AttrValue a;
  a.name = name;
  a.type = OAR_ATTR_TYPE_STRING;
  a.s = value;
  return a;
}
AttrValue attr(const char* name, std::vector<int64_t> value) {
  AttrValue a;
  a.name = name;
  a.type = OAR_ATTR_TYPE_INT_ARRAY;
  a.ints = std::move(value);
  return a;
}

std::vector<oar_attr_t> raw_attrs(const std::vector<AttrValue>& attrs) {
  std::vector<oar_attr_t> raw;
  for (const AttrValue& a : attrs) {
    oar_attr_t r{};
    r.name = a.name.c_str();
    r.type = a.type;
    switch (a.type) {
      case OAR_ATTR_TYPE_INT:
        r.value.i = a.i;
        break;
      case OAR_ATTR_TYPE_FLOAT:
        r.value.f = a.f;
        break;
      case OAR_ATTR_TYPE_BOOL:
        r.value.b = a.b;
        break;
      case OAR_ATTR_TYPE_STRING:
        r.value.s = a.s.c_str();
        break;
      default:
        r.value.ints.data = a.ints.data();
        r.value.ints.count = a.ints.size();
    }
    raw.push_back(r);
  }
  return raw;
}

DLDataType data_dtype(const ops::OpSchema& schema, const std::vector<DLDataType>& inputs,
                      DLDataType out_dtype) {
  if (inputs.empty()) return out_dtype;
  if (schema.rule == ops::DtypeRule::kWhere) return inputs[1];
  if (schema.rule == ops::DtypeRule::kIndexed && schema.index_input == 0) return inputs[1];
  return inputs[0];
}

std::vector<DLDataType> result_dtypes(const ops::OpSchema& schema,
                                      const std::vector<DLDataType>& inputs, DLDataType out_dtype) {
  std::vector<DLDataType> dtypes =
      ops::output_dtypes(schema, data_dtype(schema, inputs, out_dtype));
  if (out_dtype.bits != 0) dtypes[0] = out_dtype;
  return dtypes;
}

std::vector<Tensor> run_device(Stream& stream, const ops::OpSchema& schema,
                               const std::vector<const Tensor*>& inputs,
                               const std::vector<AttrValue>& attrs, DLDataType out_dtype,
                               const std::vector<int64_t>& fill_shape) {
  std::vector<DLTensor> in;
  std::vector<DLDataType> in_dtypes;
  for (const Tensor* t : inputs) {
    in.push_back(t->dl());
    in_dtypes.push_back(t->dtype());
  }
  std::vector<oar_attr_t> raw = raw_attrs(attrs);
  std::vector<std::vector<int64_t>> shapes =
      has_data_input(schema)
          ? ops::infer_shapes(schema, in.data(), in.size(), raw.data(), raw.size())
          : std::vector<std::vector<int64_t>>{fill_shape};
  std::vector<DLDataType> dtypes = result_dtypes(schema, in_dtypes, out_dtype);
  std::vector<Tensor> outputs;
  outputs.reserve(shapes.size());
  std::vector<DLTensor> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    outputs.push_back(Tensor::empty(stream.device(), shapes[i], dtypes[i], &stream));
    out.push_back(outputs.back().dl());
  }
  dispatch(stream, OpId(schema.name), in.data(), in.size(), out.data(), out.size(), raw.data(),
           raw.size());
  return outputs;
}

std::vector<HostTensor> run_host(const std::string& what, const ops::OpSchema& schema,
                                 const std::vector<HostTensor>& inputs,
                                 const std::vector<AttrValue>& attrs, DLDataType out_dtype,
                                 const std::vector<int64_t>& fill_shape) {
  std::vector<DLDataType> in_dtypes;
  for (const HostTensor& t : inputs) in_dtypes.push_back(t.dtype);
  std::vector<oar_attr_t> raw = raw_attrs(attrs);
  try {
    return run_reference(schema, inputs, raw, result_dtypes(schema, in_dtypes, out_dtype),
                         fill_shape);
  } catch (const std::exception& e) {
    fail(what +
         ": the reference implementation failed (a conformance suite problem, not the "
         "device's): " +
         e.what());
  }
}

void run_op_case(Stream& stream, const std::string& id, const ops::OpSchema& schema,
                 const OpCase& c, Family family) {
  const std::string what = id + describe(schema, c);
  std::vector<HostTensor> host;
  std::vector<Tensor> device;
  device.reserve(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    host.push_back(make_input(c.inputs[i], seed_of(id + "#" + std::to_string(i))));
    device.push_back(upload(stream, host.back(), c.inputs[i].transposed));
  }
  std::vector<const Tensor*> device_inputs;
  for (const Tensor& t : device) device_inputs.push_back(&t);

  std::vector<HostTensor> got;
  try {
    std::vector<Tensor> outputs =
        run_device(stream, schema, device_inputs, c.attrs, c.out_dtype, c.fill_shape);
    for (const Tensor& t : outputs) got.push_back(download(stream, t));
  } catch (const Error& e) {
    fail(what + ": the device failed: " + e.what());
  }

  std::vector<HostTensor> expected =
      run_host(what, schema, host, c.attrs, c.out_dtype, c.fill_shape);
  // Sums of terms: bound the rounding error by the sum of the terms' sizes.
  const bool scaled = family == Family::kAccumulate && is_float(expected.at(0).dtype);
  HostTensor magnitude;
  if (scaled) {
    std::vector<HostTensor> absolute;
    for (const HostTensor& t : host) absolute.push_back(abs_as_f64(t));
    magnitude = run_host(what + " [magnitude]", schema, absolute, c.attrs)[0];
  }
  if (got.size() != expected.size()) {
    fail(what + ": the device wrote " + std::to_string(got.size()) + " outputs, the reference " +
         std::to_string(expected.size()));
  }
  for (size_t i = 0; i < got.size(); ++i) {
    expect_close(what, i, got[i], expected[i], tolerance_for(expected[i].dtype, family, c.k),
                 scaled ? &magnitude : nullptr);
  }
}

}  // namespace oar::conformance
