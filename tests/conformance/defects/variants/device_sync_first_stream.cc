// device_synchronize synchronizes the device's first stream only (the one the
// vendor thought of as "the device's queue").
#include <map>
#include <mutex>
#include <vector>

#include "../shim.h"

namespace oar_defect {
namespace {

std::mutex g_mutex;
std::map<oar_device_t, std::vector<oar_stream_t>> g_streams;  // in creation order

oar_status_t stream_create(oar_device_t device, const oar_stream_desc_t* desc,
                           oar_stream_t* out_stream) {
  oar_status_t status = real->stream_create(device, desc, out_stream);
  if (status == OAR_STATUS_OK) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_streams[device].push_back(*out_stream);
  }
  return status;
}

oar_status_t stream_destroy(oar_stream_t stream) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (auto& [device, streams] : g_streams) {
      for (auto it = streams.begin(); it != streams.end(); ++it) {
        if (*it == stream) {
          streams.erase(it);
          break;
        }
      }
    }
  }
  return real->stream_destroy(stream);
}

oar_status_t device_synchronize(oar_device_t device) {
  oar_stream_t first = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_streams.find(device);
    if (it != g_streams.end() && !it->second.empty()) first = it->second.front();
  }
  if (first == nullptr) return real->device_synchronize(device);
  return real->stream_synchronize(first);  // the defect
}

}  // namespace

void install(oar_plugin_api_t& table) {
  table.stream_create = stream_create;
  table.stream_destroy = stream_destroy;
  table.device_synchronize = device_synchronize;
}

}  // namespace oar_defect
