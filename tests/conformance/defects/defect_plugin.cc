// A test-only plugin that is the cpu plugin with one defect injected: it
// dlopens the real cpu plugin (OAR_DEFECT_REAL_PLUGIN, baked in at build time),
// copies its table, renames it OAR_DEFECT_PLUGIN_NAME and replaces ONE slot with
// a wrapper that breaks the contract in the way OAR_DEFECT selects; every other
// slot is the real plugin's. oar-conform must refuse to certify each variant.
//
//   KERNEL_OFF       register_kernels: f32 mul/add results are off by a relative
//                    1e-3 on every 7th element of output 0.
//   COPY_NO_WAIT     memory_copy_h2d: copies at once on the calling thread,
//                    ignoring the work queued on the stream before it.
//   EVENT_EARLY      event_query: reports every event done.
//   IGNORES_STRIDES  register_kernels: kernels that declare strided inputs (copy)
//                    see their inputs with contiguous row-major strides.
//   LEAK             memory_free: frees nothing.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "oar/plugin.h"

#define OAR_DEFECT_KERNEL_OFF 1
#define OAR_DEFECT_COPY_NO_WAIT 2
#define OAR_DEFECT_EVENT_EARLY 3
#define OAR_DEFECT_IGNORES_STRIDES 4
#define OAR_DEFECT_LEAK 5

#if !defined(OAR_DEFECT) || !defined(OAR_DEFECT_PLUGIN_NAME) || !defined(OAR_DEFECT_REAL_PLUGIN)
#error "build with OAR_DEFECT, OAR_DEFECT_PLUGIN_NAME and OAR_DEFECT_REAL_PLUGIN defined"
#endif

namespace {

const oar_plugin_api_t* g_real = nullptr;  // the real cpu plugin's table
oar_plugin_api_t g_table{};                // ours: a copy with one slot replaced
std::once_flag g_once;

#if OAR_DEFECT == OAR_DEFECT_KERNEL_OFF || OAR_DEFECT == OAR_DEFECT_IGNORES_STRIDES

// What a wrapped kernel needs to reach the real one. Kept until this library is
// unloaded: a few bytes per kernel each time a runtime loads us, and no slot
// besides the defect's needs replacing to clean them up.
struct WrappedKernel {
  oar_kernel_fn fn;
  void* user_data;
};
std::mutex g_kernels_mutex;
std::deque<WrappedKernel> g_kernels;  // a deque: elements never move

WrappedKernel* wrap(const oar_kernel_def_t& def) {
  std::lock_guard<std::mutex> lock(g_kernels_mutex);
  g_kernels.push_back({def.fn, def.user_data});
  return &g_kernels.back();
}

// Calls the real kernel with |call| as it would have been called without us.
oar_status_t call_real(const oar_kernel_call_t* call, oar_kernel_call_t* copy) {
  const auto* wrapped = static_cast<const WrappedKernel*>(call->user_data);
  copy->user_data = wrapped->user_data;
  return wrapped->fn(copy);
}

#endif

#if OAR_DEFECT == OAR_DEFECT_KERNEL_OFF

bool is_f32(const DLDataType& type) {
  return type.code == kDLFloat && type.bits == 32 && type.lanes == 1;
}

// Whether the defect applies to |def|: f32 mul and add.
bool affected(const oar_kernel_def_t& def) {
  if (def.op_name == nullptr || def.dtypes == nullptr) return false;
  if (std::strcmp(def.op_name, "mul") != 0 && std::strcmp(def.op_name, "add") != 0) return false;
  for (size_t i = 0; i < def.num_inputs + def.num_outputs; ++i) {
    if (!is_f32(def.dtypes[i])) return false;
  }
  return true;
}

// Output 0 as the stream-ordered callback sees it: the call record dies with
// the call, so its address, shape and strides are copied.
struct Perturbation {
  char* base;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

void perturb(void* user_data, oar_status_t status) {
  auto* p = static_cast<Perturbation*>(user_data);
  if (status == OAR_STATUS_OK) {
    size_t ndim = p->shape.size();
    int64_t count = 1;
    for (int64_t extent : p->shape) count *= extent;
    std::vector<int64_t> index(ndim, 0);
    for (int64_t linear = 0; linear < count; ++linear) {
      if (linear % 7 == 0) {
        int64_t offset = 0;
        for (size_t d = 0; d < ndim; ++d) offset += index[d] * p->strides[d];
        float* element = reinterpret_cast<float*>(p->base) + offset;
        *element *= 1.0f + 1e-3f;
      }
      for (size_t d = ndim; d-- > 0;) {  // row-major increment
        if (++index[d] < p->shape[d]) break;
        index[d] = 0;
      }
    }
  }
  delete p;
}

oar_status_t off_kernel(const oar_kernel_call_t* call) {
  oar_kernel_call_t copy = *call;
  oar_status_t status = call_real(call, &copy);
  if (status != OAR_STATUS_OK || call->num_outputs == 0) return status;
  const DLTensor& out = call->outputs[0];
  if (out.dtype.code != kDLFloat || out.dtype.bits != 32) return status;
  auto* p = new Perturbation;
  // cpu memory handles are host pointers.
  p->base = static_cast<char*>(out.data) + out.byte_offset;
  p->shape.assign(out.shape, out.shape + out.ndim);
  if (out.strides != nullptr) {
    p->strides.assign(out.strides, out.strides + out.ndim);
  } else {
    p->strides.assign(out.ndim, 1);
    for (int d = out.ndim - 1; d > 0; --d) p->strides[d - 1] = p->strides[d] * out.shape[d];
  }
  if (g_real->stream_add_host_callback != nullptr) {
    oar_status_t queued = g_real->stream_add_host_callback(call->stream, perturb, p);
    if (queued != OAR_STATUS_OK) delete p;
    return queued;
  }
  status = g_real->stream_synchronize(call->stream);
  perturb(p, status);
  return status;
}

#elif OAR_DEFECT == OAR_DEFECT_IGNORES_STRIDES

bool affected(const oar_kernel_def_t& def) {
  return (def.flags & OAR_KERNEL_FLAG_STRIDED_INPUTS) != 0;
}

oar_status_t off_kernel(const oar_kernel_call_t* call) {
  oar_kernel_call_t copy = *call;
  std::vector<DLTensor> inputs(call->inputs, call->inputs + call->num_inputs);
  std::vector<std::vector<int64_t> > strides(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    DLTensor& input = inputs[i];
    strides[i].assign(input.ndim > 0 ? input.ndim : 1, 1);  // never NULL, even for 0-d
    for (int d = input.ndim - 1; d > 0; --d) strides[i][d - 1] = strides[i][d] * input.shape[d];
    input.strides = strides[i].data();
  }
  copy.inputs = inputs.data();
  return call_real(call, &copy);
}

#endif

#if OAR_DEFECT == OAR_DEFECT_KERNEL_OFF || OAR_DEFECT == OAR_DEFECT_IGNORES_STRIDES

// Our registrar: forwards every registration to the core's, with the affected
// kernels' fn replaced.
oar_status_t register_kernel(void* context, const oar_kernel_def_t* def) {
  const auto* core = static_cast<const oar_kernel_registrar_t*>(context);
  if (def == nullptr || def->fn == nullptr || !affected(*def)) {
    return core->register_kernel(core->context, def);
  }
  oar_kernel_def_t copy{};
  std::memcpy(&copy, def, def->struct_size < sizeof copy ? def->struct_size : sizeof copy);
  copy.fn = off_kernel;
  copy.user_data = wrap(*def);
  return core->register_kernel(core->context, &copy);
}

oar_status_t defect_register_kernels(const oar_kernel_registrar_t* registrar) {
  if (registrar == nullptr) return g_real->register_kernels(registrar);
  oar_kernel_registrar_t ours{};
  ours.struct_size = OAR_KERNEL_REGISTRAR_STRUCT_SIZE;
  ours.context = const_cast<oar_kernel_registrar_t*>(registrar);
  ours.register_kernel = register_kernel;
  return g_real->register_kernels(&ours);
}

void install_defect() { g_table.register_kernels = defect_register_kernels; }

#elif OAR_DEFECT == OAR_DEFECT_COPY_NO_WAIT

oar_status_t defect_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                             const void* src, uint64_t size) {
  // A range whose end overflows: the real plugin refuses it (and explains).
  if (dst_offset + size < dst_offset) {
    return g_real->memory_copy_h2d(stream, dst, dst_offset, src, size);
  }
  // The real plugin checks the arguments and the range (the end of the range
  // as an empty copy, which queues nothing), so that only the ordering breaks.
  oar_status_t status = g_real->memory_copy_h2d(stream, dst, dst_offset + size, src, 0);
  if (status != OAR_STATUS_OK) return status;
  if (size == 0) return OAR_STATUS_OK;
  if (src == nullptr) return g_real->memory_copy_h2d(stream, dst, dst_offset, src, size);
  // cpu memory handles are host pointers. No wait for the stream: the defect.
  std::memcpy(reinterpret_cast<char*>(dst) + dst_offset, src, size);
  return OAR_STATUS_OK;
}

void install_defect() { g_table.memory_copy_h2d = defect_copy_h2d; }

#elif OAR_DEFECT == OAR_DEFECT_EVENT_EARLY

oar_status_t defect_event_query(oar_event_t event, bool* out_done) {
  if (event == nullptr || out_done == nullptr) return g_real->event_query(event, out_done);
  *out_done = true;  // whatever the event's work: the defect
  return OAR_STATUS_OK;
}

void install_defect() { g_table.event_query = defect_event_query; }

#elif OAR_DEFECT == OAR_DEFECT_LEAK

oar_status_t defect_memory_free(oar_device_t, oar_memory_t) {
  return OAR_STATUS_OK;  // frees nothing: the defect
}

void install_defect() { g_table.memory_free = defect_memory_free; }

#else
#error "unknown OAR_DEFECT"
#endif

void load_real(uint32_t host_abi_major, uint32_t host_abi_minor) {
  void* library = dlopen(OAR_DEFECT_REAL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "%s: cannot load the real plugin: %s\n", OAR_DEFECT_PLUGIN_NAME,
                 dlerror());
    return;
  }
  auto query = reinterpret_cast<oar_plugin_query_fn>(dlsym(library, OAR_PLUGIN_ENTRY_SYMBOL));
  const oar_plugin_api_t* real = query != nullptr ? query(host_abi_major, host_abi_minor) : nullptr;
  if (real == nullptr || real->struct_size < OAR_PLUGIN_API_HEADER_SIZE) {
    std::fprintf(stderr, "%s: the real plugin %s has no usable table\n", OAR_DEFECT_PLUGIN_NAME,
                 OAR_DEFECT_REAL_PLUGIN);
    dlclose(library);
    return;
  }
  size_t size = real->struct_size < sizeof g_table ? real->struct_size : sizeof g_table;
  std::memcpy(&g_table, real, size);
  g_table.struct_size = size;
  g_table.name = OAR_DEFECT_PLUGIN_NAME;
  g_real = real;
  install_defect();
  // The real plugin stays loaded until the process exits: our table points
  // into it, and the process may load and query us again.
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const oar_plugin_api_t* oar_plugin_query(
    uint32_t host_abi_major, uint32_t host_abi_minor) {
  std::call_once(g_once, load_real, host_abi_major, host_abi_minor);
  return g_real != nullptr ? &g_table : nullptr;
}
