// Operator calls with fuzzed shapes, strides, dtypes and attributes, on the
// cpu plugin and on the sim plugin (device memory the host cannot touch).
// Every operator of the set is reachable; a call is either refused with
// oar::Error (at dispatch or on its stream) or runs, and nothing may crash,
// read or write out of bounds, hang or leak. Views come from Tensor::view
// over real buffers, or as raw DLTensors with any shape, strides and byte
// offset (which the core and the plugins must range-check).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "oar/oar.hpp"
#include "oar/ops.hpp"

namespace {

using oar::operator==;

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return position_ < size_ ? data_[position_++] : 0; }
  uint64_t u64() {
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value |= uint64_t(byte()) << (8 * i);
    return value;
  }
  // Mostly small, sometimes negative or extreme.
  int64_t number() {
    uint8_t kind = byte();
    switch (kind % 16) {
      case 0:
        return int64_t(u64());
      case 1:
        return -int64_t(byte() % 8);
      case 2:
        return int64_t(1) << (byte() % 63);
      case 3:
        return INT64_MAX - int64_t(byte() % 4);
      case 4:
        return INT64_MIN + int64_t(byte() % 4);
      default:
        return int64_t(kind % 6);
    }
  }
  bool done() const { return position_ >= size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t position_ = 0;
};

struct Target {
  std::unique_ptr<oar::Runtime> runtime;
  oar::Device* device = nullptr;
  std::unique_ptr<oar::Stream> stream;
};

Target make_target(const char* manifest) {
  Target target;
  oar::RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = {manifest};
  target.runtime = std::make_unique<oar::Runtime>(options);
  if (!target.runtime->devices().empty()) {
    target.device = target.runtime->devices()[0];
    target.stream = std::make_unique<oar::Stream>(target.device->create_stream());
  }
  return target;
}

std::vector<Target>& targets() {
  static std::vector<Target>* all = [] {
    auto* made = new std::vector<Target>();
    made->push_back(make_target(OAR_FUZZ_CPU_MANIFEST));
    made->push_back(make_target(OAR_FUZZ_SIM_MANIFEST));
    if (made->at(0).device == nullptr || made->at(1).device == nullptr) __builtin_trap();
    return made;
  }();
  return *all;
}

const DLDataType kDtypes[] = {oar::dtype::f32,     oar::dtype::f16, oar::dtype::bf16,
                              oar::dtype::f64,     oar::dtype::i32, oar::dtype::i64,
                              oar::dtype::boolean, oar::dtype::u8};

// Tensors stay small: a call's cost is bounded whatever the input says.
constexpr int64_t kMaxElements = 2048;
constexpr uint64_t kMaxBytes = 64 << 10;

int64_t saturated_mul(int64_t a, int64_t b) {
  int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? INT64_MAX : product;
}

enum class Size { kSmall, kLarge, kInvalid };

// What a tensor of |shape| and |strides| (empty: row-major) is worth making:
// small enough to compute on, too large to (skipped), or invalid (sizes that
// leave 64 bits, negative dimensions), which the core must refuse. |count|
// and |extent| (elements from the lowest to the highest reached) for kSmall.
Size classify(const std::vector<int64_t>& shape, std::vector<int64_t> strides,
              int64_t* out_count = nullptr, int64_t* out_extent = nullptr,
              bool allow_negative_strides = false) {
  const __int128 kCap = __int128(1) << 100;  // keeps sums of 8 terms exact
  bool zero = false;
  for (int64_t d : shape) {
    if (d < 0) return Size::kInvalid;
    zero |= d == 0;
  }
  __int128 count = zero ? 0 : 1;
  for (int64_t d : shape) count = d != 0 && count > kCap / d ? kCap : count * d;
  if (count > INT64_MAX) return Size::kInvalid;
  if (strides.empty()) {
    strides.assign(shape.size(), 0);
    int64_t step = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      strides[i] = step;
      step = zero ? 0 : step * shape[i];  // fits: count does
    }
  }
  __int128 low = 0;
  __int128 high = 0;
  if (!zero) {
    for (size_t i = 0; i < shape.size(); ++i) {
      __int128 reach = __int128(shape[i] - 1) * strides[i];
      reach = std::max(std::min(reach, kCap), -kCap);
      (reach < 0 ? low : high) += reach;
    }
  }
  if (high - low + 1 > INT64_MAX / 8) return Size::kInvalid;
  if (count > kMaxElements || high - low + 1 > kMaxElements * 64) return Size::kLarge;
  if (out_count != nullptr) *out_count = int64_t(count);
  if (out_extent != nullptr) *out_extent = zero ? 0 : int64_t(high - low + 1);
  if (low < 0 && !allow_negative_strides) return Size::kLarge;  // Tensor refuses them
  return Size::kSmall;
}

// One input tensor: a Tensor (viewed with fuzzed strides over a buffer large
// enough), or, when the strides ask for more than we make, a Tensor::view that
// must refuse them.
oar::Tensor make_input(Input& in, Target& target, DLDataType dtype) {
  int ndim = in.byte() % 5;
  std::vector<int64_t> shape(static_cast<size_t>(ndim));
  for (int64_t& d : shape) d = in.number();
  std::vector<int64_t> strides;
  uint8_t layout = in.byte() % 4;
  if (layout == 1) {  // any strides
    strides.resize(size_t(ndim));
    for (int64_t& s : strides) s = in.number();
  } else if (layout == 2 && ndim >= 2) {  // transposed
    strides.assign(size_t(ndim), 1);
    for (int i = 0; i < ndim; ++i) {
      strides[size_t(i)] = 1;
      for (int j = 0; j < i; ++j) {
        strides[size_t(i)] =
            saturated_mul(strides[size_t(i)], std::max<int64_t>(shape[size_t(j)], 1));
      }
    }
  } else if (layout == 3) {  // broadcast: some zero strides
    strides.assign(size_t(ndim), 0);
    int64_t step = 1;
    for (int i = ndim; i-- > 0;) {
      if (in.byte() & 1) {
        strides[size_t(i)] = step;
        step = saturated_mul(step, std::max<int64_t>(shape[size_t(i)], 1));
      }
    }
  }
  int64_t count = 0;
  int64_t extent = 0;
  const uint64_t element = oar::dtype_size(dtype);
  uint64_t offset_elements = in.byte() % 4;
  if (classify(shape, strides, &count, &extent) != Size::kSmall ||
      uint64_t(extent + int64_t(offset_elements)) * element > kMaxBytes) {
    // Too big or invalid to make: a view over a small buffer must refuse it,
    // unless it fits there (zero strides, empty shapes).
    auto small = std::make_shared<oar::Buffer>(target.device->allocate(256, target.stream.get()));
    try {
      oar::Tensor t = oar::Tensor::view(small, shape, dtype, strides, 0);
      // Sizes are exact: the element count and byte size never wrap.
      __int128 exact = 1;
      for (int64_t d : shape) exact *= d;  // accepted: each step fits in 64 bits
      if (exact != t.numel() || exact * __int128(element) != __int128(t.nbytes())) {
        __builtin_trap();
      }
      if (t.numel() > kMaxElements) return oar::Tensor();  // fits, but too long to run
      return t;
    } catch (const oar::Error&) {
      return oar::Tensor();
    }
  }
  uint64_t bytes = (uint64_t(extent) + offset_elements) * element;
  auto buffer = std::make_shared<oar::Buffer>(target.device->allocate(bytes, target.stream.get()));
  std::vector<uint8_t> fill(static_cast<size_t>(bytes));
  for (size_t i = 0; i < fill.size(); ++i) fill[i] = uint8_t(in.byte() ^ (i * 13));
  if (dtype == oar::dtype::boolean) {
    for (uint8_t& b : fill) b &= 1;
  }
  if (bytes > 0) {
    target.stream->copy_from_host(*buffer, 0, fill.data(), bytes);
    target.stream->synchronize();  // |fill| dies with this function
  }
  try {
    return oar::Tensor::view(buffer, shape, dtype, strides, offset_elements * element);
  } catch (const oar::Error&) {
    return oar::Tensor();  // e.g. negative strides beside a zero dimension
  }
}

struct Attributes {
  std::vector<oar::Attr> list;
  std::vector<std::vector<int64_t>> arrays;  // storage the Attrs borrow
  std::vector<std::string> names;
};

void make_attributes(Input& in, const oar::ops::OpSchema& schema, Attributes* out) {
  out->arrays.reserve(16);
  out->names.reserve(16);
  static const char* kStrings[] = {"none", "tanh", "mean", "sum", "", "bogus"};
  for (const oar::ops::AttrSpec& spec : schema.attrs) {
    uint8_t choice = in.byte();
    if (choice % 4 == 0 && !spec.required) continue;  // the default
    int32_t type = spec.type;
    if (choice % 29 == 1) type = OAR_ATTR_TYPE_INT + (in.byte() % 6);  // maybe the wrong type
    switch (type) {
      case OAR_ATTR_TYPE_INT:
        out->list.emplace_back(spec.name, in.number());
        break;
      case OAR_ATTR_TYPE_FLOAT:
        out->list.emplace_back(spec.name, double(in.number()) / 7.0);
        break;
      case OAR_ATTR_TYPE_BOOL:
        out->list.emplace_back(spec.name, bool(in.byte() & 1));
        break;
      case OAR_ATTR_TYPE_STRING:
        out->list.emplace_back(spec.name, kStrings[in.byte() % 6]);
        break;
      default: {
        out->arrays.emplace_back();
        int count = in.byte() % 5;
        for (int i = 0; i < count; ++i) out->arrays.back().push_back(in.number());
        out->list.emplace_back(spec.name, out->arrays.back());
        break;
      }
    }
  }
  if (in.byte() % 37 == 0) {
    out->names.push_back("not_an_attribute");
    out->list.emplace_back(out->names.back().c_str(), int64_t(1));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("OMP_NUM_THREADS", "1", 1);
  targets();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  Target& target = targets()[in.byte() % 2];
  const std::vector<oar::ops::OpSchema>& all = oar::ops::schemas();
  const oar::ops::OpSchema& schema = all[in.byte() % all.size()];

  // Inputs: the schema's count (variadic: 1 to 3), sometimes one more or less.
  size_t count = schema.inputs.size();
  if (!schema.inputs.empty() && schema.inputs.back().variadic) count += in.byte() % 3;
  if (!schema.inputs.empty() && schema.inputs.back().optional && (in.byte() & 1)) --count;
  uint8_t arity = in.byte();
  if (arity % 23 == 0) ++count;
  if (arity % 23 == 1 && count > 0) --count;

  DLDataType dtype = kDtypes[in.byte() % 8];
  std::vector<oar::Tensor> inputs;
  for (size_t i = 0; i < count; ++i) {
    DLDataType t = dtype;
    if (int(i) == schema.index_input) t = (in.byte() & 1) ? oar::dtype::i64 : oar::dtype::i32;
    if (schema.rule == oar::ops::DtypeRule::kWhere && i == 0) t = oar::dtype::boolean;
    if (in.byte() % 17 == 0) t = kDtypes[in.byte() % 8];
    oar::Tensor tensor = make_input(in, target, t);
    if (!tensor.defined()) return 0;  // refused as it should be
    inputs.push_back(std::move(tensor));
  }
  Attributes attributes;
  make_attributes(in, schema, &attributes);
  std::vector<oar_attr_t> raw;
  for (const oar::Attr& a : attributes.list) raw.push_back(a.attr);

  std::vector<DLTensor> in_dl;
  for (const oar::Tensor& t : inputs) in_dl.push_back(t.dl());
  std::vector<std::vector<int64_t>> shapes;
  try {
    shapes = oar::ops::infer_shapes(schema, in_dl.data(), in_dl.size(), raw.data(), raw.size());
  } catch (const oar::Error&) {
    return 0;
  }
  if (shapes.empty()) {
    // fill: the output's shape is the caller's.
    std::vector<int64_t> shape(size_t(in.byte() % 3), int64_t(1 + in.byte() % 4));
    shapes.push_back(shape);
  }
  std::vector<oar::Tensor> outputs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (classify(shapes[i], {}) != Size::kSmall) return 0;
    DLDataType out_dtype = oar::ops::output_dtypes(schema, dtype)[0];
    if (schema.rule == oar::ops::DtypeRule::kCast || in.byte() % 19 == 0) {
      out_dtype = kDtypes[in.byte() % 8];
    }
    try {
      outputs.push_back(
          oar::Tensor::empty(*target.device, shapes[i], out_dtype, target.stream.get()));
    } catch (const oar::Error&) {
      return 0;  // refused (an empty shape whose other extents wrap, an odd dtype)
    }
  }
  std::vector<DLTensor> out_dl;
  for (const oar::Tensor& t : outputs) out_dl.push_back(t.dl());

  // Raw mode: one input's descriptor rewritten to any byte offset, shape or
  // strides over the same allocation; the core and plugin must range-check,
  // and sizes that leave 64 bits must be refused before the plugin sees them.
  std::vector<int64_t> raw_shape;
  std::vector<int64_t> raw_strides;
  bool must_refuse = false;
  if (!in_dl.empty() && in.byte() % 11 == 0) {
    DLTensor& t = in_dl[in.byte() % in_dl.size()];
    raw_shape.assign(t.shape, t.shape + t.ndim);
    raw_strides.assign(t.strides, t.strides + t.ndim);
    for (int64_t& d : raw_shape) d = (in.byte() & 1) ? in.number() : d;
    for (int64_t& s : raw_strides) s = (in.byte() & 1) ? in.number() : s;
    t.shape = raw_shape.data();
    bool row_major = in.byte() & 1;
    t.strides = row_major ? nullptr : raw_strides.data();
    if (in.byte() & 1) t.byte_offset = in.u64();
    Size size = classify(raw_shape, row_major ? std::vector<int64_t>() : raw_strides, nullptr,
                         nullptr, /*allow_negative_strides=*/true);
    if (size == Size::kLarge) return 0;  // valid, but too long to run
    must_refuse = size == Size::kInvalid;
  }

  static std::vector<std::unique_ptr<oar::OpId>> ids(all.size());
  size_t index = size_t(&schema - all.data());
  if (ids[index] == nullptr) ids[index] = std::make_unique<oar::OpId>(schema.name);
  try {
    oar::dispatch(*target.stream, *ids[index], in_dl.data(), in_dl.size(), out_dl.data(),
                  out_dl.size(), raw.data(), raw.size());
    if (must_refuse) __builtin_trap();  // a size beyond 64 bits reached the plugin
    target.stream->synchronize();
  } catch (const oar::Error&) {
    // Refused, or failed on the stream: a failed stream stays failed, so the
    // next input gets a fresh one.
    try {
      target.stream->synchronize();
    } catch (const oar::Error&) {
      inputs.clear();
      outputs.clear();
      *target.stream = target.device->create_stream();
    }
  }
  return 0;
}
