#include "conformance/suites/ops/op_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "conformance/harness/test.h"
#include "core/ops/decompositions/decompose.h"

namespace oar::conformance {
namespace {

// The documented tolerance of a decomposed softmax_grad or log_softmax_grad
// (docs/conformance.md, "Decomposed operators"): the row sum comes from the
// device's sum, certified to acc·Σ|terms|, and dy − sum cancels, so the
// result may carry acc times y·(|dy| + Σ|dy·y|) (softmax_grad) or
// exp(y)·Σ|dy| (log_softmax_grad). Returns that magnitude, or false for any
// other operator.
bool decomposed_row_magnitude(const std::string& op, const OpCase& c,
                              const std::vector<HostTensor>& in, HostTensor* out) {
  const bool soft = op == "softmax_grad";
  if (!soft && op != "log_softmax_grad") return false;
  const HostTensor &dy = in.at(0), &y = in.at(1);
  const int r = int(dy.shape.size());
  int64_t axis = -1;
  for (const AttrValue& a : c.attrs) axis = a.name == "axis" ? a.i : axis;
  if (axis < 0) axis += r;
  int64_t outer = 1, length = 1, inner = 1;
  for (int d = 0; d < r; ++d) (d < axis ? outer : d == axis ? length : inner) *= dy.shape[d];
  *out = HostTensor::zeros(dy.shape, dtype::f64);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < inner; ++k) {
      auto at = [&](int64_t j) { return (o * length + j) * inner + k; };
      double terms = 0;
      for (int64_t j = 0; j < length; ++j) {
        terms += std::fabs(dy.get(at(j))) * (soft ? std::fabs(y.get(at(j))) : 1.0);
      }
      for (int64_t j = 0; j < length; ++j) {
        const double m = soft ? std::fabs(y.get(at(j))) * (std::fabs(dy.get(at(j))) + terms)
                              : std::exp(y.get(at(j))) * terms;
        out->set(at(j), std::isfinite(m) ? m : 0.0);
      }
    }
  }
  return true;
}

bool has_data_input(const ops::OpSchema& schema) { return !schema.inputs.empty(); }

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

std::string hex(uint8_t byte) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[byte >> 4] + digits[byte & 15];
}

// How many of bytes [begin, end) of |got| differ from |want| (or, without
// |want|, from |byte|; |want| is indexed from |begin|), and the first (or,
// |last|, the last) that does; 0 when none.
size_t count_changed(const std::vector<uint8_t>& got, size_t begin, size_t end, const uint8_t* want,
                     uint8_t byte, bool last, size_t* where) {
  if (want != nullptr && std::memcmp(got.data() + begin, want, end - begin) == 0) return 0;
  size_t changed = 0;
  for (size_t i = begin; i < end; ++i) {
    if (got[i] == (want != nullptr ? want[i - begin] : byte)) continue;
    if (changed++ == 0 || last) *where = i;
  }
  return changed;
}

// A guarded buffer for |nbytes| bytes of tensor, from the caching allocator
// on |stream|.
std::shared_ptr<Buffer> guarded_buffer(Stream& stream, uint64_t nbytes) {
  const uint64_t margin = guard_margin(stream.device());
  return std::make_shared<Buffer>(stream.device().allocate(nbytes + 2 * margin, &stream));
}

// "3 of the 512 bytes after its end changed (the first at byte 0 past the
// end: 0x00, expected 0xa5)", or "" when both margins of |read| still hold
// |byte|.
std::string margin_damage(const GuardedBytes& read, uint64_t nbytes, uint8_t byte) {
  const std::vector<uint8_t>& got = *read.bytes;
  const size_t begin = read.margin, end = read.margin + nbytes;
  std::string text;
  size_t where = 0;
  if (size_t changed = count_changed(got, 0, begin, nullptr, byte, true, &where)) {
    text = std::to_string(changed) + " of the " + std::to_string(begin) +
           " bytes before its start changed (the nearest " + std::to_string(begin - where) +
           " bytes before it: " + hex(got[where]) + ", expected " + hex(byte) + ")";
  }
  if (size_t changed = count_changed(got, end, got.size(), nullptr, byte, false, &where)) {
    text += (text.empty() ? "" : "; ") + std::to_string(changed) + " of the " +
            std::to_string(got.size() - end) + " bytes after its end changed (the first at byte " +
            std::to_string(where - end) + " past the end: " + hex(got[where]) + ", expected " +
            hex(byte) + ")";
  }
  return text;
}

// "; 12 elements of output 0 still hold ..." when outputs kept elements of
// the sentinel the suite filled them with, else "".
std::string sentinel_hint(const std::vector<HostTensor>& got) {
  for (size_t i = 0; i < got.size(); ++i) {
    const size_t size = dtype_size(got[i].dtype);
    if (size == 0) continue;
    size_t kept = 0;
    for (size_t e = 0; e + size <= got[i].bytes.size(); e += size) {
      kept += std::all_of(got[i].bytes.begin() + ptrdiff_t(e),
                          got[i].bytes.begin() + ptrdiff_t(e + size),
                          [](uint8_t b) { return b == kSentinelByte; });
    }
    if (kept == 0) continue;
    return "; " + std::to_string(kept) + " element(s) of output " + std::to_string(i) +
           " still hold the bytes 0xff (NaN, or -1) the suite filled the output with before "
           "the call: the kernel left them unwritten or combined its result with them (outputs "
           "start undefined; a kernel must not read them)";
  }
  return "";
}

}  // namespace

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

uint64_t guard_margin(const Device& device) {
  return std::max<uint64_t>(512, device.properties().min_alignment);
}

Tensor guarded_empty(Stream& stream, const std::vector<int64_t>& shape, DLDataType dtype) {
  const uint64_t margin = guard_margin(stream.device());
  const uint64_t nbytes = uint64_t(numel_of(shape)) * dtype_size(dtype);
  std::shared_ptr<Buffer> buffer = guarded_buffer(stream, nbytes);
  stream.fill(*buffer, 0, kGuardByte, buffer->size());
  if (nbytes != 0) stream.fill(*buffer, margin, kSentinelByte, nbytes);
  return Tensor::view(buffer, shape, dtype, {}, margin);
}

GuardedBytes queue_read(Stream& stream, const Tensor& tensor) {
  const Buffer& buffer = *tensor.buffer();
  GuardedBytes read;
  read.margin = tensor.dl().byte_offset - buffer.offset();
  read.bytes = std::make_unique<std::vector<uint8_t>>(buffer.size());
  stream.copy_to_host(read.bytes->data(), buffer, 0, buffer.size());
  return read;
}

const uint8_t* elements_of(const GuardedBytes& read) { return read.bytes->data() + read.margin; }

HostTensor checked_output(const std::string& what, size_t index, const Tensor& output,
                          const GuardedBytes& read) {
  const uint64_t nbytes = output.nbytes();
  std::string damage = margin_damage(read, nbytes, kGuardByte);
  if (!damage.empty()) {
    fail(what + ": the kernel wrote outside output " + std::to_string(index) + " " +
         dtype_name(output.dtype()) + shape_text(output.shape()) + ": " + damage +
         "; a kernel may write only its outputs' elements");
  }
  HostTensor host;
  host.shape = output.shape();
  host.dtype = output.dtype();
  host.bytes.assign(elements_of(read), elements_of(read) + nbytes);
  return host;
}

GuardedInput guarded_input(Stream& stream, const HostTensor& host, bool transposed) {
  const uint64_t margin = guard_margin(stream.device());
  const HostTensor stored = transposed ? transpose_last2(host) : HostTensor{};
  const std::vector<uint8_t>& elements = transposed ? stored.bytes : host.bytes;
  GuardedInput input;
  input.margin = margin;
  input.bytes.assign(elements.size() + 2 * margin, kSentinelByte);
  std::copy(elements.begin(), elements.end(), input.bytes.begin() + ptrdiff_t(margin));
  std::shared_ptr<Buffer> buffer = guarded_buffer(stream, elements.size());
  stream.copy_from_host(*buffer, 0, input.bytes.data(), input.bytes.size());
  std::vector<int64_t> shape = host.shape;
  const size_t r = shape.size();
  if (transposed) std::swap(shape[r - 1], shape[r - 2]);
  input.tensor = Tensor::view(buffer, shape, host.dtype, {}, margin);
  if (transposed) input.tensor = input.tensor.transpose(int(r) - 2, int(r) - 1);
  return input;
}

void queue_upload(Stream& stream, GuardedInput& input, const HostTensor& host, bool transposed) {
  const HostTensor stored = transposed ? transpose_last2(host) : HostTensor{};
  const std::vector<uint8_t>& elements = transposed ? stored.bytes : host.bytes;
  const uint64_t nbytes = input.tensor.nbytes();
  if (elements.size() != nbytes) {
    throw std::logic_error("queue_upload: " + std::to_string(elements.size()) +
                           " bytes for a tensor of " + std::to_string(nbytes));
  }
  if (nbytes == 0) return;
  // The copy reads input.bytes, which keeps its storage.
  std::copy(elements.begin(), elements.end(), input.bytes.begin() + ptrdiff_t(input.margin));
  stream.copy_from_host(*input.tensor.buffer(), input.margin, input.bytes.data() + input.margin,
                        nbytes);
}

void expect_input_unchanged(const std::string& what, size_t index, const GuardedInput& input,
                            const GuardedBytes& read) {
  const std::string name = "input " + std::to_string(index) + " " +
                           dtype_name(input.tensor.dtype()) + shape_text(input.tensor.shape());
  const uint64_t nbytes = input.tensor.nbytes();
  size_t where = 0;
  if (size_t changed = count_changed(*read.bytes, read.margin, read.margin + nbytes,
                                     input.bytes.data() + input.margin, 0, false, &where)) {
    fail(what + ": the kernel changed " + name + ": " + std::to_string(changed) + " of its " +
         std::to_string(nbytes) + " bytes differ after the call (the first at byte " +
         std::to_string(where - read.margin) +
         " of its storage); kernels must leave their inputs as they found them");
  }
  std::string damage = margin_damage(read, nbytes, kSentinelByte);
  if (!damage.empty()) {
    fail(what + ": the kernel wrote outside " + name + ": " + damage +
         "; a kernel may write only its outputs' elements");
  }
}

std::vector<Tensor> allocate_outputs(Stream& stream, const ops::OpSchema& schema,
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
  for (size_t i = 0; i < shapes.size(); ++i) {
    outputs.push_back(guarded_empty(stream, shapes[i], dtypes[i]));
  }
  return outputs;
}

void dispatch_op(Stream& stream, const ops::OpSchema& schema,
                 const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& outputs,
                 const std::vector<AttrValue>& attrs) {
  std::vector<DLTensor> in;
  for (const Tensor* t : inputs) in.push_back(t->dl());
  std::vector<DLTensor> out;
  for (const Tensor& t : outputs) out.push_back(t.dl());
  std::vector<oar_attr_t> raw = raw_attrs(attrs);
  dispatch(stream, OpId(schema.name), in.data(), in.size(), out.data(), out.size(), raw.data(),
           raw.size());
}

std::vector<Tensor> run_device(Stream& stream, const ops::OpSchema& schema,
                               const std::vector<const Tensor*>& inputs,
                               const std::vector<AttrValue>& attrs, DLDataType out_dtype,
                               const std::vector<int64_t>& fill_shape) {
  std::vector<Tensor> outputs =
      allocate_outputs(stream, schema, inputs, attrs, out_dtype, fill_shape);
  dispatch_op(stream, schema, inputs, outputs, attrs);
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

std::vector<HostTensor> make_inputs(const OpCase& c, const std::string& seed_text) {
  std::vector<HostTensor> host;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    host.push_back(make_input(c.inputs[i], seed_of(seed_text + "#" + std::to_string(i))));
  }
  return host;
}

Expected expected_results(const std::string& what, const ops::OpSchema& schema, const OpCase& c,
                          Family family, const std::vector<HostTensor>& inputs) {
  Expected expected;
  expected.outputs = run_host(what, schema, inputs, c.attrs, c.out_dtype, c.fill_shape);
  // Sums of terms: bound the rounding error by the sum of the terms' sizes.
  expected.scaled = family == Family::kAccumulate && is_float(expected.outputs.at(0).dtype);
  if (expected.scaled) {
    std::vector<HostTensor> absolute;
    for (const HostTensor& t : inputs) absolute.push_back(abs_as_f64(t));
    expected.magnitude = run_host(what + " [magnitude]", schema, absolute, c.attrs)[0];
  }
  return expected;
}

void expect_results(const std::string& what, const OpCase& c, Family family,
                    const std::vector<HostTensor>& got, const Expected& expected) {
  if (got.size() != expected.outputs.size()) {
    fail(what + ": the device wrote " + std::to_string(got.size()) + " outputs, the reference " +
         std::to_string(expected.outputs.size()));
  }
  for (size_t i = 0; i < got.size(); ++i) {
    Tolerance t = tolerance_for(expected.outputs[i].dtype, family, c.k);
    if (expected.acc >= 0) t.acc = expected.acc;
    expect_close(what, i, got[i], expected.outputs[i], t,
                 expected.scaled ? &expected.magnitude : nullptr);
  }
}

void run_op_case(Stream& stream, const std::string& id, const ops::OpSchema& schema,
                 const OpCase& c, Family family) {
  const std::string what = id + describe(schema, c);
  std::vector<HostTensor> host = make_inputs(c, id);
  std::vector<GuardedInput> device;
  device.reserve(c.inputs.size());
  std::vector<HostTensor> got;
  bool decomposed = false;  // the call ran through the core's decomposition
  try {
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      device.push_back(guarded_input(stream, host[i], c.inputs[i].transposed));
    }
    std::vector<const Tensor*> device_inputs;
    for (const GuardedInput& in : device) device_inputs.push_back(&in.tensor);
    const uint64_t decompositions = decompose::decomposition_count();
    std::vector<Tensor> outputs =
        run_device(stream, schema, device_inputs, c.attrs, c.out_dtype, c.fill_shape);
    decomposed = decompose::decomposition_count() != decompositions;
    std::vector<GuardedBytes> output_reads, input_reads;
    for (const Tensor& t : outputs) output_reads.push_back(queue_read(stream, t));
    for (const GuardedInput& in : device) input_reads.push_back(queue_read(stream, in.tensor));
    stream.synchronize();
    for (size_t i = 0; i < outputs.size(); ++i) {
      got.push_back(checked_output(what, i, outputs[i], output_reads[i]));
    }
    for (size_t i = 0; i < device.size(); ++i) {
      expect_input_unchanged(what, i, device[i], input_reads[i]);
    }
  } catch (const Error& e) {
    // Queued uploads and downloads use host memory of this frame.
    try {
      stream.synchronize();
    } catch (const Error&) {
    }
    fail(what + ": the device failed: " + e.what());
  }
  try {
    Expected expected = expected_results(what, schema, c, family, host);
    if (decomposed && is_float(expected.outputs.at(0).dtype) &&
        decomposed_row_magnitude(schema.name, c, host, &expected.magnitude)) {
      expected.scaled = true;
      expected.acc = tolerance_for(expected.outputs[0].dtype, Family::kAccumulate).acc;
    }
    expect_results(what, c, family, got, expected);
  } catch (const TestFailure& e) {
    fail(e.what() + sentinel_hint(got));
  }
}

}  // namespace oar::conformance
