// Several ranks of the host-staged engine in one process: the devices of a
// process (Communicator::create_local for plugins without collective slots,
// Communicator::from_mpi with several devices), optionally over a Transport
// across processes (MPI) under them.
//
// The K local ranks of a process meet in host memory: each rank's engine
// calls run() from its own stream's thread; the last of the K to arrive runs
// the step for all of them (a reduction of the K inputs into a temporary,
// then, with an inner transport, one operation across the processes, then a
// copy to each rank's output) and the others wait. Global ranks are
// process-major: rank p * K + i is local rank i of process p; every process
// has the same K. Send/recv between local ranks is a copy; across processes
// it goes through the inner transport in an order both sides derive alike
// (sender rank, receiver rank, n-th message of that pair).
#pragma once

#include <memory>
#include <vector>

#include "core/collective/engine.h"

namespace oar::detail {

// K transports, one per local rank (index i is local rank i). |inner| (may
// be null: this process is the whole communicator) is shared by them.
// Collective over |inner| when it is not null: every process calls it with
// the same K.
std::vector<std::unique_ptr<Transport>> make_local_transports(int32_t local_ranks,
                                                              std::unique_ptr<Transport> inner);

}  // namespace oar::detail
