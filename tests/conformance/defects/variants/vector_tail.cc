// The elementwise kernels (one output the shape of their first input) process
// whole vectors of 8 elements: the last vector is stored in full, past the end
// of the output when its size is not a multiple of 8 (a SIMD tail without a
// mask). Every result is right; sizes that are multiples of 8 are untouched.
#include <vector>

#include "kernel_memory.h"

namespace oar_defect {
namespace {

constexpr int64_t kLanes = 8;

bool affected(const RealKernel& kernel) {
  for (const char* op :
       {"neg",        "abs",     "exp",  "log",  "sqrt", "rsqrt",   "sin",     "cos",
        "tanh",       "sigmoid", "relu", "gelu", "silu", "erf",     "floor",   "ceil",
        "reciprocal", "add",     "sub",  "mul",  "div",  "maximum", "minimum", "pow",
        "eq",         "ne",      "lt",   "le",   "gt",   "ge",      "where",   "cast"}) {
    if (kernel.op == op) return true;
  }
  return false;
}

oar_status_t vector_kernel(const oar_kernel_call_t* call) {
  oar_status_t status = call_real(call);
  const DLTensor& out = call->outputs[0];
  const int64_t n = numel(out);
  if (status != OAR_STATUS_OK || n == 0 || !contiguous(out)) return status;
  const size_t size = element_size(out);
  char* base = host_address(out);
  const int64_t padded = (n + kLanes - 1) / kLanes * kLanes;
  return in_stream_order(call->stream, [base, size, n, padded](oar_status_t s) {
    if (s != OAR_STATUS_OK) return;
    for (int64_t i = n; i < padded; ++i) {  // the defect: lanes past the end
      std::memcpy(base + i * int64_t(size), base + (n - 1) * int64_t(size), size);
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, vector_kernel); }

}  // namespace oar_defect
