// sim's all_reduce maps OAR's reductions onto a vendor enum that lists MAX
// and MIN the other way round: a min is computed as a max.
#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t all_reduce(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                        uint64_t send_offset, oar_memory_t recv, uint64_t recv_offset,
                        uint64_t count, DLDataType dtype, int32_t op) {
  if (op == OAR_REDUCE_OP_MIN) op = OAR_REDUCE_OP_MAX;  // the defect
  return real->comm_all_reduce(comm, stream, send, send_offset, recv, recv_offset, count, dtype,
                               op);
}

}  // namespace

void install(oar_plugin_api_t& table) { table.comm_all_reduce = all_reduce; }

}  // namespace oar_defect
