// The collectives area of oar-conform (docs/conformance.md, "Collectives").
//
// Collectives need several ranks, so this area does not run in the harness's
// per-group child processes: oar-conform starts the ranks itself.
//  - staged: `mpiexec -n N oar-conform collectives-worker ...`, one process
//    per rank, each opening the device under test and joining
//    oar::Communicator::from_mpi(MPI_COMM_WORLD): the core's host-staged
//    engine (any plugin with host callbacks).
//  - native: `oar-conform collectives-worker --local N ...`, one process that
//    opens N devices of the plugin and joins them with
//    Communicator::create_local, a thread per rank: the plugin's own
//    collective slots (a device that lists OAR_DEVICE_FEATURE_COLLECTIVES).
// Each rank runs the same list of cases (collective x reduction x dtype x
// size x in place/out of place, send/recv rings, groups) and writes one JSON
// line per event to its own file; the parent merges the ranks' results (a
// case fails when it failed on any rank), blames a crash or a hang on the case
// that was running, and hands back one TestResult per case, area
// "collectives".
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "conformance/harness/runner.h"

namespace oar::conformance {

struct CollectivesRun {
  std::string self;                          // this executable (/proc/self/exe)
  std::string plugin;                        // the exact manifest or library the probe resolved
  int device = 0;                            // the device under test (staged path)
  int device_count = 1;                      // the plugin's devices (native path)
  int ranks = 2;                             // --collectives-ranks
  bool validate = false;                     // --validate
  std::string filter;                        // --filter
  std::string work_dir;                      // where the ranks' result files go (the report folder)
  std::string log;                           // test-output.log: what the ranks print
  std::chrono::milliseconds timeout{60000};  // a case's limit (the calibrated test limit)
};

// The command that starts the staged path's ranks, as printed in the log and
// the report: "<mpiexec> -n N <self> collectives-worker ...".
std::string collectives_command(const CollectivesRun& run);

// Runs the area for a device of |properties| and returns its results (also
// passed to |on_result| one by one). Runs no Runtime in this process.
std::vector<TestResult> run_collectives(const CollectivesRun& run,
                                        const oar_device_properties_t& properties,
                                        const std::function<void(const TestResult&)>& on_result);

// The ids run_collectives would run for a device of |properties| (both
// paths, the same filter), without running them: what `--list` prints.
std::vector<std::string> collectives_ids(const CollectivesRun& run,
                                         const oar_device_properties_t& properties);

// `oar-conform collectives-worker ...`: one rank (or, with --local, every
// rank) of a run. Returns the process's exit code.
int collectives_worker_main(int argc, char** argv);

}  // namespace oar::conformance
