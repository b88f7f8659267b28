// Size arithmetic that cannot wrap: every element count, byte size, extent and
// offset the core (and the in-tree plugins that link the core's static parts)
// computes from caller-supplied numbers goes through these helpers, so a
// shape, stride, offset or attribute that does not fit in 64 bits is refused
// instead of turning into a small size and an out-of-bounds access.
//
// Each helper returns false on overflow (or on a negative dimension) and
// leaves its out-parameter unspecified.
#pragma once

#include <cstdint>

namespace oar::util {

inline bool checked_add(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
inline bool checked_sub(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_sub_overflow(a, b, out);
}
inline bool checked_mul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// The number of elements of |shape|: false if a dimension is negative or the
// product of its nonzero dimensions leaves int64_t. A zero dimension makes the
// count 0, but the other dimensions must still multiply within 64 bits: a
// kernel may multiply any of them (the extents of the dimensions it keeps or
// reduces) before it sees that there is nothing to do. |out_extents|, when
// given, receives that product of the nonzero dimensions.
inline bool element_count(const int64_t* shape, int ndim, int64_t* out,
                          int64_t* out_extents = nullptr) {
  int64_t extents = 1;
  bool zero = false;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) return false;
    if (shape[i] == 0) {
      zero = true;
      continue;
    }
    if (!checked_mul(extents, shape[i], &extents)) return false;
  }
  *out = zero ? 0 : extents;
  if (out_extents != nullptr) *out_extents = extents;
  return true;
}

// Row-major strides of |shape| (in elements) into |out|. A step that would
// wrap becomes 0; that happens only beside a zero dimension, where the tensor
// has no elements and its strides are never followed.
inline void row_major_strides(const int64_t* shape, int ndim, int64_t* out) {
  int64_t step = 1;
  for (int i = ndim; i-- > 0;) {
    out[i] = step;
    if (!checked_mul(step, shape[i], &step)) step = 0;
  }
}

// The elements a strided tensor reaches, relative to its element 0:
// [low, high] with low <= 0 <= high (negative strides reach below element 0).
// |empty| when a dimension is 0: the tensor reaches nothing.
struct Span {
  bool empty = false;
  int64_t low = 0;
  int64_t high = 0;
};

// Computes |shape|/|strides|'s span in elements: false if a dimension is
// negative or any step of the arithmetic leaves int64_t.
inline bool element_span(const int64_t* shape, const int64_t* strides, int ndim, Span* out) {
  Span span;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) return false;
    if (shape[i] == 0) span.empty = true;
  }
  if (span.empty) {
    *out = span;
    return true;
  }
  for (int i = 0; i < ndim; ++i) {
    int64_t reach = 0;
    if (!checked_mul(shape[i] - 1, strides[i], &reach)) return false;
    if (!checked_add(reach < 0 ? span.low : span.high, reach, reach < 0 ? &span.low : &span.high))
      return false;
  }
  // high - low + 1 elements must be countable too.
  int64_t count = 0;
  if (!checked_sub(span.high, span.low, &count) || !checked_add(count, int64_t(1), &count)) {
    return false;
  }
  *out = span;
  return true;
}

// The bytes a span of |element_size|-byte elements covers, from its lowest to
// past its highest element ((high - low + 1) * element_size), and the bytes
// before element 0 (-low * element_size): false if either leaves int64_t.
inline bool span_bytes(const Span& span, uint64_t element_size, uint64_t* out_bytes,
                       uint64_t* out_before) {
  if (span.empty) {
    *out_bytes = 0;
    *out_before = 0;
    return true;
  }
  int64_t size = int64_t(element_size);
  if (size < 0) return false;
  int64_t bytes = 0;
  int64_t before = 0;
  if (!checked_mul(span.high - span.low + 1, size, &bytes)) return false;
  if (!checked_mul(-span.low, size, &before)) return false;
  *out_bytes = uint64_t(bytes);
  *out_before = uint64_t(before);
  return true;
}

}  // namespace oar::util
