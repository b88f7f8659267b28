// The core's host-staged collective engine: any plugin, one device per rank,
// ranks meeting in host memory through a Transport (MPI).
//
// An operation on stream S becomes, per chunk k of at most
// OAR_COMM_CHUNK_KB (default 1024) KiB per block:
//
//   S: d2h(k) -> [post k] -> [wait k-1] -> h2d(k-1) -> d2h(k+1) -> [post k+1] -> ...
//
// where d2h/h2d are the plugin's stream-ordered copies into and out of two
// host staging buffers (pinned memory of the device when it offers
// HOST_PINNED), and [post]/[wait] are host callbacks: post hands chunk k to
// the communicator's progress thread, which runs the transport; wait blocks
// the stream until that chunk is done. So the copy of chunk k+1 to the host
// and the copy of chunk k-1 back overlap the transport step of chunk k, and
// work submitted after the operation waits for it. Memory the host can
// address (a kDLCPU device such as the cpu plugin, or HOST_PINNED/UNIFIED
// buffers) is not staged: one callback runs the transport on it directly.
// Requires OAR_DEVICE_FEATURE_HOST_CALLBACKS, and that work submitted after
// a host callback waits for it to return (every plugin in this tree, CUDA's
// cudaLaunchHostFunc too).
#pragma once

#include <memory>

#include "core/collective/engine.h"

namespace oar::detail {

// OAR_COMM_STAGING=always stages host-addressable memory too (tests and
// benchmarks of the staging path on the cpu plugin).
std::unique_ptr<CommEngine> make_staged_engine(Device& device,
                                               std::unique_ptr<Transport> transport);

}  // namespace oar::detail
