#include "conformance/suites/ops/tensor_data.h"

#include <cmath>
#include <cstring>

#include "oar/ops.hpp"

namespace oar::conformance {
namespace {

bool is_integer(DLDataType dtype) { return dtype.code == kDLInt || dtype.code == kDLUInt; }

}  // namespace

Domain uniform(double lo, double hi) { return {Domain::Kind::kUniform, lo, hi}; }
Domain away_from_zero(double lo, double hi) { return {Domain::Kind::kAwayFromZero, lo, hi}; }
Domain integers(int64_t lo, int64_t hi) {
  return {Domain::Kind::kIntegers, double(lo), double(hi)};
}

bool is_float(DLDataType dtype) { return dtype.code == kDLFloat || dtype.code == kDLBfloat; }

uint64_t seed_of(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

HostTensor make_input(const InputSpec& spec, uint64_t seed) {
  HostTensor t = HostTensor::zeros(spec.shape, spec.dtype);
  const int64_t n = t.numel();
  if (!spec.bits.empty()) {
    if (int64_t(spec.bits.size()) != n) {
      throw std::logic_error("explicit bits do not match shape " + shape_text(spec.shape));
    }
    const size_t size = dtype_size(spec.dtype);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t word = spec.bits[size_t(i)];
      const uint8_t u8 = uint8_t(word);
      const uint16_t u16 = uint16_t(word);
      const uint32_t u32 = uint32_t(word);
      const void* from = size == 1   ? static_cast<const void*>(&u8)
                         : size == 2 ? static_cast<const void*>(&u16)
                         : size == 4 ? static_cast<const void*>(&u32)
                                     : static_cast<const void*>(&word);
      std::memcpy(t.bytes.data() + size_t(i) * size, from, size);
    }
    return t;
  }
  if (!spec.values.empty()) {
    if (int64_t(spec.values.size()) != n) {
      throw std::logic_error("explicit values do not match shape " + shape_text(spec.shape));
    }
    for (int64_t i = 0; i < n; ++i) {
      if (is_float(spec.dtype)) {
        t.set(i, spec.values[size_t(i)]);
      } else {
        t.set_int(i, int64_t(spec.values[size_t(i)]));
      }
    }
    return t;
  }
  Random random(seed);
  const Domain& d = spec.domain;
  const bool boolean = spec.dtype == dtype::boolean;
  for (int64_t i = 0; i < n; ++i) {
    if (boolean) {
      t.set_int(i, int64_t(random.next() & 1));
    } else if (d.kind == Domain::Kind::kIntegers || is_integer(spec.dtype)) {
      int64_t lo = int64_t(std::ceil(d.lo));
      int64_t hi = int64_t(std::floor(d.hi));
      int64_t v = random.integer(lo, hi);
      if (d.kind == Domain::Kind::kAwayFromZero && v == 0) v = hi > 0 ? hi : lo;
      if (d.kind == Domain::Kind::kAwayFromZero && (random.next() & 1)) v = -v;
      is_float(spec.dtype) ? t.set(i, double(v)) : t.set_int(i, v);
    } else if (d.kind == Domain::Kind::kAwayFromZero) {
      double magnitude = random.between(d.lo, d.hi);
      t.set(i, (random.next() & 1) ? -magnitude : magnitude);
    } else {
      t.set(i, random.between(d.lo, d.hi));
    }
  }
  return t;
}

HostTensor transpose_last2(const HostTensor& x) {
  const size_t r = x.shape.size();
  std::vector<int64_t> shape = x.shape;
  std::swap(shape[r - 1], shape[r - 2]);
  HostTensor y = HostTensor::zeros(shape, x.dtype);
  const int64_t rows = x.shape[r - 2];
  const int64_t cols = x.shape[r - 1];
  const size_t element = dtype_size(x.dtype);
  const int64_t matrices = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  for (int64_t m = 0; m < matrices; ++m) {
    const uint8_t* src = x.bytes.data() + size_t(m * rows * cols) * element;
    uint8_t* dst = y.bytes.data() + size_t(m * rows * cols) * element;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        std::memcpy(dst + size_t(j * rows + i) * element, src + size_t(i * cols + j) * element,
                    element);
      }
    }
  }
  return y;
}

HostTensor widen_to_f64(const HostTensor& x) {
  if (!is_float(x.dtype)) return x;
  HostTensor y = HostTensor::zeros(x.shape, dtype::f64);
  for (int64_t i = 0; i < x.numel(); ++i) y.set(i, x.get(i));
  return y;
}

HostTensor abs_as_f64(const HostTensor& x) {
  if (!is_float(x.dtype)) {
    // Integers keep their dtype (an operator may require it: matmul_w8's i8
    // weight); |INT_MIN| does not fit and becomes INT_MAX, 1 less.
    HostTensor y = x;
    if (x.dtype == dtype::boolean) return y;
    const int64_t max = int64_t((uint64_t(1) << (dtype_size(x.dtype) * 8 - 1)) - 1);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t v = x.get_int(i);
      y.set_int(i, v < -max ? max : v < 0 ? -v : v);
    }
    return y;
  }
  HostTensor y = HostTensor::zeros(x.shape, dtype::f64);
  for (int64_t i = 0; i < x.numel(); ++i) y.set(i, std::fabs(x.get(i)));
  return y;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string index_text(const std::vector<int64_t>& shape, int64_t i) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : i % shape[d];
    i = shape[d] == 0 ? 0 : i / shape[d];
  }
  return shape_text(index);
}

uint32_t claimed_dtype_bits(const oar_device_properties_t& properties) {
  uint32_t bits = ops::kF32 | ops::kI32 | ops::kI64 | ops::kBool | ops::kSmallInts;
  if (properties.dtypes & OAR_DTYPE_SUPPORT_F16) bits |= ops::kF16;
  if (properties.dtypes & OAR_DTYPE_SUPPORT_BF16) bits |= ops::kBF16;
  if (properties.dtypes & OAR_DTYPE_SUPPORT_F64) bits |= ops::kF64;
  return bits;
}

Tensor upload(Stream& stream, const HostTensor& host, bool transposed) {
  if (!transposed) {
    Tensor t = Tensor::empty(stream.device(), host.shape, host.dtype, &stream);
    if (!host.bytes.empty()) t.copy_from_host(stream, host.bytes.data());
    stream.synchronize();
    return t;
  }
  HostTensor stored = transpose_last2(host);
  Tensor t = Tensor::empty(stream.device(), stored.shape, stored.dtype, &stream);
  if (!stored.bytes.empty()) t.copy_from_host(stream, stored.bytes.data());
  stream.synchronize();
  int r = int(host.shape.size());
  return t.transpose(r - 2, r - 1);
}

HostTensor download(Stream& stream, const Tensor& tensor) {
  HostTensor host = HostTensor::zeros(tensor.shape(), tensor.dtype());
  if (!host.bytes.empty()) tensor.copy_to_host(stream, host.bytes.data());
  stream.synchronize();
  return host;
}

}  // namespace oar::conformance
