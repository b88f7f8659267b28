#include "kernels/kernel.h"

#include <memory>
#include <mutex>

namespace oar::cpu {
namespace {

// What register_op stores as a kernel's user_data; lives as long as the plugin.
struct Entry {
  KernelBody body;
  const ops::OpSchema* schema;
  AllocationTable* table;
};

std::vector<std::unique_ptr<Entry>>& entries() {
  static std::vector<std::unique_ptr<Entry>> all;
  return all;
}

oar_status_t run_kernel(const oar_kernel_call_t* call) {
  return oar::sdk::guard([call] {
    require_not_null(call, "kernel call");
    const auto* entry = static_cast<const Entry*>(call->user_data);
    require_not_null(entry, "kernel call user_data");
    KernelContext context{
        call, *entry->schema, ops::Attrs(*entry->schema, call->attrs, call->num_attrs), {}, {}};
    for (size_t i = 0; i < call->num_inputs; ++i) {
      context.inputs.push_back(view_of(*entry->table, call->inputs[i], "input"));
    }
    for (size_t i = 0; i < call->num_outputs; ++i) {
      context.outputs.push_back(view_of(*entry->table, call->outputs[i], "output"));
    }
    entry->body(context);
  });
}

}  // namespace

View view_of(const AllocationTable& table, const DLTensor& t, const char* what) {
  table.check_tensor(t, what);
  return oar::sdk::view_of(t);
}

// The bytes a kernel's tensors hold: its work estimate for running inline.
uint64_t tensor_bytes(const DLTensor* tensors, size_t count) {
  uint64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    uint64_t n = (tensors[i].dtype.bits * uint64_t{tensors[i].dtype.lanes} + 7) / 8;
    for (int32_t d = 0; d < tensors[i].ndim; ++d) n *= static_cast<uint64_t>(tensors[i].shape[d]);
    total += n;
  }
  return total;
}

void launch(const oar_kernel_call_t* call, std::function<void()> work) {
  uint64_t bytes =
      tensor_bytes(call->inputs, call->num_inputs) + tensor_bytes(call->outputs, call->num_outputs);
  call->stream->queue->submit(std::move(work), {oar::sdk::TaskInfo::kKernel, bytes});
}

void register_op(const oar::sdk::KernelRegistrar& registrar, const char* op, KernelBody body,
                 const std::vector<std::vector<DLDataType>>& signatures, uint32_t flags,
                 AllocationTable* table) {
  const ops::OpSchema& schema = oar::sdk::schema_of(op, "cpu");
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  entries().push_back(std::make_unique<Entry>(Entry{body, &schema, table}));
  oar::sdk::register_signatures(registrar, schema, signatures, &run_kernel, flags,
                                entries().back().get());
}

}  // namespace oar::cpu
