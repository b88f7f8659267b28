// OAR plugin SDK: write a plugin as a C++ class and export the C table with one
// macro.
//
//   struct oar_stream_s { ... };           // the plugin defines its handles
//   class MyPlugin {
//    public:
//     MyPlugin();                           // initialize: may throw oar::sdk::Error
//     void device_count(int32_t* out_count);
//     void stream_create(oar_device_t, const oar_stream_desc_t*, oar_stream_t* out);
//     ...                                   // one member per slot, named as the slot
//   };
//   OAR_PLUGIN_DEFINE(MyPlugin, "my", "1.0.0", "My Chips Inc.")
//
// A member function named like a slot of oar_plugin_api_t fills that slot; a
// slot without a member stays NULL ("unsupported"). Members take the slot's
// parameters and return void (success) or oar_status_t; they report failures
// by throwing oar::sdk::Error, which the SDK turns into the status code plus a
// report_error message. No exception ever crosses the C ABI.
#pragma once

#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "oar/oar.h"

namespace oar::sdk {

// A failure a plugin member throws; becomes its status code and message.
class Error : public std::exception {
 public:
  Error(oar_status_t code, std::string message) : code_(code), message_(std::move(message)) {}
  oar_status_t code() const { return code_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  oar_status_t code_;
  std::string message_;
};

// Throws Error(code, message) unless |condition| holds.
inline void require(bool condition, oar_status_t code, const std::string& message) {
  if (!condition) throw Error(code, message);
}

// Throws INVALID_ARGUMENT naming |what| if |pointer| is NULL: any pointer,
// function pointers (callbacks) and smart pointers included. The message is
// built only on failure: plugins call this on every operation.
template <typename Pointer>
inline void require_not_null(const Pointer& pointer, const char* what) {
  if (pointer == nullptr) throw Error(OAR_STATUS_INVALID_ARGUMENT, std::string(what) + " is NULL");
}

// stream_create's checks of |desc| (NULL is allowed: defaults): a struct_size
// of at least ABI 1.0's and reserved flags left 0. The priority is a hint.
inline void check_stream_desc(const oar_stream_desc_t* desc) {
  if (desc == nullptr) return;
  require(desc->struct_size >= OAR_STREAM_DESC_STRUCT_SIZE, OAR_STATUS_INVALID_ARGUMENT,
          "oar_stream_desc_t.struct_size is smaller than ABI 1.0's");
  require(desc->flags == 0, OAR_STATUS_INVALID_ARGUMENT,
          "oar_stream_desc_t.flags is reserved and must be 0");
}

// event_create's checks of |flags|: only OAR_EVENT_FLAG_TIMING is defined
// (INVALID_ARGUMENT), and a timing event needs a device that can time
// (UNIMPLEMENTED; |why_not| says what it lacks).
inline void check_event_flags(uint32_t flags, bool timing_supported, const char* why_not = "") {
  require((flags & ~uint32_t(OAR_EVENT_FLAG_TIMING)) == 0, OAR_STATUS_INVALID_ARGUMENT,
          "event_create: unknown flags in " + std::to_string(flags) +
              " (only OAR_EVENT_FLAG_TIMING is defined)");
  require((flags & OAR_EVENT_FLAG_TIMING) == 0 || timing_supported, OAR_STATUS_UNIMPLEMENTED,
          std::string("event_create: OAR_EVENT_FLAG_TIMING is not supported: ") + why_not);
}

// The host services of this plugin (one per shared library: hidden visibility).
inline const oar_host_services_t*& host_services() {
  static const oar_host_services_t* host = nullptr;
  return host;
}

inline void report_error(oar_status_t code, const char* message) {
  const oar_host_services_t* host = host_services();
  if (host != nullptr && host->report_error != nullptr)
    host->report_error(host->context, code, message);
}

inline void log(oar_log_level_e level, const std::string& message) {
  const oar_host_services_t* host = host_services();
  if (host != nullptr && host->log != nullptr) host->log(host->context, level, message.c_str());
}

// Runs |body| and turns any exception into a status plus a reported message.
template <typename Body>
oar_status_t guard(Body&& body) noexcept {
  try {
    if constexpr (std::is_same_v<decltype(body()), oar_status_t>) {
      return body();
    } else {
      body();
      return OAR_STATUS_OK;
    }
  } catch (const Error& e) {
    report_error(e.code(), e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    report_error(OAR_STATUS_RESOURCE_EXHAUSTED, "host memory exhausted (std::bad_alloc)");
    return OAR_STATUS_RESOURCE_EXHAUSTED;
  } catch (const std::exception& e) {
    report_error(OAR_STATUS_INTERNAL, e.what());
    return OAR_STATUS_INTERNAL;
  } catch (...) {
    report_error(OAR_STATUS_INTERNAL, "unknown exception in plugin");
    return OAR_STATUS_INTERNAL;
  }
}

// The size of oar_device_properties_t in ABI 1.0; later minors only append.
inline constexpr size_t kDeviceProperties10Size =
    OAR_STRUCT_SIZE(oar_device_properties_t, compute_units);

// Copies |source| into |out| honouring the caller's struct_size: a host built
// against an older minor gets the fields it knows, a newer one gets ours and
// keeps its zeroed tail.
inline void copy_properties(const oar_device_properties_t& source, oar_device_properties_t* out) {
  require(out != nullptr, OAR_STATUS_INVALID_ARGUMENT, "out_properties is NULL");
  require(out->struct_size >= kDeviceProperties10Size, OAR_STATUS_INVALID_ARGUMENT,
          "out_properties->struct_size is smaller than ABI 1.0's oar_device_properties_t");
  size_t caller_size = out->struct_size;
  std::memcpy(out, &source,
              caller_size < OAR_DEVICE_PROPERTIES_STRUCT_SIZE ? caller_size
                                                              : OAR_DEVICE_PROPERTIES_STRUCT_SIZE);
  out->struct_size = caller_size;
}

// Copies a string into a fixed-size char array, always NUL-terminated.
template <size_t N>
void copy_text(char (&out)[N], const std::string& text) {
  std::snprintf(out, N, "%s", text.c_str());
}

// Registers kernels through the core's registrar.
class KernelRegistrar {
 public:
  explicit KernelRegistrar(const oar_kernel_registrar_t* registrar) : registrar_(registrar) {}

  // Registers |fn| for |op| with the dtypes of its inputs then its outputs.
  void add(const char* op, std::initializer_list<DLDataType> input_dtypes,
           std::initializer_list<DLDataType> output_dtypes, oar_kernel_fn fn, uint32_t flags = 0,
           void* user_data = nullptr) const {
    DLDataType dtypes[16];
    size_t n = 0;
    require(input_dtypes.size() + output_dtypes.size() <= 16, OAR_STATUS_INVALID_ARGUMENT,
            std::string("too many tensors for kernel ") + op);
    for (DLDataType t : input_dtypes) dtypes[n++] = t;
    for (DLDataType t : output_dtypes) dtypes[n++] = t;
    add_signature(op, dtypes, input_dtypes.size(), output_dtypes.size(), fn, flags, user_data);
  }

  // The same with the dtypes as an array: |num_inputs| then |num_outputs|.
  void add_signature(const char* op, const DLDataType* dtypes, size_t num_inputs,
                     size_t num_outputs, oar_kernel_fn fn, uint32_t flags = 0,
                     void* user_data = nullptr) const {
    oar_kernel_def_t def{};
    def.struct_size = OAR_KERNEL_DEF_STRUCT_SIZE;
    def.op_name = op;
    def.dtypes = dtypes;
    def.num_inputs = num_inputs;
    def.num_outputs = num_outputs;
    def.flags = flags;
    def.fn = fn;
    def.user_data = user_data;
    oar_status_t status = registrar_->register_kernel(registrar_->context, &def);
    if (status != OAR_STATUS_OK) {
      throw Error(status, std::string("registering a kernel for ") + op + " failed");
    }
  }

 private:
  const oar_kernel_registrar_t* registrar_;
};

namespace detail {

// The one instance of the plugin class, alive from initialize to finalize.
template <typename Impl>
Impl*& instance() {
  static Impl* impl = nullptr;
  return impl;
}

template <typename Impl, typename Method, typename... Args>
oar_status_t call(Method method, Args... args) noexcept {
  return guard([&]() -> oar_status_t {
    Impl* impl = instance<Impl>();
    if (impl == nullptr) {
      throw Error(OAR_STATUS_FAILED_PRECONDITION, "plugin slot called before initialize");
    }
    using Returned = decltype((impl->*method)(args...));
    if constexpr (std::is_same_v<Returned, oar_status_t>) {
      return (impl->*method)(args...);
    } else {
      (impl->*method)(args...);
      return OAR_STATUS_OK;
    }
  });
}

}  // namespace detail

// Every slot a plugin class may fill, besides initialize and finalize.
// clang-format off
#define OAR_SDK_SLOTS(X) \
  X(register_kernels) X(device_count) X(device_properties) X(device_open) X(device_close)        \
  X(device_synchronize) X(device_memory_info) X(stream_create) X(stream_destroy)                 \
  X(stream_synchronize) X(stream_query) X(stream_wait_event) X(stream_add_host_callback)         \
  X(event_create) X(event_destroy) X(event_record) X(event_query) X(event_synchronize)           \
  X(event_elapsed_ms) X(memory_allocate) X(memory_free) X(memory_host_address)                   \
  X(memory_copy_h2d) X(memory_copy_d2h) X(memory_copy_d2d) X(memory_copy_peer)                   \
  X(memory_fill) X(comm_unique_id_size) X(comm_get_unique_id) X(comm_create)                     \
  X(comm_destroy) X(comm_abort) X(comm_all_reduce) X(comm_broadcast) X(comm_reduce)              \
  X(comm_all_gather) X(comm_reduce_scatter) X(comm_all_to_all) X(comm_send) X(comm_recv)         \
  X(comm_group_begin) X(comm_group_end)
// clang-format on

namespace detail {
#define OAR_SDK_DETECT(slot)              \
  template <typename T, typename = void>  \
  struct has_##slot : std::false_type {}; \
  template <typename T>                   \
  struct has_##slot<T, std::void_t<decltype(&T::slot)>> : std::true_type {};
OAR_SDK_SLOTS(OAR_SDK_DETECT)
#undef OAR_SDK_DETECT
}  // namespace detail

// The slots the core refuses to load a plugin without (docs/abi.md).
// clang-format off
#define OAR_SDK_REQUIRED_SLOTS(X) \
  X(device_count) X(device_properties) X(device_open) X(device_close) X(device_synchronize)      \
  X(stream_create) X(stream_destroy) X(stream_synchronize) X(stream_query)                       \
  X(stream_wait_event) X(event_create) X(event_destroy) X(event_record) X(event_query)           \
  X(event_synchronize) X(memory_allocate) X(memory_free) X(memory_copy_h2d)                      \
  X(memory_copy_d2h) X(memory_copy_d2d) X(memory_fill)
// clang-format on

// Builds the plugin's C table from |Impl| (see the file comment). A missing
// required member fails to compile here rather than to load later.
template <typename Impl>
const oar_plugin_api_t* plugin_api(const char* name, const char* version, const char* vendor) {
#define OAR_SDK_REQUIRE(slot)                    \
  static_assert(detail::has_##slot<Impl>::value, \
                "the plugin class lacks the required member " #slot);
  OAR_SDK_REQUIRED_SLOTS(OAR_SDK_REQUIRE)
#undef OAR_SDK_REQUIRE
  static const oar_plugin_api_t api = [&] {
    oar_plugin_api_t table{};
    table.struct_size = OAR_PLUGIN_API_STRUCT_SIZE;
    table.abi_major = OAR_ABI_MAJOR;
    table.abi_minor = OAR_ABI_MINOR;
    table.name = name;
    table.version = version;
    table.vendor = vendor;
    table.initialize = [](const oar_host_services_t* host) -> oar_status_t {
      host_services() = host;  // the constructor may already report and log
      oar_status_t status = guard([] {
        if (detail::instance<Impl>() == nullptr) detail::instance<Impl>() = new Impl();
      });
      // No finalize follows a failed initialize: forget the host now.
      if (status != OAR_STATUS_OK) host_services() = nullptr;
      return status;
    };
    table.finalize = []() -> oar_status_t {
      oar_status_t status = guard([] {
        delete detail::instance<Impl>();
        detail::instance<Impl>() = nullptr;
      });
      host_services() = nullptr;
      return status;
    };
#define OAR_SDK_FILL(slot)                             \
  if constexpr (detail::has_##slot<Impl>::value) {     \
    table.slot = [](auto... args) -> oar_status_t {    \
      return detail::call<Impl>(&Impl::slot, args...); \
    };                                                 \
  }
    OAR_SDK_SLOTS(OAR_SDK_FILL)
#undef OAR_SDK_FILL
    return table;
  }();
  return &api;
}

}  // namespace oar::sdk

// Exports the plugin's one symbol, oar_plugin_query, for the class |Impl|. The
// table always carries the plugin's own ABI version: the core compares it with
// its own and explains a mismatch.
#define OAR_PLUGIN_DEFINE(Impl, name, version, vendor)                                        \
  extern "C" __attribute__((visibility("default"))) const oar_plugin_api_t* oar_plugin_query( \
      uint32_t host_abi_major, uint32_t host_abi_minor) {                                     \
    (void)host_abi_major;                                                                     \
    (void)host_abi_minor;                                                                     \
    return ::oar::sdk::plugin_api<Impl>(name, version, vendor);                               \
  }
