// sim's collectives translate OAR's reductions through a table written for a
// vendor library without an average: OAR_REDUCE_OP_AVG falls through to
// SUM (the division by the number of ranks is forgotten).
#include "../shim.h"

namespace oar_defect {
namespace {

int32_t translated(int32_t op) { return op == OAR_REDUCE_OP_AVG ? OAR_REDUCE_OP_SUM : op; }

oar_status_t all_reduce(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                        uint64_t send_offset, oar_memory_t recv, uint64_t recv_offset,
                        uint64_t count, DLDataType dtype, int32_t op) {
  return real->comm_all_reduce(comm, stream, send, send_offset, recv, recv_offset, count, dtype,
                               translated(op));
}

oar_status_t reduce(oar_comm_t comm, oar_stream_t stream, oar_memory_t send, uint64_t send_offset,
                    oar_memory_t recv, uint64_t recv_offset, uint64_t count, DLDataType dtype,
                    int32_t op, int32_t root) {
  return real->comm_reduce(comm, stream, send, send_offset, recv, recv_offset, count, dtype,
                           translated(op), root);
}

oar_status_t reduce_scatter(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                            uint64_t send_offset, oar_memory_t recv, uint64_t recv_offset,
                            uint64_t count, DLDataType dtype, int32_t op) {
  return real->comm_reduce_scatter(comm, stream, send, send_offset, recv, recv_offset, count, dtype,
                                   translated(op));
}

}  // namespace

void install(oar_plugin_api_t& table) {
  table.comm_all_reduce = all_reduce;
  table.comm_reduce = reduce;
  table.comm_reduce_scatter = reduce_scatter;
}

}  // namespace oar_defect
