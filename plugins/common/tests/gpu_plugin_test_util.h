// Shared by the GPU plugins' gtest programs (cuda, hip, level_zero), which
// run each plugin against a fake vendor library: the plugin loaded through
// its C table as the core loads it, host services that keep its last error
// and its log lines, and the fixture calls every test makes.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "oar/oar.h"

namespace oar_gpu_test {

inline thread_local std::string last_error;
inline std::vector<std::string> logs;

inline void report_error(void*, oar_status_t, const char* message) {
  last_error = message != nullptr ? message : "";
}
inline void log_line(void*, int32_t, const char* message) { logs.push_back(message); }
inline void trace(void*, const oar_trace_record_t*) {}

inline const oar_host_services_t kHost = {OAR_HOST_SERVICES_STRUCT_SIZE,
                                          OAR_ABI_MAJOR,
                                          OAR_ABI_MINOR,
                                          nullptr,
                                          report_error,
                                          log_line,
                                          trace};

// The plugin's table (the library stays loaded); nullptr when it does not
// load, and dlerror() says why.
inline const oar_plugin_api_t* load_plugin(const char* path) {
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return nullptr;
  auto query = reinterpret_cast<oar_plugin_query_fn>(dlsym(library, OAR_PLUGIN_ENTRY_SYMBOL));
  return query(OAR_ABI_MAJOR, OAR_ABI_MINOR);
}

// Runs the registered kernel |fn| (with its |user_data|) once, as the core's
// dispatcher would: on |device| and |stream| (null where the test calls a
// kernel outside a plugin), with these tensors and attributes.
inline oar_status_t call_kernel(oar_kernel_fn fn, void* user_data, oar_device_t device,
                                oar_stream_t stream, std::vector<DLTensor> inputs,
                                std::vector<DLTensor> outputs,
                                const std::vector<oar_attr_t>& attrs = {}) {
  oar_kernel_call_t c{};
  c.struct_size = OAR_KERNEL_CALL_STRUCT_SIZE;
  c.device = device;
  c.stream = stream;
  c.inputs = inputs.data();
  c.num_inputs = inputs.size();
  c.outputs = outputs.data();
  c.num_outputs = outputs.size();
  c.attrs = attrs.data();
  c.num_attrs = attrs.size();
  c.user_data = user_data;
  return fn(&c);
}

// The calls the plugin's tests make through Api(), the plugin's table.
template <const oar_plugin_api_t* (*Api)()>
class PluginTest : public ::testing::Test {
 protected:
  // Initializes the plugin (after the test set its switches).
  void start() {
    ASSERT_EQ(Api()->initialize(&kHost), OAR_STATUS_OK) << last_error;
    initialized_ = true;
  }
  void finalize() {
    ASSERT_EQ(Api()->finalize(), OAR_STATUS_OK);
    initialized_ = false;
  }
  int32_t count() {
    int32_t n = -1;
    EXPECT_EQ(Api()->device_count(&n), OAR_STATUS_OK);
    return n;
  }
  std::string all_logs() const {
    std::string text;
    for (const auto& line : logs) text += line + "\n";
    return text;
  }
  oar_device_t open(int32_t index = 0) {
    oar_device_t device = nullptr;
    EXPECT_EQ(Api()->device_open(index, &device), OAR_STATUS_OK) << last_error;
    return device;
  }
  oar_stream_t stream(oar_device_t device) {
    oar_stream_t s = nullptr;
    EXPECT_EQ(Api()->stream_create(device, nullptr, &s), OAR_STATUS_OK) << last_error;
    return s;
  }
  oar_memory_t allocate(oar_device_t device, uint64_t size,
                        uint32_t kind = OAR_MEMORY_KIND_DEVICE) {
    oar_memory_t m = nullptr;
    EXPECT_EQ(Api()->memory_allocate(device, size, kind, &m), OAR_STATUS_OK) << last_error;
    return m;
  }
  oar_event_t event(oar_device_t device, uint32_t flags = 0) {
    oar_event_t e = nullptr;
    EXPECT_EQ(Api()->event_create(device, flags, &e), OAR_STATUS_OK) << last_error;
    return e;
  }

  bool initialized_ = false;
};

}  // namespace oar_gpu_test
