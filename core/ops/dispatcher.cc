#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/loader/plugin.h"
#include "core/ops/decompositions/decompose.h"
#include "core/ops/kernel_registry.h"
#include "core/trace/tracer.h"
#include "core/util/checked_math.h"
#include "oar/device.hpp"
#include "oar/dispatch.hpp"
#include "oar/error.hpp"
#include "oar/ops.hpp"
#include "oar/stream.hpp"

namespace oar {
namespace {

// Calls with more tensors than this go through the heap.
constexpr size_t kInlineTensors = 16;
constexpr size_t kInlineDims = 8;

// Scratch memory for one kernel call, from the device's caching allocator on
// the call's stream; freed (stream ordered) when the call returns.
struct ScratchContext {
  Device* device;
  Stream* stream;
  std::vector<Buffer> buffers;
};

oar_status_t scratch_allocate(void* context, uint64_t size, oar_memory_t* out_memory,
                              uint64_t* out_offset) {
  auto* scratch = static_cast<ScratchContext*>(context);
  try {
    scratch->buffers.push_back(scratch->device->allocate(size, scratch->stream));
    *out_memory = scratch->buffers.back().memory();
    *out_offset = scratch->buffers.back().offset();
    return OAR_STATUS_OK;
  } catch (const Error& e) {
    return e.code();
  } catch (...) {
    return OAR_STATUS_RESOURCE_EXHAUSTED;
  }
}

[[noreturn]] void no_kernel(const Device& device, uint32_t op, const DLTensor* inputs,
                            size_t num_inputs, const DLTensor* outputs, size_t num_outputs) {
  std::vector<DLDataType> dtypes;
  for (size_t i = 0; i < num_inputs; ++i) dtypes.push_back(inputs[i].dtype);
  for (size_t i = 0; i < num_outputs; ++i) dtypes.push_back(outputs[i].dtype);
  std::string message = "no kernel for " + detail::op_name(op) + " " +
                        detail::signature_text(dtypes.data(), num_inputs, num_outputs) + " on " +
                        device.name();
  std::vector<std::string> known = device.plugin().kernels().signatures(op);
  if (known.empty()) {
    message += "; the plugin registers no kernel for this operator";
  } else {
    message += "; registered:";
    for (const auto& signature : known) message += " " + signature;
  }
  throw Error(OAR_STATUS_UNIMPLEMENTED, message, device.plugin_name());
}

// Whether |t| is row-major; an empty tensor is (it has nothing to stage).
bool contiguous(const DLTensor& t) {
  int64_t expected = 1;
  for (int i = t.ndim; i-- > 0;) {
    if (t.shape[i] == 0) return true;
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    if (!util::checked_mul(expected, t.shape[i], &expected)) return true;  // only beside a 0
  }
  return true;
}

// Checks one tensor and gives it strides if the caller left them NULL.
// Returns false when the kernel needs it contiguous and it is not. Every size
// a kernel may compute from the tensor fits in 64 bits: no negative
// dimension, an element count and a byte span (from the lowest to the highest
// element it reaches, byte_offset included) that fit in int64_t.
bool prepare(const Device& device, uint32_t op, DLTensor& t, int64_t* strides_storage,
             bool need_contiguous, const char* role, size_t index) {
  DLDevice expected = device.dlpack_device();
  if (t.device.device_type != expected.device_type || t.device.device_id != expected.device_id) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, detail::op_name(op) + ": " + role + " " +
                                                 std::to_string(index) + " is not on " +
                                                 device.name() + " (copy it there first)");
  }
  if (t.ndim < 0 || (t.ndim > 0 && t.shape == nullptr)) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                detail::op_name(op) + ": " + role + " " + std::to_string(index) + " has no shape");
  }
  auto refuse = [&](oar_status_t code, const char* problem) {
    throw Error(code,
                detail::op_name(op) + ": " + role + " " + std::to_string(index) + " " + problem);
  };
  const uint64_t element_size = dtype_size(t.dtype);
  int64_t count = 0;
  int64_t extents = 0;
  int64_t bytes = 0;
  if (!util::element_count(t.shape, t.ndim, &count, &extents)) {
    refuse(OAR_STATUS_INVALID_ARGUMENT,
           "has a negative dimension or dimensions whose product leaves 64 bits");
  }
  if (!util::checked_mul(extents, int64_t(element_size), &bytes)) {
    refuse(OAR_STATUS_INVALID_ARGUMENT, "has more bytes than fit in 64 bits");
  }
  bool filled = false;
  if (t.strides == nullptr) {
    util::row_major_strides(t.shape, t.ndim, strides_storage);
    t.strides = strides_storage;
    filled = true;
  }
  util::Span span;
  uint64_t span_size = 0;
  uint64_t before = 0;
  uint64_t end = 0;
  if (!util::element_span(t.shape, t.strides, t.ndim, &span) ||
      !util::span_bytes(span, element_size, &span_size, &before) ||
      !util::checked_add(t.byte_offset, span_size, &end) || end > uint64_t(INT64_MAX)) {
    refuse(OAR_STATUS_OUT_OF_RANGE, "reaches beyond 64-bit sizes (shape, strides, byte_offset)");
  }
  if (before > t.byte_offset) {
    refuse(OAR_STATUS_OUT_OF_RANGE, "has negative strides that reach before its allocation");
  }
  // Kernels load elements as typed values; a GPU faults on a misaligned one.
  if (element_size > 1 && t.byte_offset % element_size != 0) {
    refuse(OAR_STATUS_INVALID_ARGUMENT,
           "has a byte_offset that is not a multiple of its element size (misaligned elements)");
  }
  return filled || !need_contiguous || contiguous(t);
}

// The schema check below is a pure function of the schema, the count, dtype
// and shape of every tensor, and the attributes (names, types, values): not
// of data, strides or offsets. Each thread keeps the keys of calls it checked
// and passed, and a call whose key equals one of them in full (a hash match
// alone is never trusted) skips the check. A framework's loop repeats a few
// signatures, so nearly every call hits. Keys are built in a buffer reused
// across calls, so a hit allocates nothing.
class PassedChecks {
 public:
  // Whether this call's key is one that passed; builds the key either way.
  bool seen(const ops::OpSchema& schema, const DLTensor* tensors, size_t num_inputs,
            size_t num_outputs, const oar_attr_t* attrs, size_t num_attrs) {
    length_ = 0;
    hash_ = 0xcbf29ce484222325ull;
    cacheable_ =
        encode(schema, tensors, num_inputs, num_outputs, attrs, num_attrs) && length_ <= kMaxKey;
    if (!cacheable_) return false;
    slot_ = size_t(hash_ ^ (hash_ >> 17) ^ (hash_ >> 37)) % kSlots;
    const Slot& slot = slots_[slot_];
    return slot.length == length_ && std::memcmp(slot.words, key_, length_ * sizeof(int64_t)) == 0;
  }
  // Remembers the key seen() built (the check passed).
  void passed() {
    if (!cacheable_) return;
    slots_[slot_].length = length_;
    std::memcpy(slots_[slot_].words, key_, length_ * sizeof(int64_t));
  }

 private:
  static constexpr size_t kSlots = 32;
  static constexpr size_t kMaxKey = 64;  // longer keys (large attributes) are not kept
  struct Slot {
    size_t length;  // 0: empty (a key is never empty)
    int64_t words[kMaxKey];
  };

  void put(int64_t word) {
    if (length_ < kMaxKey) key_[length_] = word;
    ++length_;
    hash_ = ((hash_ << 5) + hash_) ^ uint64_t(word);  // a slot picker; keys compare in full
  }
  void put_text(const char* text) {
    size_t length = std::strlen(text);
    put(int64_t(length));
    for (size_t i = 0; i < length && length_ <= kMaxKey; i += 8) {  // past kMaxKey: not kept
      uint64_t word = 0;
      std::memcpy(&word, text + i, std::min<size_t>(8, length - i));
      put(int64_t(word));
    }
  }
  bool encode(const ops::OpSchema& schema, const DLTensor* tensors, size_t num_inputs,
              size_t num_outputs, const oar_attr_t* attrs, size_t num_attrs) {
    put(int64_t(reinterpret_cast<intptr_t>(&schema)));
    put(int64_t(num_inputs) << 32 | int64_t(num_outputs));
    for (size_t i = 0; i < num_inputs + num_outputs; ++i) {
      const DLTensor& t = tensors[i];
      put(int64_t(t.dtype.code) | int64_t(t.dtype.bits) << 8 | int64_t(t.dtype.lanes) << 16 |
          int64_t(t.ndim) << 32);
      for (int d = 0; d < t.ndim; ++d) put(t.shape[d]);
    }
    put(int64_t(num_attrs));
    if (num_attrs > 0 && attrs == nullptr) return false;
    for (size_t i = 0; i < num_attrs; ++i) {
      const oar_attr_t& a = attrs[i];
      if (a.name == nullptr) return false;  // the full check names the problem
      put(a.type);
      put_text(a.name);
      switch (a.type) {
        case OAR_ATTR_TYPE_INT:
          put(a.value.i);
          break;
        case OAR_ATTR_TYPE_FLOAT: {
          int64_t bits = 0;
          std::memcpy(&bits, &a.value.f, sizeof bits);
          put(bits);
          break;
        }
        case OAR_ATTR_TYPE_BOOL:
          put(a.value.b ? 1 : 0);
          break;
        case OAR_ATTR_TYPE_STRING:
          if (a.value.s == nullptr) return false;
          put_text(a.value.s);
          break;
        case OAR_ATTR_TYPE_INT_ARRAY:
          if (a.value.ints.count > kMaxKey ||
              (a.value.ints.count > 0 && a.value.ints.data == nullptr)) {
            return false;
          }
          put(int64_t(a.value.ints.count));
          for (size_t k = 0; k < a.value.ints.count; ++k) put(a.value.ints.data[k]);
          break;
        case OAR_ATTR_TYPE_FLOAT_ARRAY:
          if (a.value.floats.count > kMaxKey ||
              (a.value.floats.count > 0 && a.value.floats.data == nullptr)) {
            return false;
          }
          put(int64_t(a.value.floats.count));
          for (size_t k = 0; k < a.value.floats.count; ++k) {
            int64_t bits = 0;
            std::memcpy(&bits, &a.value.floats.data[k], sizeof bits);
            put(bits);
          }
          break;
        default:
          return false;
      }
      if (length_ > kMaxKey) return false;
    }
    return true;
  }

  int64_t key_[kMaxKey];
  size_t length_;
  uint64_t hash_;
  bool cacheable_;
  size_t slot_;
  Slot slots_[kSlots];
};

// This thread's PassedChecks. The pointer is initial-exec TLS (8 bytes, no
// __tls_get_addr call on the hot path); the object itself is owned by a
// dynamic thread_local made on the thread's first schema dispatch, which
// frees it and clears the pointer when the thread exits.
thread_local PassedChecks* current_checks __attribute__((tls_model("initial-exec"))) = nullptr;

struct PassedChecksOwner {
  PassedChecks checks{};
  PassedChecksOwner() { current_checks = &checks; }
  ~PassedChecksOwner() { current_checks = nullptr; }
};

PassedChecks& passed_checks() {
  if (PassedChecks* checks = current_checks) return *checks;
  thread_local std::unique_ptr<PassedChecksOwner> owner = std::make_unique<PassedChecksOwner>();
  return owner->checks;
}

// Checks a schema operator's call: dtypes, attributes, output shapes.
void check_schema(const ops::OpSchema& schema, const DLTensor* tensors, size_t num_inputs,
                  size_t num_outputs, const oar_attr_t* attrs, size_t num_attrs) {
  ops::check_dtypes(schema, tensors, num_inputs, tensors + num_inputs, num_outputs);
  std::vector<std::vector<int64_t>> shapes =
      ops::infer_shapes(schema, tensors, num_inputs, attrs, num_attrs);
  for (size_t i = 0; i < shapes.size() && i < num_outputs; ++i) {
    const DLTensor& out = tensors[num_inputs + i];
    if (!std::equal(shapes[i].begin(), shapes[i].end(), out.shape, out.shape + out.ndim) ||
        size_t(out.ndim) != shapes[i].size()) {
      std::string want, got;
      for (int64_t d : shapes[i]) want += (want.empty() ? "" : ", ") + std::to_string(d);
      for (int d = 0; d < out.ndim; ++d)
        got += (got.empty() ? "" : ", ") + std::to_string(out.shape[d]);
      throw Error(OAR_STATUS_INVALID_ARGUMENT, std::string(schema.name) + ": output " +
                                                   std::to_string(i) + " must have shape [" + want +
                                                   "], not [" + got + "]");
    }
  }
}

}  // namespace

OpId::OpId(std::string_view name)
    : value_(detail::intern_op(name)), schema_(ops::find_schema(name)) {}

void dispatch(Stream& stream, const OpId& op, const DLTensor* inputs, size_t num_inputs,
              DLTensor* outputs, size_t num_outputs, const oar_attr_t* attrs, size_t num_attrs) {
  Device& device = stream.device();
  detail::Plugin& plugin = device.plugin();
  const uint32_t op_value = op.value();
  if ((num_inputs > 0 && inputs == nullptr) || (num_outputs > 0 && outputs == nullptr) ||
      (num_attrs > 0 && attrs == nullptr)) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                detail::op_name(op_value) + ": NULL tensors or attributes with a nonzero count");
  }
  const bool tracing = detail::Tracer::instance().enabled();
  detail::TraceScope trace(tracing ? detail::op_name(op_value).c_str() : "", "op", device.name(),
                           stream.handle(), tracing);

  detail::SignatureKey key(op_value);
  key.add_count(uint32_t(num_inputs), uint32_t(num_outputs));
  for (size_t i = 0; i < num_inputs; ++i) key.add(inputs[i].dtype);
  for (size_t i = 0; i < num_outputs; ++i) key.add(outputs[i].dtype);
  const detail::KernelEntry* kernel =
      plugin.kernels().find(key.value(), op_value, inputs, num_inputs, outputs, num_outputs);
  // No kernel (or decomposition forced): compose the operator from primitives
  // where it has a decomposition (core/ops/decompositions/).
  if ((kernel == nullptr || decompose::forced(device)) &&
      decompose::run_decomposition(stream, op, inputs, num_inputs, outputs, num_outputs, attrs,
                                   num_attrs, kernel != nullptr)) {
    return;
  }
  if (kernel == nullptr) {
    // A call the schema refuses gets the schema's reason, not "no kernel".
    if (op.schema() != nullptr) {
      ops::check_dtypes(*op.schema(), inputs, num_inputs, outputs, num_outputs);
    }
    no_kernel(device, op_value, inputs, num_inputs, outputs, num_outputs);
  }

  // The kernel sees copies, so that filling in missing strides never touches
  // the caller's descriptors.
  const size_t count = num_inputs + num_outputs;
  DLTensor inline_tensors[kInlineTensors];
  int64_t inline_strides[kInlineTensors][kInlineDims];
  std::vector<DLTensor> heap_tensors;
  std::vector<int64_t> heap_strides;
  DLTensor* tensors = inline_tensors;
  // The strides storage below is sized by the largest ndim: a garbage ndim
  // must be refused, not allocated.
  for (size_t i = 0; i < count; ++i) {
    const DLTensor& t = i < num_inputs ? inputs[i] : outputs[i - num_inputs];
    if (t.ndim < 0 || t.ndim > Tensor::kMaxDlpackDims) {
      throw Error(OAR_STATUS_INVALID_ARGUMENT, detail::op_name(op_value) + ": a tensor has " +
                                                   std::to_string(t.ndim) + " dimensions (0 to " +
                                                   std::to_string(Tensor::kMaxDlpackDims) + ")");
    }
  }
  bool fits = count <= kInlineTensors;
  for (size_t i = 0; i < count && fits; ++i) {
    const DLTensor& t = i < num_inputs ? inputs[i] : outputs[i - num_inputs];
    fits = t.ndim <= int(kInlineDims);
  }
  size_t max_dims = 0;
  if (!fits) {
    heap_tensors.resize(count);
    tensors = heap_tensors.data();
    for (size_t i = 0; i < count; ++i) {
      const DLTensor& t = i < num_inputs ? inputs[i] : outputs[i - num_inputs];
      max_dims = std::max(max_dims, size_t(std::max(t.ndim, 0)));
    }
    heap_strides.resize(count * max_dims);
  }
  const bool need_contiguous = (kernel->flags & OAR_KERNEL_FLAG_STRIDED_INPUTS) == 0;
  std::vector<Buffer> staged;  // contiguous copies of strided inputs, freed stream ordered
  for (size_t i = 0; i < count; ++i) {
    bool is_input = i < num_inputs;
    tensors[i] = is_input ? inputs[i] : outputs[i - num_inputs];
    int64_t* storage = fits ? inline_strides[i] : heap_strides.data() + i * max_dims;
    if (prepare(device, op_value, tensors[i], storage, need_contiguous,
                is_input ? "input" : "output", is_input ? i : i - num_inputs)) {
      continue;
    }
    if (!is_input) {
      throw Error(OAR_STATUS_INVALID_ARGUMENT,
                  detail::op_name(op_value) + ": output " + std::to_string(i - num_inputs) +
                      " is not contiguous and the kernel writes contiguous outputs only");
    }
    // The kernel takes contiguous inputs: stage a contiguous copy with the
    // plugin's own strided "copy" kernel, ordered on this stream.
    static const OpId copy_op("copy");
    DLTensor& t = tensors[i];
    int64_t elements = 0;
    util::element_count(t.shape, t.ndim, &elements);  // prepare checked it fits, bytes too
    staged.push_back(device.allocate(uint64_t(elements) * dtype_size(t.dtype), &stream));
    DLTensor contiguous_copy = t;
    contiguous_copy.data = staged.back().memory();
    contiguous_copy.byte_offset = staged.back().offset();
    contiguous_copy.strides = nullptr;
    dispatch(stream, copy_op, &t, 1, &contiguous_copy, 1);
    util::row_major_strides(t.shape, t.ndim, storage);
    t.data = contiguous_copy.data;
    t.byte_offset = contiguous_copy.byte_offset;
    t.strides = storage;
  }
  if (op.schema() != nullptr) {
    PassedChecks& checks = passed_checks();
    if (!checks.seen(*op.schema(), tensors, num_inputs, num_outputs, attrs, num_attrs)) {
      check_schema(*op.schema(), tensors, num_inputs, num_outputs, attrs, num_attrs);
      checks.passed();
    }
  }

  ScratchContext scratch{&device, &stream, {}};
  oar_kernel_call_t call;
  call.struct_size = OAR_KERNEL_CALL_STRUCT_SIZE;
  call.device = device.handle();
  call.stream = stream.handle();
  call.inputs = tensors;
  call.num_inputs = num_inputs;
  call.outputs = tensors + num_inputs;
  call.num_outputs = num_outputs;
  call.attrs = attrs;
  call.num_attrs = num_attrs;
  call.scratch_allocate = &scratch_allocate;
  call.scratch_context = &scratch;
  call.user_data = kernel->user_data;
  oar_status_t code = kernel->fn(&call);
  if (code != OAR_STATUS_OK) plugin.fail(code, detail::op_name(op_value).c_str());
}

void dispatch(Stream& stream, const OpId& op, std::initializer_list<const Tensor*> inputs,
              std::initializer_list<const Tensor*> outputs, std::initializer_list<Attr> attrs) {
  const size_t count = inputs.size() + outputs.size();
  if (count > kInlineTensors || attrs.size() > kInlineTensors) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "dispatch over Tensor takes at most 16 tensors and 16 attributes; use the "
                "DLTensor overload");
  }
  DLTensor tensors[kInlineTensors];
  size_t n = 0;
  for (const Tensor* t : inputs) tensors[n++] = t->dl();
  for (const Tensor* t : outputs) tensors[n++] = t->dl();
  oar_attr_t raw_attrs[kInlineTensors];
  size_t a = 0;
  for (const Attr& attr : attrs) raw_attrs[a++] = attr.attr;
  dispatch(stream, op, tensors, inputs.size(), tensors + inputs.size(), outputs.size(), raw_attrs,
           a);
}

}  // namespace oar

namespace oar {

AttrList& AttrList::add(std::string name, int64_t v) {
  Entry e;
  e.name = std::move(name);
  e.type = OAR_ATTR_TYPE_INT;
  e.scalar.i = v;
  entries_.push_back(std::move(e));
  return *this;
}

AttrList& AttrList::add(std::string name, double v) {
  Entry e;
  e.name = std::move(name);
  e.type = OAR_ATTR_TYPE_FLOAT;
  e.scalar.f = v;
  entries_.push_back(std::move(e));
  return *this;
}

AttrList& AttrList::add(std::string name, bool v) {
  Entry e;
  e.name = std::move(name);
  e.type = OAR_ATTR_TYPE_BOOL;
  e.scalar.b = v;
  entries_.push_back(std::move(e));
  return *this;
}

AttrList& AttrList::add(std::string name, std::string v) {
  Entry e;
  e.name = std::move(name);
  e.type = OAR_ATTR_TYPE_STRING;
  e.text = std::move(v);
  entries_.push_back(std::move(e));
  return *this;
}

AttrList& AttrList::add(std::string name, std::vector<int64_t> v) {
  Entry e;
  e.name = std::move(name);
  e.type = OAR_ATTR_TYPE_INT_ARRAY;
  e.ints = std::move(v);
  entries_.push_back(std::move(e));
  return *this;
}

AttrList& AttrList::add(std::string name, std::vector<double> v) {
  Entry e;
  e.name = std::move(name);
  e.type = OAR_ATTR_TYPE_FLOAT_ARRAY;
  e.floats = std::move(v);
  entries_.push_back(std::move(e));
  return *this;
}

AttrList& AttrList::add(const oar_attr_t& attr) {
  if (attr.name == nullptr) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "AttrList::add: an attribute without a name");
  }
  std::string name = attr.name;
  switch (attr.type) {
    case OAR_ATTR_TYPE_INT:
      return add(std::move(name), attr.value.i);
    case OAR_ATTR_TYPE_FLOAT:
      return add(std::move(name), attr.value.f);
    case OAR_ATTR_TYPE_BOOL:
      return add(std::move(name), attr.value.b);
    case OAR_ATTR_TYPE_STRING:
      if (attr.value.s == nullptr) {
        throw Error(OAR_STATUS_INVALID_ARGUMENT,
                    "AttrList::add: string attribute " + name + " is NULL");
      }
      return add(std::move(name), std::string(attr.value.s));
    case OAR_ATTR_TYPE_INT_ARRAY:
      if (attr.value.ints.count > 0 && attr.value.ints.data == nullptr) break;
      return add(
          std::move(name),
          std::vector<int64_t>(attr.value.ints.data, attr.value.ints.data + attr.value.ints.count));
    case OAR_ATTR_TYPE_FLOAT_ARRAY:
      if (attr.value.floats.count > 0 && attr.value.floats.data == nullptr) break;
      return add(std::move(name),
                 std::vector<double>(attr.value.floats.data,
                                     attr.value.floats.data + attr.value.floats.count));
    default:
      throw Error(
          OAR_STATUS_INVALID_ARGUMENT,
          "AttrList::add: attribute " + name + " has unknown type " + std::to_string(attr.type));
  }
  throw Error(OAR_STATUS_INVALID_ARGUMENT,
              "AttrList::add: array attribute " + name + " has NULL data and a nonzero count");
}

std::vector<oar_attr_t> AttrList::raw() const {
  std::vector<oar_attr_t> out(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    oar_attr_t& a = out[i];
    a.name = e.name.c_str();
    a.type = e.type;
    switch (e.type) {
      case OAR_ATTR_TYPE_STRING:
        a.value.s = e.text.c_str();
        break;
      case OAR_ATTR_TYPE_INT_ARRAY:
        a.value.ints.data = e.ints.data();
        a.value.ints.count = e.ints.size();
        break;
      case OAR_ATTR_TYPE_FLOAT_ARRAY:
        a.value.floats.data = e.floats.data();
        a.value.floats.count = e.floats.size();
        break;
      default:
        a.value = e.scalar;
    }
  }
  return out;
}

// Device's query lives beside the lookup it shares with dispatch.
bool Device::has_kernel(std::string_view op, const std::vector<DLDataType>& inputs,
                        const std::vector<DLDataType>& outputs) const {
  std::vector<DLDataType> dtypes = inputs;
  dtypes.insert(dtypes.end(), outputs.begin(), outputs.end());
  return plugin_->kernels().find(detail::intern_op(op), dtypes.data(), inputs.size(),
                                 outputs.size()) != nullptr;
}

std::vector<Device::KernelSignature> Device::kernel_signatures(std::string_view op) const {
  std::vector<KernelSignature> result;
  if (ops::find_schema(op) == nullptr) return result;
  for (const detail::KernelEntry* entry : plugin_->kernels().entries(detail::intern_op(op))) {
    const auto split = entry->dtypes.begin() + entry->num_inputs;
    result.push_back({{entry->dtypes.begin(), split}, {split, entry->dtypes.end()}});
  }
  return result;
}

void dispatch(Stream& stream, const OpId& op, std::initializer_list<const Tensor*> inputs,
              std::initializer_list<const Tensor*> outputs, const AttrList& attrs) {
  const size_t count = inputs.size() + outputs.size();
  if (count > kInlineTensors) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "dispatch over Tensor takes at most 16 tensors; use the DLTensor overload");
  }
  DLTensor tensors[kInlineTensors];
  size_t n = 0;
  for (const Tensor* t : inputs) tensors[n++] = t->dl();
  for (const Tensor* t : outputs) tensors[n++] = t->dl();
  std::vector<oar_attr_t> raw = attrs.raw();
  dispatch(stream, op, tensors, inputs.size(), tensors + inputs.size(), outputs.size(), raw.data(),
           raw.size());
}

}  // namespace oar
