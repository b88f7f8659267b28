// The plugin path: a communicator made by the plugin's own comm_create and
// driven through its collective slots (include/oar/collective.h).
#include "core/collective/native_engine.h"

#include <atomic>
#include <string>
#include <thread>

#include "core/loader/plugin.h"
#include "oar/buffer.hpp"
#include "oar/device.hpp"
#include "oar/error.hpp"
#include "oar/stream.hpp"

namespace oar::detail {
namespace {

class NativeEngine final : public CommEngine {
 public:
  NativeEngine(Device& device, oar_comm_t comm, int32_t rank, int32_t size)
      : device_(device),
        api_(device.api()),
        comm_(comm),
        rank_(rank),
        size_(size),
        name_("plugin:" + device.plugin_name()) {
    track(&device_);
  }

  // Pending operations complete first (the slot's contract).
  ~NativeEngine() override { destroy(/*abort_first=*/false); }

  // The runtime is closing the device: nothing may wait for peers any more.
  void release() noexcept override { destroy(/*abort_first=*/true); }

  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }
  Device& device() const override { return device_; }
  const char* name() const override { return name_.c_str(); }

  Status error() const override {
    if (released_.load()) return released_status();
    return aborted_.load() ? Status(OAR_STATUS_ABORTED, "the communicator was aborted") : Status();
  }

  void abort() override {
    if (released_.load()) return;
    aborted_.store(true);
    oar_status_t code = api_.comm_abort(comm_);
    if (code != OAR_STATUS_OK) (void)device_.plugin().status(code, "comm_abort");
  }

  void submit(const std::vector<CollOp>& ops, Stream& stream) override {
    const bool grouped = ops.size() > 1;
    if (grouped) device_.plugin().check(api_.comm_group_begin(), "comm_group_begin");
    try {
      for (const CollOp& op : ops) call(op, stream.handle());
    } catch (...) {
      if (grouped) (void)api_.comm_group_end();
      throw;
    }
    if (grouped) device_.plugin().check(api_.comm_group_end(), "comm_group_end");
  }

 private:
  void call(const CollOp& op, oar_stream_t stream) {
    oar_memory_t send = op.send != nullptr ? op.send->memory() : nullptr;
    uint64_t send_offset = op.send != nullptr ? op.send->offset() + op.send_offset : 0;
    oar_memory_t recv = op.recv != nullptr ? op.recv->memory() : nullptr;
    uint64_t recv_offset = op.recv != nullptr ? op.recv->offset() + op.recv_offset : 0;
    const Plugin& plugin = device_.plugin();
    switch (op.kind) {
      case CollKind::kAllReduce:
        return plugin.check(api_.comm_all_reduce(comm_, stream, send, send_offset, recv,
                                                 recv_offset, op.count, op.dtype, op.op),
                            "comm_all_reduce");
      case CollKind::kBroadcast:
        return plugin.check(api_.comm_broadcast(comm_, stream, send, send_offset, recv, recv_offset,
                                                op.count, op.dtype, op.peer),
                            "comm_broadcast");
      case CollKind::kReduce:
        return plugin.check(api_.comm_reduce(comm_, stream, send, send_offset, recv, recv_offset,
                                             op.count, op.dtype, op.op, op.peer),
                            "comm_reduce");
      case CollKind::kAllGather:
        return plugin.check(api_.comm_all_gather(comm_, stream, send, send_offset, recv,
                                                 recv_offset, op.count, op.dtype),
                            "comm_all_gather");
      case CollKind::kReduceScatter:
        return plugin.check(api_.comm_reduce_scatter(comm_, stream, send, send_offset, recv,
                                                     recv_offset, op.count, op.dtype, op.op),
                            "comm_reduce_scatter");
      case CollKind::kAllToAll:
        return plugin.check(api_.comm_all_to_all(comm_, stream, send, send_offset, recv,
                                                 recv_offset, op.count, op.dtype),
                            "comm_all_to_all");
      case CollKind::kSend:
        return plugin.check(
            api_.comm_send(comm_, stream, send, send_offset, op.count, op.dtype, op.peer),
            "comm_send");
      case CollKind::kRecv:
        return plugin.check(
            api_.comm_recv(comm_, stream, recv, recv_offset, op.count, op.dtype, op.peer),
            "comm_recv");
    }
  }

  void destroy(bool abort_first) noexcept {
    if (released_.exchange(true)) return;
    untrack(&device_);
    if (abort_first) (void)api_.comm_abort(comm_);
    oar_status_t code = api_.comm_destroy(comm_);
    if (code != OAR_STATUS_OK) (void)device_.plugin().status(code, "comm_destroy");
  }

  Device& device_;
  const oar_plugin_api_t& api_;
  oar_comm_t comm_;
  int32_t rank_;
  int32_t size_;
  std::string name_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> released_{false};  // comm_ destroyed
};

// Every collective slot a native engine calls.
bool has_collective_slots(const oar_plugin_api_t& api) {
  return api.comm_unique_id_size && api.comm_get_unique_id && api.comm_create && api.comm_destroy &&
         api.comm_abort && api.comm_all_reduce && api.comm_broadcast && api.comm_reduce &&
         api.comm_all_gather && api.comm_reduce_scatter && api.comm_all_to_all && api.comm_send &&
         api.comm_recv && api.comm_group_begin && api.comm_group_end;
}

}  // namespace

std::vector<std::unique_ptr<CommEngine>> make_native_engines(const std::vector<Device*>& devices) {
  if (devices.empty()) throw Error(OAR_STATUS_INVALID_ARGUMENT, "create_local: no devices");
  Device& first = *devices[0];
  for (Device* device : devices) {
    if (&device->plugin() != &first.plugin()) {
      throw Error(OAR_STATUS_UNIMPLEMENTED,
                  "create_local: " + device->name() + " and " + first.name() +
                      " are of different plugins; run one process per device under mpirun "
                      "for the host-staged engine");
    }
    if (!device->has_feature(OAR_DEVICE_FEATURE_COLLECTIVES) ||
        !has_collective_slots(device->api())) {
      throw Error(OAR_STATUS_UNIMPLEMENTED,
                  "create_local: " + device->name() +
                      " has no collective slots (OAR_DEVICE_FEATURE_COLLECTIVES); run one "
                      "process per device under mpirun for the host-staged engine",
                  device->plugin_name());
    }
  }
  const oar_plugin_api_t& api = first.api();
  size_t id_size = 0;
  first.plugin().check(api.comm_unique_id_size(&id_size), "comm_unique_id_size");
  std::string id(id_size, '\0');
  first.plugin().check(api.comm_get_unique_id(id.data(), id.size()), "comm_get_unique_id");
  // comm_create blocks until every rank joined: one thread per rank.
  const int32_t n = int32_t(devices.size());
  std::vector<oar_comm_t> comms(n, nullptr);
  std::vector<oar_status_t> codes(n, OAR_STATUS_OK);
  std::vector<Status> statuses(n);
  std::vector<oar_device_t> handles;
  for (Device* device : devices) handles.push_back(device->handle());
  {
    std::vector<std::thread> threads;
    for (int32_t r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        codes[r] = api.comm_create(handles[r], n, r, id.data(), id.size(), &comms[r]);
        if (codes[r] != OAR_STATUS_OK) statuses[r] = first.plugin().status(codes[r], "comm_create");
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  std::vector<std::unique_ptr<CommEngine>> engines;
  for (int32_t r = 0; r < n; ++r) {
    if (codes[r] == OAR_STATUS_OK)
      engines.push_back(std::make_unique<NativeEngine>(*devices[r], comms[r], r, n));
  }
  for (int32_t r = 0; r < n; ++r) {
    if (codes[r] != OAR_STATUS_OK) {
      throw Error(statuses[r].code(),
                  "create_local: rank " + std::to_string(r) + ": " + statuses[r].message(),
                  first.plugin_name());
    }
  }
  return engines;
}

}  // namespace oar::detail
