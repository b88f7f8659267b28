// sort (i32) descending as the reverse of the stable ascending sort: the
// values are right, but equal values come out in decreasing index order,
// where docs/ops.md says ties keep their index order in both directions.
// Rows along the last axis have the defect; others go to the real kernel.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "sort" && is_code(kernel.dtypes[0], kDLInt, 32);
}

oar_status_t reversed_kernel(const oar_kernel_call_t* call) {
  const HostView x = host_view(call->inputs[0]), v = host_view(call->outputs[0]);
  const HostView ind = host_view(call->outputs[1]);
  const int64_t axis = int_attr(call, "axis", -1);
  if (x.shape.empty() || (axis != -1 && axis != int64_t(x.shape.size()) - 1) ||
      !bool_attr(call, "descending", false)) {
    return call_real(call);
  }
  return in_stream_order(call, [x, v, ind] {
    const int64_t len = x.shape.back();
    const auto* px = reinterpret_cast<const int32_t*>(x.data);
    auto* pv = reinterpret_cast<int32_t*>(v.data);
    auto* pi = reinterpret_cast<int64_t*>(ind.data);
    for (int64_t base = 0; base < x.numel(); base += len) {
      std::vector<int64_t> idx(static_cast<size_t>(len));
      for (int64_t i = 0; i < len; ++i) idx[size_t(i)] = i;
      std::stable_sort(idx.begin(), idx.end(),
                       [&](int64_t a, int64_t b) { return px[base + a] < px[base + b]; });
      std::reverse(idx.begin(), idx.end());
      for (int64_t i = 0; i < len; ++i) {
        pv[base + i] = px[base + idx[size_t(i)]];
        pi[base + i] = idx[size_t(i)];
      }
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, reversed_kernel); }

}  // namespace oar_defect
