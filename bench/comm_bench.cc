// oar-comm-bench: all_reduce through oar::Communicator against MPI_Allreduce
// on host buffers in the same run, in the style of nccl-tests'
// all_reduce_perf. Run under mpirun, one rank per process:
//
//   mpirun -n 2 oar-comm-bench --manifest build/share/oar/plugins.d/cpu.json
//          [--dtype f32] [--op sum] [--min 8] [--max 256M] [--reps 7]
//          [--iters N] [--nbc 1]
//
// Each line: bytes, elements, dtype, op, then time (us), algbw and busbw
// (GB/s) for OAR, then the same for MPI_Allreduce, then OAR's busbw over
// MPI's. algbw = bytes / time; busbw = algbw * 2 (n - 1) / n, the traffic of
// each link in a ring, as nccl-tests defines it.
//
// The machine's speed drifts (docs/performance.md), so OAR and MPI are
// measured interleaved: --reps repetitions per size, each a block of OAR
// operations issued back to back on one stream (ending with the stream's
// synchronize) and a block of as many MPI_Allreduce calls (ending with a
// barrier), the order alternating between repetitions. A block's time is
// the slowest rank's. Printed: the median block time of each, and the median
// of the repetitions' ratios; then the same for MPI_Iallreduce + MPI_Wait
// (the nonblocking all-reduce OAR's engine starts and polls below 64 KiB,
// kRingMinBytes; from there on, OAR runs its own ring of MPI_Isend/Irecv),
// so that OAR's own cost shows apart from MPI's choice of algorithm. --iters fixes the block
// length; by default it shrinks with the size (200 operations at 8 B, 2 at 256 MiB).
// --nbc 1 adds a fourth variant, interleaved with the others: OAR on a second
// communicator made with OAR_COMM_ALLREDUCE=mpi (MPI_Iallreduce at every size,
// the engine before OAR's ring), printed as its time and OAR's speed-up over it.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "oar/oar.hpp"

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

uint64_t parse_size(const char* text) {
  char* end = nullptr;
  double value = std::strtod(text, &end);
  std::string unit = end != nullptr ? end : "";
  if (unit == "K" || unit == "k") value *= 1024;
  if (unit == "M" || unit == "m") value *= 1024 * 1024;
  if (unit == "G" || unit == "g") value *= 1024.0 * 1024 * 1024;
  return uint64_t(value);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string manifest, device_name, dtype_name = "f32", op_name = "sum";
  uint64_t min_bytes = 8;
  uint64_t max_bytes = uint64_t(256) << 20;
  int iters = 0;  // 0: by size
  int reps = 7;
  bool nbc = false;  // --nbc 1: also OAR through MPI_Iallreduce
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    if (key == "--manifest") manifest = argv[i + 1];
    if (key == "--device") device_name = argv[i + 1];
    if (key == "--dtype") dtype_name = argv[i + 1];
    if (key == "--op") op_name = argv[i + 1];
    if (key == "--min") min_bytes = parse_size(argv[i + 1]);
    if (key == "--max") max_bytes = parse_size(argv[i + 1]);
    if (key == "--iters") iters = std::atoi(argv[i + 1]);
    if (key == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
    if (key == "--nbc") nbc = std::atoi(argv[i + 1]) != 0;
  }
  const DLDataType dtype = dtype_name == "f64"    ? oar::dtype::f64
                           : dtype_name == "i32"  ? oar::dtype::i32
                           : dtype_name == "bf16" ? oar::dtype::bf16
                                                  : oar::dtype::f32;
  const MPI_Datatype mpi_type = dtype_name == "f64"   ? MPI_DOUBLE
                                : dtype_name == "i32" ? MPI_INT32_T
                                                      : MPI_FLOAT;
  const oar::ReduceOp op = op_name == "max" ? oar::ReduceOp::kMax : oar::ReduceOp::kSum;
  const MPI_Op mpi_op = op_name == "max" ? MPI_MAX : MPI_SUM;
  const uint64_t es = oar::dtype_size(dtype);
  {
    oar::RuntimeOptions options;
    if (!manifest.empty()) options.plugin_files = {manifest};
    oar::Runtime runtime(options);
    if (runtime.devices().empty()) {
      std::fprintf(stderr, "oar-comm-bench: no device (give --manifest)\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    oar::Device& device = device_name.empty() ? *runtime.devices()[0] : runtime.device(device_name);
    oar::Stream stream = device.create_stream();
    oar::Communicator comm = oar::Communicator::from_mpi(device, MPI_COMM_WORLD);
    std::unique_ptr<oar::Communicator> nbc_comm;
    if (nbc) {
      const char* mode = getenv("OAR_COMM_ALLREDUCE");
      const std::string saved = mode != nullptr ? mode : "";
      setenv("OAR_COMM_ALLREDUCE", "mpi", 1);
      nbc_comm =
          std::make_unique<oar::Communicator>(oar::Communicator::from_mpi(device, MPI_COMM_WORLD));
      if (mode != nullptr) {
        setenv("OAR_COMM_ALLREDUCE", saved.c_str(), 1);
      } else {
        unsetenv("OAR_COMM_ALLREDUCE");
      }
    }
    oar::Buffer send = device.allocate(max_bytes, &stream);
    oar::Buffer recv = device.allocate(max_bytes, &stream);
    stream.fill(send, 0, 0, max_bytes);
    stream.synchronize();
    std::vector<char> host_send(max_bytes, 0), host_recv(max_bytes, 0);
    if (rank == 0) {
      double load[3] = {0, 0, 0};
      if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
        std::fclose(f);
      }
      std::printf(
          "# oar-comm-bench: %d ranks, %s (%s), all_reduce %s %s, %d interleaved repetitions, "
          "load average %.2f %.2f %.2f\n",
          size, device.name().c_str(), comm.engine_name(), dtype_name.c_str(), op_name.c_str(),
          reps, load[0], load[1], load[2]);
      std::printf("# %12s %12s %5s %5s | %10s %8s %8s | %10s %8s %8s | %6s | %10s %6s%s\n",
                  "size(B)", "count", "type", "redop", "oar(us)", "algbw", "busbw", "mpi(us)",
                  "algbw", "busbw", "ratio", "i-mpi(us)", "ratio",
                  nbc ? " | oar-nbc(us)  ratio" : "");
      std::printf(
          "# times: medians of the repetitions; ratio: median of OAR busbw / MPI busbw; i-mpi: "
          "MPI_Iallreduce + MPI_Wait, what OAR's engine calls below 64 KiB (above: OAR's ring)\n");
    }
    const double ring = size > 1 ? 2.0 * (size - 1) / size : 1.0;
    for (uint64_t bytes = std::max<uint64_t>(min_bytes, es); bytes <= max_bytes; bytes *= 2) {
      const uint64_t count = bytes / es;
      const int block =
          iters > 0
              ? iters
              : int(std::max<uint64_t>(2, std::min<uint64_t>(200, (uint64_t(1) << 29) / bytes)));
      auto run_oar = [&] {
        for (int i = 0; i < block; ++i) comm.all_reduce(send, recv, count, dtype, op, stream);
        comm.synchronize(stream);
      };
      auto run_oar_nbc = [&] {
        for (int i = 0; i < block; ++i) nbc_comm->all_reduce(send, recv, count, dtype, op, stream);
        nbc_comm->synchronize(stream);
      };
      const bool has_mpi = dtype_name != "bf16";
      auto run_mpi = [&] {
        for (int i = 0; i < block; ++i) {
          MPI_Allreduce(host_send.data(), host_recv.data(), int(count), mpi_type, mpi_op,
                        MPI_COMM_WORLD);
        }
      };
      // MPI's nonblocking all-reduce, awaited: what OAR's engine calls.
      auto run_mpi_nonblocking = [&] {
        for (int i = 0; i < block; ++i) {
          MPI_Request request;
          MPI_Iallreduce(host_send.data(), host_recv.data(), int(count), mpi_type, mpi_op,
                         MPI_COMM_WORLD, &request);
          MPI_Wait(&request, MPI_STATUS_IGNORE);
        }
      };
      // Warm-up, then the repetitions, the three in rotation.
      run_oar();
      if (nbc) run_oar_nbc();
      if (has_mpi) run_mpi();
      if (has_mpi) run_mpi_nonblocking();
      std::vector<double> oar_times, mpi_times, nb_times, ratios, nb_ratios, nbc_times, nbc_ratios;
      const int variants = nbc ? 4 : 3;
      for (int r = 0; r < reps; ++r) {
        double t[4] = {0, 0, 0, 0};
        for (int k = 0; k < variants; ++k) {
          const int which = (k + r) % variants;
          if ((which == 1 || which == 2) && !has_mpi) continue;
          MPI_Barrier(MPI_COMM_WORLD);
          const double start = now_s();
          if (which == 0) {
            run_oar();
          } else if (which == 3) {
            run_oar_nbc();
          } else if (which == 1) {
            run_mpi();
          } else {
            run_mpi_nonblocking();
          }
          t[which] = (now_s() - start) / block;
        }
        double worst[4] = {0, 0, 0, 0};
        MPI_Allreduce(t, worst, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        oar_times.push_back(worst[0]);
        mpi_times.push_back(worst[1]);
        nb_times.push_back(worst[2]);
        if (worst[1] > 0) ratios.push_back(worst[1] / worst[0]);  // busbw ratio
        if (worst[2] > 0) nb_ratios.push_back(worst[2] / worst[0]);
        if (worst[3] > 0) {
          nbc_times.push_back(worst[3]);
          nbc_ratios.push_back(worst[3] / worst[0]);
        }
      }
      if (rank == 0) {
        const double oar_s = median(oar_times);
        const double mpi_s = median(mpi_times);
        const double oar_algbw = bytes / oar_s / 1e9;
        const double mpi_algbw = mpi_s > 0 ? bytes / mpi_s / 1e9 : 0;
        std::printf(
            "  %12llu %12llu %5s %5s | %10.1f %8.3f %8.3f | %10.1f %8.3f %8.3f | %6.2f | %10.1f "
            "%6.2f",
            (unsigned long long)bytes, (unsigned long long)count, dtype_name.c_str(),
            op_name.c_str(), oar_s * 1e6, oar_algbw, oar_algbw * ring, mpi_s * 1e6, mpi_algbw,
            mpi_algbw * ring, ratios.empty() ? 0.0 : median(ratios), median(nb_times) * 1e6,
            nb_ratios.empty() ? 0.0 : median(nb_ratios));
        if (nbc) std::printf(" | %11.1f %6.2f", median(nbc_times) * 1e6, median(nbc_ratios));
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
  MPI_Finalize();
  return 0;
}
