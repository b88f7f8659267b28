// A cpu plugin that registers no kernel for the operators with a
// decomposition (softmax, gelu, layer_norm, ...): what a vendor's first
// bring-up looks like. Built on the conformance defect shim (it loads the real
// cpu plugin and copies its table); its register_kernels forwards every
// registration except those.
#include <cstring>

#include "tests/conformance/defects/shim.h"

namespace oar_defect {
namespace {

const char* const kDropped[] = {"softmax",
                                "log_softmax",
                                "gelu",
                                "silu",
                                "sigmoid",
                                "relu",
                                "mean",
                                "layer_norm",
                                "rms_norm",
                                "batch_norm",
                                "cross_entropy",
                                "scaled_dot_product_attention",
                                "conv2d",
                                "max_pool2d",
                                "avg_pool2d",
                                "reciprocal",
                                "rsqrt",
                                "gt",
                                "ge",
                                "ne",
                                "embedding",
                                "index_select",
                                "logical_not",
                                "logical_and",
                                "logical_or",
                                "logical_xor",
                                "bitwise_not",
                                "clip",
                                "pad",
                                "flip",
                                "tril",
                                "triu",
                                "expand",
                                "one_hot",
                                "logsumexp",
                                "sort",
                                "topk",
                                "rotary_embedding",
                                "matmul_w8",
                                "fmod",
                                "remainder",
                                "relu_grad",
                                "sigmoid_grad",
                                "tanh_grad",
                                "silu_grad",
                                "gelu_grad",
                                "softmax_grad",
                                "log_softmax_grad",
                                "embedding_grad",
                                "cross_entropy_grad",
                                "rotary_embedding_grad",
                                "layer_norm_grad",
                                "rms_norm_grad",
                                "max_pool2d_grad",
                                "avg_pool2d_grad",
                                "conv2d_grad_input",
                                "conv2d_grad_weight",
                                "scaled_dot_product_attention_grad",
                                "sgd",
                                "adam",
                                "adamw",
                                "grad_norm",
                                "clip_grad_norm"};

bool dropped(const char* op) {
  for (const char* name : kDropped) {
    if (std::strcmp(name, op) == 0) return true;
  }
  return false;
}

oar_status_t register_kernel(void* context, const oar_kernel_def_t* def) {
  const auto* core = static_cast<const oar_kernel_registrar_t*>(context);
  if (def != nullptr && def->op_name != nullptr && dropped(def->op_name)) return OAR_STATUS_OK;
  return core->register_kernel(core->context, def);
}

oar_status_t register_kernels(const oar_kernel_registrar_t* registrar) {
  if (registrar == nullptr) return real->register_kernels(registrar);
  oar_kernel_registrar_t ours{};
  ours.struct_size = OAR_KERNEL_REGISTRAR_STRUCT_SIZE;
  ours.context = const_cast<oar_kernel_registrar_t*>(registrar);
  ours.register_kernel = register_kernel;
  return real->register_kernels(&ours);
}

}  // namespace

void install(oar_plugin_api_t& table) { table.register_kernels = register_kernels; }

}  // namespace oar_defect
