// What the scatter defect variants share: scatter/scatter_add of f32 done on
// the host in stream order, with one of the mistakes a vendor makes when
// repeated indices meet. Inputs are contiguous (the core stages strided ones);
// cpu memory handles are host pointers.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_memory.h"

namespace oar_defect {

enum class ScatterMistake {
  kFirstWins,     // scatter: positions applied in reverse order
  kAddToOriginal  // scatter_add: each position adds to x's value, the last wins
};

inline oar_status_t host_scatter(const oar_kernel_call_t* call, ScatterMistake mistake) {
  const DLTensor &x = call->inputs[0], &index = call->inputs[1], &src = call->inputs[2];
  const DLTensor& y = call->outputs[0];
  int64_t axis = 0;
  for (size_t i = 0; i < call->num_attrs; ++i) {
    if (std::strcmp(call->attrs[i].name, "axis") == 0) axis = call->attrs[i].value.i;
  }
  if (axis < 0) axis += y.ndim;
  const std::vector<int64_t> shape(index.shape, index.shape + index.ndim);
  const std::vector<int64_t> y_shape(y.shape, y.shape + y.ndim);
  const bool i32 = index.dtype.bits == 32;
  const auto* xs = reinterpret_cast<const float*>(host_address(x));
  const char* is = host_address(index);
  const auto* ss = reinterpret_cast<const float*>(host_address(src));
  auto* ys = reinterpret_cast<float*>(host_address(y));
  const int64_t n = numel(index), total = numel(y);
  return in_stream_order(call->stream, [=](oar_status_t s) {
    if (s != OAR_STATUS_OK) return;
    std::memcpy(ys, xs, size_t(total) * sizeof(float));
    for (int64_t step = 0; step < n; ++step) {
      const int64_t i = mistake == ScatterMistake::kFirstWins ? n - 1 - step : step;
      int64_t rest = i, q = 0, scale = 1;
      for (int d = int(shape.size()) - 1; d >= 0; --d) {
        int64_t c = rest % shape[size_t(d)];
        rest /= shape[size_t(d)];
        if (d == axis) {
          c = i32 ? reinterpret_cast<const int32_t*>(is)[i]
                  : reinterpret_cast<const int64_t*>(is)[i];
        }
        q += c * scale;
        scale *= y_shape[size_t(d)];
      }
      if (q < 0 || q >= total) continue;  // the real kernel fails such calls; not this defect
      ys[q] = mistake == ScatterMistake::kFirstWins ? ss[i] : xs[q] + ss[i];
    }
  });
}

}  // namespace oar_defect
