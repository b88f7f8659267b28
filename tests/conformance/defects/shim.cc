// The loader half of every defect variant: see shim.h.
#include "shim.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

// Compiled once per real plugin and linked into each of its variants, so the
// variant's name is not known here at build time: own_name() reads it from the
// library's file, liboar_plugin_<name>.so (oar_add_plugin names it so).
#if !defined(OAR_DEFECT_REAL_PLUGIN)
#error "build with OAR_DEFECT_REAL_PLUGIN defined (the real plugin's library)"
#endif

namespace oar_defect {

const oar_plugin_api_t* real = nullptr;

namespace {

oar_plugin_api_t g_table{};  // ours: a copy of the real table with slots replaced
std::once_flag g_once;
std::string g_name;  // the variant's plugin name, from its library's file name

// "cpu_defect_x" for .../liboar_plugin_cpu_defect_x.so; empty if unknown.
std::string own_name() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&g_table), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  std::string file = info.dli_fname;
  file = file.substr(file.find_last_of('/') + 1);
  const std::string prefix = "liboar_plugin_", suffix = ".so";
  if (file.size() <= prefix.size() + suffix.size() || file.compare(0, prefix.size(), prefix) != 0 ||
      file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return "";
  }
  return file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
}

// Kernels wrapped so far. Kept until this library is unloaded: a few bytes per
// kernel each time a runtime loads us. A deque: elements never move.
std::mutex g_kernels_mutex;
std::deque<RealKernel> g_kernels;
KernelFilter g_affected = nullptr;
oar_kernel_fn g_replacement = nullptr;

// Our registrar: forwards every registration to the core's, with the affected
// kernels' fn replaced.
oar_status_t register_kernel(void* context, const oar_kernel_def_t* def) {
  const auto* core = static_cast<const oar_kernel_registrar_t*>(context);
  if (def == nullptr || def->fn == nullptr || def->op_name == nullptr || def->dtypes == nullptr) {
    return core->register_kernel(core->context, def);
  }
  RealKernel kernel;
  kernel.op = def->op_name;
  kernel.dtypes.assign(def->dtypes, def->dtypes + def->num_inputs + def->num_outputs);
  kernel.num_inputs = def->num_inputs;
  kernel.num_outputs = def->num_outputs;
  kernel.flags = def->flags;
  kernel.fn = def->fn;
  kernel.user_data = def->user_data;
  if (!g_affected(kernel)) return core->register_kernel(core->context, def);
  oar_kernel_def_t copy{};
  std::memcpy(&copy, def, def->struct_size < sizeof copy ? def->struct_size : sizeof copy);
  copy.fn = g_replacement;
  {
    std::lock_guard<std::mutex> lock(g_kernels_mutex);
    g_kernels.push_back(std::move(kernel));
    copy.user_data = &g_kernels.back();
  }
  return core->register_kernel(core->context, &copy);
}

oar_status_t wrapped_register_kernels(const oar_kernel_registrar_t* registrar) {
  if (registrar == nullptr) return real->register_kernels(registrar);
  oar_kernel_registrar_t ours{};
  ours.struct_size = OAR_KERNEL_REGISTRAR_STRUCT_SIZE;
  ours.context = const_cast<oar_kernel_registrar_t*>(registrar);
  ours.register_kernel = register_kernel;
  return real->register_kernels(&ours);
}

void load_real(uint32_t host_abi_major, uint32_t host_abi_minor) {
  g_name = own_name();
  if (g_name.empty()) {
    std::fprintf(stderr, "defect shim: its library is not named liboar_plugin_<name>.so\n");
    return;
  }
  const char* name = g_name.c_str();
  void* library = dlopen(OAR_DEFECT_REAL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "%s: cannot load the real plugin: %s\n", name, dlerror());
    return;
  }
  auto query = reinterpret_cast<oar_plugin_query_fn>(dlsym(library, OAR_PLUGIN_ENTRY_SYMBOL));
  const oar_plugin_api_t* table =
      query != nullptr ? query(host_abi_major, host_abi_minor) : nullptr;
  if (table == nullptr || table->struct_size < OAR_PLUGIN_API_HEADER_SIZE) {
    std::fprintf(stderr, "%s: the real plugin %s has no usable table\n", name,
                 OAR_DEFECT_REAL_PLUGIN);
    dlclose(library);
    return;
  }
  size_t size = table->struct_size < sizeof g_table ? table->struct_size : sizeof g_table;
  std::memcpy(&g_table, table, size);
  g_table.struct_size = size;
  g_table.name = name;
  real = table;
  install(g_table);
  // The real plugin stays loaded until the process exits: our table points
  // into it, and the process may load and query us again.
}

}  // namespace

void wrap_kernels(oar_plugin_api_t& table, KernelFilter affected, oar_kernel_fn replacement) {
  g_affected = affected;
  g_replacement = replacement;
  table.register_kernels = wrapped_register_kernels;
}

const RealKernel& real_kernel(const oar_kernel_call_t* call) {
  return *static_cast<const RealKernel*>(call->user_data);
}

oar_status_t call_real(const oar_kernel_call_t* call, const oar_kernel_call_t& copy) {
  const RealKernel& kernel = real_kernel(call);
  oar_kernel_call_t forwarded = copy;
  forwarded.user_data = kernel.user_data;
  return kernel.fn(&forwarded);
}

bool is_f32(const DLDataType& type) {
  return type.code == kDLFloat && type.bits == 32 && type.lanes == 1;
}

bool all_dtypes(const RealKernel& kernel, uint8_t code, uint8_t bits) {
  for (const DLDataType& type : kernel.dtypes) {
    if (type.code != code || type.bits != bits) return false;
  }
  return true;
}

}  // namespace oar_defect

extern "C" __attribute__((visibility("default"))) const oar_plugin_api_t* oar_plugin_query(
    uint32_t host_abi_major, uint32_t host_abi_minor) {
  std::call_once(oar_defect::g_once, oar_defect::load_real, host_abi_major, host_abi_minor);
  return oar_defect::real != nullptr ? &oar_defect::g_table : nullptr;
}
