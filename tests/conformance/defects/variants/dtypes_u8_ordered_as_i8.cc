// u8 comparisons, maximum and minimum reuse the i8 kernel: the bytes are
// ordered as signed, so 200 < 100 (a vendor that writes one "8-bit" kernel
// and registers it for both dtypes). docs/ops.md: u8 orders as unsigned.
// Modelled on the cpu plugin by handing the real kernel the same tensors
// labelled i8.
#include <cstdint>
#include <vector>

#include "../shim.h"

namespace oar_defect {
namespace {

bool is_u8(const DLDataType& t) { return t.code == kDLUInt && t.bits == 8 && t.lanes == 1; }

bool ordered_u8(const RealKernel& kernel) {
  const std::string& op = kernel.op;
  return is_u8(kernel.dtypes[0]) && (op == "lt" || op == "le" || op == "gt" || op == "ge" ||
                                     op == "maximum" || op == "minimum");
}

oar_status_t kernel(const oar_kernel_call_t* call) {
  std::vector<DLTensor> inputs(call->inputs, call->inputs + call->num_inputs);
  std::vector<DLTensor> outputs(call->outputs, call->outputs + call->num_outputs);
  for (DLTensor& t : inputs) {
    if (is_u8(t.dtype)) t.dtype = DLDataType{kDLInt, 8, 1};
  }
  for (DLTensor& t : outputs) {
    if (is_u8(t.dtype)) t.dtype = DLDataType{kDLInt, 8, 1};
  }
  oar_kernel_call_t copy = *call;
  copy.inputs = inputs.data();
  copy.outputs = outputs.data();
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, ordered_u8, kernel); }

}  // namespace oar_defect
