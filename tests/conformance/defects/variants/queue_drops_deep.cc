// A stream is a ring of 1024 command slots; a submission that finds the ring
// full is dropped (and reported OK) instead of waiting for a slot to free.
// Shallow queues never notice.
#include <atomic>
#include <map>
#include <mutex>

#include "../shim.h"

namespace oar_defect {
namespace {

constexpr int kSlots = 1024;

std::mutex g_mutex;
std::map<oar_stream_t, std::atomic<int>> g_pending;  // commands in the ring

std::atomic<int>& pending(oar_stream_t stream) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_pending[stream];
}

void slot_freed(void* counter, oar_status_t) { --*static_cast<std::atomic<int>*>(counter); }

// Runs |submit| if the ring has room; frees the slot when the command is done.
template <typename Submit>
oar_status_t in_ring(oar_stream_t stream, Submit submit) {
  if (stream == nullptr) return submit();
  std::atomic<int>& count = pending(stream);
  if (count.load() >= kSlots) return OAR_STATUS_OK;  // the defect: dropped
  oar_status_t status = submit();
  if (status != OAR_STATUS_OK) return status;
  ++count;
  oar_status_t queued = real->stream_add_host_callback(stream, slot_freed, &count);
  if (queued != OAR_STATUS_OK) --count;
  return queued;
}

oar_status_t copy_h2d(oar_stream_t s, oar_memory_t dst, uint64_t offset, const void* src,
                      uint64_t size) {
  return in_ring(s, [&] { return real->memory_copy_h2d(s, dst, offset, src, size); });
}

oar_status_t copy_d2h(oar_stream_t s, void* dst, oar_memory_t src, uint64_t offset, uint64_t size) {
  return in_ring(s, [&] { return real->memory_copy_d2h(s, dst, src, offset, size); });
}

oar_status_t copy_d2d(oar_stream_t s, oar_memory_t dst, uint64_t dst_offset, oar_memory_t src,
                      uint64_t src_offset, uint64_t size) {
  return in_ring(s,
                 [&] { return real->memory_copy_d2d(s, dst, dst_offset, src, src_offset, size); });
}

oar_status_t fill(oar_stream_t s, oar_memory_t dst, uint64_t offset, uint8_t value, uint64_t size) {
  return in_ring(s, [&] { return real->memory_fill(s, dst, offset, value, size); });
}

bool every_kernel(const RealKernel&) { return true; }

oar_status_t kernel(const oar_kernel_call_t* call) {
  return in_ring(call->stream, [&] { return call_real(call); });
}

}  // namespace

void install(oar_plugin_api_t& table) {
  table.memory_copy_h2d = copy_h2d;
  table.memory_copy_d2h = copy_d2h;
  table.memory_copy_d2d = copy_d2d;
  table.memory_fill = fill;
  wrap_kernels(table, every_kernel, kernel);
}

}  // namespace oar_defect
