// Copies and fills are batched on the host and submitted at the stream's next
// sync point (a synchronize, query, record, wait, callback or kernel, or a full
// batch); stream_destroy forgets to submit the last batch, so work queued
// after the last sync point is lost.
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "../shim.h"

namespace oar_defect {
namespace {

using Command = std::function<oar_status_t()>;

std::mutex g_mutex;
std::map<oar_stream_t, std::vector<Command>> g_batches;

oar_status_t flush(oar_stream_t stream) {
  std::vector<Command> batch;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_batches.find(stream);
    if (it == g_batches.end()) return OAR_STATUS_OK;
    batch.swap(it->second);
  }
  for (Command& command : batch) {
    oar_status_t status = command();
    if (status != OAR_STATUS_OK) return status;
  }
  return OAR_STATUS_OK;
}

// Checks the call at once (the real plugin with an empty range at the end of
// the destination refuses what it would refuse), then batches it.
oar_status_t batched(oar_stream_t stream, oar_status_t checked, Command command) {
  if (checked != OAR_STATUS_OK || stream == nullptr) return checked;
  size_t size;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    std::vector<Command>& batch = g_batches[stream];
    batch.push_back(std::move(command));
    size = batch.size();
  }
  return size >= 64 ? flush(stream) : OAR_STATUS_OK;
}

oar_status_t copy_h2d(oar_stream_t s, oar_memory_t dst, uint64_t offset, const void* src,
                      uint64_t size) {
  if (offset + size < offset) return real->memory_copy_h2d(s, dst, offset, src, size);
  return batched(s, real->memory_copy_h2d(s, dst, offset + size, src, 0),
                 [=] { return real->memory_copy_h2d(s, dst, offset, src, size); });
}

oar_status_t copy_d2h(oar_stream_t s, void* dst, oar_memory_t src, uint64_t offset, uint64_t size) {
  if (offset + size < offset) return real->memory_copy_d2h(s, dst, src, offset, size);
  return batched(s, real->memory_copy_d2h(s, dst, src, offset + size, 0),
                 [=] { return real->memory_copy_d2h(s, dst, src, offset, size); });
}

oar_status_t fill(oar_stream_t s, oar_memory_t dst, uint64_t offset, uint8_t value, uint64_t size) {
  if (offset + size < offset) return real->memory_fill(s, dst, offset, value, size);
  return batched(s, real->memory_fill(s, dst, offset + size, value, 0),
                 [=] { return real->memory_fill(s, dst, offset, value, size); });
}

oar_status_t copy_d2d(oar_stream_t s, oar_memory_t dst, uint64_t dst_offset, oar_memory_t src,
                      uint64_t src_offset, uint64_t size) {
  oar_status_t flushed = flush(s);
  return flushed != OAR_STATUS_OK
             ? flushed
             : real->memory_copy_d2d(s, dst, dst_offset, src, src_offset, size);
}

oar_status_t stream_synchronize(oar_stream_t s) {
  oar_status_t flushed = flush(s);
  return flushed != OAR_STATUS_OK ? flushed : real->stream_synchronize(s);
}

oar_status_t stream_query(oar_stream_t s, bool* out_idle) {
  oar_status_t flushed = flush(s);
  return flushed != OAR_STATUS_OK ? flushed : real->stream_query(s, out_idle);
}

oar_status_t stream_wait_event(oar_stream_t s, oar_event_t event) {
  oar_status_t flushed = flush(s);
  return flushed != OAR_STATUS_OK ? flushed : real->stream_wait_event(s, event);
}

oar_status_t add_host_callback(oar_stream_t s, oar_host_callback_fn callback, void* user_data) {
  oar_status_t flushed = flush(s);
  return flushed != OAR_STATUS_OK ? flushed
                                  : real->stream_add_host_callback(s, callback, user_data);
}

oar_status_t event_record(oar_event_t event, oar_stream_t s) {
  oar_status_t flushed = flush(s);
  return flushed != OAR_STATUS_OK ? flushed : real->event_record(event, s);
}

oar_status_t device_synchronize(oar_device_t device) {
  std::vector<oar_stream_t> streams;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (auto& [stream, batch] : g_batches) streams.push_back(stream);
  }
  for (oar_stream_t s : streams) flush(s);
  return real->device_synchronize(device);
}

oar_status_t stream_destroy(oar_stream_t s) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_batches.erase(s);  // the defect: the last batch is never submitted
  }
  return real->stream_destroy(s);
}

bool every_kernel(const RealKernel&) { return true; }

oar_status_t kernel(const oar_kernel_call_t* call) {
  oar_status_t flushed = flush(call->stream);
  return flushed != OAR_STATUS_OK ? flushed : call_real(call);
}

}  // namespace

void install(oar_plugin_api_t& table) {
  table.memory_copy_h2d = copy_h2d;
  table.memory_copy_d2h = copy_d2h;
  table.memory_copy_d2d = copy_d2d;
  table.memory_fill = fill;
  table.stream_synchronize = stream_synchronize;
  table.stream_query = stream_query;
  table.stream_wait_event = stream_wait_event;
  table.stream_add_host_callback = add_host_callback;
  table.event_record = event_record;
  table.device_synchronize = device_synchronize;
  table.stream_destroy = stream_destroy;
  wrap_kernels(table, every_kernel, kernel);
}

}  // namespace oar_defect
