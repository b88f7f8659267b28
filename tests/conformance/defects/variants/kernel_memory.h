// What the ops-execution variants (ops_execution.cmake) share: the host bytes
// of a kernel's tensors (cpu memory handles are host pointers) and work
// queued in stream order as a host callback.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>

#include "../shim.h"

namespace oar_defect {

inline int64_t numel(const DLTensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

inline size_t element_size(const DLTensor& t) { return size_t(t.dtype.bits / 8); }

// The host address of element 0.
inline char* host_address(const DLTensor& t) { return static_cast<char*>(t.data) + t.byte_offset; }

// Row-major with no gaps (strides are never NULL in a call record).
inline bool contiguous(const DLTensor& t) {
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

// Bytes from element 0 to the end of the last element (strides >= 0).
inline uint64_t span_bytes(const DLTensor& t) {
  if (numel(t) == 0) return 0;
  int64_t last = 0;
  for (int d = 0; d < t.ndim; ++d) last += (t.shape[d] - 1) * t.strides[d];
  return uint64_t(last + 1) * element_size(t);
}

// Runs |work| on a plugin thread once the work queued on |stream| so far is
// done, with OK or the stream's error.
inline oar_status_t in_stream_order(oar_stream_t stream, std::function<void(oar_status_t)> work) {
  auto* heap = new std::function<void(oar_status_t)>(std::move(work));
  oar_status_t status = real->stream_add_host_callback(
      stream,
      [](void* user_data, oar_status_t s) {
        auto* w = static_cast<std::function<void(oar_status_t)>*>(user_data);
        (*w)(s);
        delete w;
      },
      heap);
  if (status != OAR_STATUS_OK) delete heap;
  return status;
}

}  // namespace oar_defect
