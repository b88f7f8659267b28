// Tensor::from_dlpack against any DLManagedTensor a producer could hand over:
// fuzzed dtype, ndim, shape, strides, byte_offset, device and data. The import
// must either refuse with oar::Error or make a tensor whose every size is
// exact; the producer's deleter runs exactly once either way. When the tensor
// lies inside the producer's real array, the cpu plugin's strided copy must
// read exactly the elements a plain loop reads (issue 12: a NULL shape, a
// negative dimension or ndim used to crash the import).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "oar/oar.hpp"

namespace {

using oar::operator==;

void require(bool fact) {
  if (!fact) __builtin_trap();
}

// Reads the fuzzer's bytes as numbers; zeros once they run out.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return position_ < size_ ? data_[position_++] : 0; }
  uint64_t u64() {
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value |= uint64_t(byte()) << (8 * i);
    return value;
  }
  // Mostly small numbers, sometimes extreme ones.
  int64_t dimension() {
    uint8_t kind = byte();
    switch (kind % 8) {
      case 0:
        return int64_t(u64());
      case 1:
        return -int64_t(byte());
      case 2:
        return int64_t(1) << (byte() % 63);
      default:
        return int64_t(byte() % 7);
    }
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t position_ = 0;
};

oar::Runtime& runtime() {
  static oar::Runtime* instance = [] {
    oar::RuntimeOptions options;
    options.use_environment = false;
    options.search_install_prefix = false;
    options.plugin_files = {OAR_FUZZ_CPU_MANIFEST};
    return new oar::Runtime(options);
  }();
  return *instance;
}

struct Producer {
  std::vector<uint8_t> array;  // the producer's real memory
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int deleted = 0;
};

constexpr size_t kArrayBytes = 4096;

// Exact products and sums, capped far above 2^64 so that __int128 never wraps.
const __int128 kCap = __int128(1) << 100;
__int128 mul_capped(__int128 a, __int128 b) {
  if (a == 0 || b == 0) return 0;
  return a > kCap / b ? kCap : a * b;
}

// The span of elements [low, high] a strided tensor reaches, in exact
// arithmetic; false if a dimension is negative (true and |empty| for a 0).
bool reference_span(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                    bool* empty, __int128* low, __int128* high) {
  *empty = false;
  *low = 0;
  *high = 0;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (d == 0) *empty = true;
  }
  if (*empty) return true;  // reaches nothing
  for (size_t i = 0; i < shape.size(); ++i) {
    __int128 reach = __int128(shape[i] - 1) * strides[i];  // |.| < 2^126
    reach = reach > kCap ? kCap : reach < -kCap ? -kCap : reach;
    (reach < 0 ? *low : *high) += reach;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("OMP_NUM_THREADS", "1", 1);
  runtime();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  auto* producer = new Producer();
  producer->array.resize(kArrayBytes);
  for (size_t i = 0; i < kArrayBytes; ++i) producer->array[i] = uint8_t(i * 7 + 3);

  auto* managed = new DLManagedTensor{};
  DLTensor& dl = managed->dl_tensor;
  uint8_t flags = in.byte();
  const DLDataType dtypes[] = {oar::dtype::f32,     oar::dtype::f16, oar::dtype::i64,
                               oar::dtype::boolean, oar::dtype::i32, oar::dtype::f64};
  dl.dtype = dtypes[in.byte() % 6];
  if (flags & 0x80) dl.dtype = DLDataType{in.byte(), in.byte(), uint16_t(in.byte() % 3)};
  int ndim_choice = in.byte();
  dl.ndim = (flags & 0x40) ? int(int8_t(ndim_choice)) * 1000 : ndim_choice % 6;
  int stored = dl.ndim > 0 && dl.ndim <= 8 ? dl.ndim : 0;
  for (int i = 0; i < stored; ++i) producer->shape.push_back(in.dimension());
  for (int i = 0; i < stored; ++i) producer->strides.push_back(in.dimension());
  dl.shape = (flags & 0x01) ? nullptr : producer->shape.data();
  if (dl.ndim > 8) dl.shape = nullptr;  // the producer cannot describe more than it has
  dl.strides = (flags & 0x02) ? producer->strides.data() : nullptr;
  if (dl.ndim > 8) dl.strides = nullptr;
  // Small offsets stay element-aligned: the cpu kernels load elements as
  // typed values, and a misaligned tensor is the producer's mistake.
  const uint64_t element_bytes = dl.dtype.bits / 8 != 0 ? dl.dtype.bits / 8 : 1;
  dl.byte_offset = (flags & 0x04) ? in.u64() : uint64_t(in.byte() % 16) * element_bytes;
  dl.data = (flags & 0x08) ? nullptr : producer->array.data();
  dl.device = DLDevice{kDLCPU, 0};
  if (flags & 0x10) dl.device = DLDevice{DLDeviceType(in.byte() % 16), int32_t(in.byte() % 3)};
  managed->manager_ctx = producer;
  managed->deleter = [](DLManagedTensor* self) {
    auto* owner = static_cast<Producer*>(self->manager_ctx);
    ++owner->deleted;
    self->manager_ctx = nullptr;
    require(owner->deleted == 1);
    delete owner;
    delete self;
  };

  // What the import may accept, worked out independently.
  std::vector<int64_t> strides = producer->strides;
  if (dl.strides == nullptr && stored > 0) {
    __int128 step = 1;
    strides.assign(size_t(stored), 0);
    for (int i = stored; i-- > 0;) {
      strides[size_t(i)] = step > INT64_MAX ? 0 : int64_t(step);
      step = mul_capped(step, producer->shape[size_t(i)] < 0 ? 0 : producer->shape[size_t(i)]);
    }
  }
  bool empty = false;
  __int128 low = 0;
  __int128 high = 0;
  bool shape_ok = reference_span(producer->shape, strides, &empty, &low, &high);
  const uint64_t element = uint64_t(dl.dtype.bits) / 8;
  __int128 count = 1;
  for (int64_t d : producer->shape) count = mul_capped(count, d < 0 ? 0 : d);
  const bool whole_bytes = dl.dtype.lanes == 1 && dl.dtype.bits % 8 == 0 && dl.dtype.bits > 0;

  oar::Tensor tensor;
  try {
    tensor = oar::Tensor::from_dlpack(runtime(), managed);
  } catch (const oar::Error& e) {
    require(e.code() != OAR_STATUS_OK && e.what()[0] != '\0');
    return 0;  // the deleter ran (checked inside it)
  }
  // Accepted: it must have been acceptable.
  require(dl.ndim >= 0 && dl.ndim <= 8);
  require(dl.ndim == 0 || dl.shape != nullptr);
  require(whole_bytes && shape_ok);
  require(mul_capped(count, element) <= INT64_MAX);
  require(low >= 0);  // negative strides are refused
  require(tensor.numel() == int64_t(count));
  require(tensor.nbytes() == uint64_t(count) * element);
  const __int128 extent = empty ? 0 : mul_capped(high + 1, element);
  require(extent <= INT64_MAX);

  // Inside the producer's array: a strided copy on the cpu plugin must match.
  if (!empty && dl.data != nullptr && __int128(dl.byte_offset) + extent <= kArrayBytes &&
      count <= 4096 && (element == 4 || element == 8 || element == 2 || element == 1) &&
      dl.dtype.code != kDLFloat) {
    oar::Device& cpu = *runtime().devices()[0];
    oar::Stream& stream = cpu.default_stream();
    oar::Tensor contiguous = oar::Tensor::empty(cpu, tensor.shape(), dl.dtype, &stream);
    static const oar::OpId copy("copy");
    try {
      oar::dispatch(stream, copy, {&tensor}, {&contiguous});
      std::vector<uint8_t> out(size_t(count) * element);
      contiguous.copy_to_host(stream, out.data());
      stream.synchronize();
      // The reference: element k of the row-major order.
      std::vector<int64_t> index(tensor.shape().size(), 0);
      for (int64_t k = 0; k < int64_t(count); ++k) {
        int64_t offset = 0;
        for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
        const uint8_t* source = producer->array.data() + dl.byte_offset + offset * element;
        require(std::memcmp(out.data() + k * element, source, element) == 0 ||
                dl.dtype.code == oar::dtype::kDLBoolCode);
        for (size_t d = index.size(); d-- > 0;) {
          if (++index[d] < tensor.shape()[d]) break;
          index[d] = 0;
        }
      }
    } catch (const oar::Error&) {
      // A dtype without a copy kernel (u8, code 3...) is refused: fine.
    }
  }
  return 0;
}
