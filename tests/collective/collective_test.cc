// oar::Communicator under mpirun, one process per rank, each rank on the
// plugin its position picks from --plugins (cpu,sim: rank 0 on cpu, rank 1
// on sim, rank 2 on cpu, ...).
//
//   collective_test --manifests DIR --plugins cpu,sim [--mode all|kill|abort]
//
// all:   every collective x reduction x dtype x size (0, 1, odd, prime, a few
//        MiB; with --large 1, 20 MiB for all_reduce and all_gather) x in
//        place / out of place against a plain reference computed from every
//        rank's (deterministic) input, with guard bytes around each
//        destination; groups and send/recv rings; argument errors.
// kill:  the last rank kills itself (SIGKILL) during a large all_reduce; the
//        others must end with an error naming it within 5 s
//        ("SURVIVOR ... seconds=...", checked by check_kill.cmake).
// abort: rank 0 aborts while blocked in an all_reduce that rank 1 never
//        joins; the pending operation and every later call fail with ABORTED.
// mismatch: (OAR_VALIDATE=1) ranks disagreeing on count or dtype all fail.
// --local N instead of mpirun: N devices of one plugin in this process
//        (create_local, the plugin's own slots), a thread per rank.
//
// Exit code 0 when every check passed on every rank.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "oar/oar.hpp"

namespace {

using oar::operator==;

thread_local int g_rank = 0;  // a thread per rank in --local mode
int g_size = 1;
thread_local int g_failures = 0;
thread_local int g_checks = 0;

void failure(const std::string& what) {
  if (++g_failures <= 20) std::fprintf(stderr, "FAIL rank %d: %s\n", g_rank, what.c_str());
}

// --- values ------------------------------------------------------------------

uint16_t to_half(float f) {  // exact for the small integers the test uses
  if (f == 0) return 0;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint32_t sign = (bits >> 16) & 0x8000;
  int32_t exponent = int32_t((bits >> 23) & 0xff) - 127 + 15;
  return uint16_t(sign | (uint32_t(exponent) << 10) | ((bits >> 13) & 0x3ff));
}

void store(DLDataType t, void* base, uint64_t i, double v) {
  char* p = static_cast<char*>(base) + i * oar::dtype_size(t);
  if (t == oar::dtype::f32) {
    float f = float(v);
    std::memcpy(p, &f, 4);
  } else if (t == oar::dtype::f64) {
    std::memcpy(p, &v, 8);
  } else if (t == oar::dtype::i32) {
    int32_t x = int32_t(v);
    std::memcpy(p, &x, 4);
  } else if (t == oar::dtype::i64) {
    int64_t x = int64_t(v);
    std::memcpy(p, &x, 8);
  } else if (t == oar::dtype::i8) {
    *reinterpret_cast<int8_t*>(p) = int8_t(v);
  } else if (t == oar::dtype::u8) {
    *reinterpret_cast<uint8_t*>(p) = uint8_t(v);
  } else if (t == oar::dtype::f16) {
    uint16_t h = to_half(float(v));
    std::memcpy(p, &h, 2);
  } else if (t == oar::dtype::bf16) {
    float f = float(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint16_t h = uint16_t(bits >> 16);
    std::memcpy(p, &h, 2);
  }
}

// Rank |r|'s input element |i| of block |b| for reduction |op|: small integers
// whose sums, products and averages are exact in every dtype.
double input(oar::ReduceOp op, int r, uint64_t b, uint64_t i) {
  uint64_t k = i + 3 * b + 5 * uint64_t(r);
  switch (op) {
    case oar::ReduceOp::kProd:
      return 1 + double((i + uint64_t(r) + b) % 2);
    case oar::ReduceOp::kMax:
    case oar::ReduceOp::kMin:
      return double((i * 7 + uint64_t(r) * 13 + b * 3) % 50);
    case oar::ReduceOp::kAvg:
      return double(g_size) * double(k % 4);
    default:
      return double(k % 9);
  }
}

double combine(oar::ReduceOp op, double a, double b) {
  switch (op) {
    case oar::ReduceOp::kProd:
      return a * b;
    case oar::ReduceOp::kMax:
      return std::max(a, b);
    case oar::ReduceOp::kMin:
      return std::min(a, b);
    default:
      return a + b;
  }
}

double reduced(oar::ReduceOp op, uint64_t b, uint64_t i) {
  double v = input(op, 0, b, i);
  for (int r = 1; r < g_size; ++r) v = combine(op, v, input(op, r, b, i));
  return op == oar::ReduceOp::kAvg ? v / g_size : v;
}

const char* op_name(oar::ReduceOp op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return names[int(op)];
}

// --- one case ------------------------------------------------------------------

constexpr uint64_t kGuard = 256;
constexpr uint8_t kPattern = 0xa5;

struct Ctx {
  oar::Device* device;
  oar::Stream* stream;
  oar::Communicator* comm;
};

enum class Kind { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllToAll };
const char* kind_name(Kind k) {
  static const char* names[] = {"all_reduce", "broadcast",      "reduce",
                                "all_gather", "reduce_scatter", "all_to_all"};
  return names[int(k)];
}

// Runs one collective and compares every byte of the destination buffer
// (guards included) with what it must hold.
void run_case(Ctx& c, Kind kind, DLDataType t, oar::ReduceOp op, uint64_t count, bool in_place) {
  const uint64_t es = oar::dtype_size(t);
  const uint64_t n = uint64_t(g_size);
  const uint64_t bytes = count * es;
  const int root = g_size - 1;
  const bool multi_in = kind == Kind::kReduceScatter || kind == Kind::kAllToAll;
  const bool multi_out = kind == Kind::kAllGather || kind == Kind::kAllToAll;
  const uint64_t in_blocks = multi_in ? n : 1;
  const uint64_t out_blocks = multi_out ? n : 1;

  // Host images: the input this rank contributes, and the destination.
  std::vector<uint8_t> in(in_blocks * bytes);
  for (uint64_t b = 0; b < in_blocks; ++b) {
    for (uint64_t i = 0; i < count; ++i) {
      double v = kind == Kind::kBroadcast || kind == Kind::kAllGather || kind == Kind::kAllToAll
                     ? double((i + 7 * b + 11 * uint64_t(g_rank)) % 100)
                     : input(op, g_rank, b, i);
      store(t, in.data(), b * count + i, v);
    }
  }
  // The destination buffer with guards; where the input lives in place.
  const uint64_t dst_bytes = std::max(out_blocks, in_place ? in_blocks : 1) * bytes;
  std::vector<uint8_t> image(dst_bytes + 2 * kGuard, kPattern);
  uint64_t in_at = kGuard;  // where |in| goes in the destination buffer (in place)
  uint64_t recv_at = kGuard;
  if (in_place && kind == Kind::kAllGather) in_at = kGuard + uint64_t(g_rank) * bytes;
  if (in_place && kind == Kind::kReduceScatter) recv_at = kGuard + uint64_t(g_rank) * bytes;
  if (in_place && !in.empty()) std::memcpy(image.data() + in_at, in.data(), in.size());

  oar::Buffer dst = c.device->allocate(image.size(), c.stream);
  oar::Buffer src = c.device->allocate(in.size() + kGuard, c.stream);
  c.stream->copy_from_host(dst, 0, image.data(), image.size());
  if (!in_place) c.stream->copy_from_host(src, kGuard, in.data(), in.size());
  oar::BufferRef send = in_place ? oar::BufferRef(dst, in_at) : oar::BufferRef(src, kGuard);
  oar::BufferRef recv(dst, recv_at);

  // The expected destination.
  std::vector<uint8_t> expected = image;
  char* out = reinterpret_cast<char*>(expected.data()) + recv_at;
  switch (kind) {
    case Kind::kAllReduce:
      for (uint64_t i = 0; i < count; ++i) store(t, out, i, reduced(op, 0, i));
      break;
    case Kind::kReduce:
      if (g_rank == root) {
        for (uint64_t i = 0; i < count; ++i) store(t, out, i, reduced(op, 0, i));
      }
      break;
    case Kind::kReduceScatter:
      for (uint64_t i = 0; i < count; ++i) store(t, out, i, reduced(op, uint64_t(g_rank), i));
      break;
    case Kind::kBroadcast:
      for (uint64_t i = 0; i < count; ++i)
        store(t, out, i, double((i + 11 * uint64_t(root)) % 100));
      break;
    case Kind::kAllGather:
      for (uint64_t r = 0; r < n; ++r) {
        for (uint64_t i = 0; i < count; ++i)
          store(t, out, r * count + i, double((i + 11 * r) % 100));
      }
      break;
    case Kind::kAllToAll:  // block r comes from rank r's block g_rank
      for (uint64_t r = 0; r < n; ++r) {
        for (uint64_t i = 0; i < count; ++i) {
          store(t, out, r * count + i, double((i + 7 * uint64_t(g_rank) + 11 * r) % 100));
        }
      }
      break;
  }

  switch (kind) {
    case Kind::kAllReduce:
      c.comm->all_reduce(send, recv, count, t, op, *c.stream);
      break;
    case Kind::kBroadcast:
      c.comm->broadcast(send, recv, count, t, root, *c.stream);
      break;
    case Kind::kReduce:
      c.comm->reduce(send, recv, count, t, op, root, *c.stream);
      break;
    case Kind::kAllGather:
      c.comm->all_gather(send, recv, count, t, *c.stream);
      break;
    case Kind::kReduceScatter:
      c.comm->reduce_scatter(send, recv, count, t, op, *c.stream);
      break;
    case Kind::kAllToAll:
      c.comm->all_to_all(send, recv, count, t, *c.stream);
      break;
  }
  std::vector<uint8_t> got(image.size());
  c.stream->copy_to_host(got.data(), dst, 0, got.size());
  c.comm->synchronize(*c.stream);
  ++g_checks;
  // In place, reduce_scatter leaves the other blocks of send as they were.
  if (got != expected) {
    uint64_t at = 0;
    while (got[at] == expected[at]) ++at;
    failure(std::string(kind_name(kind)) + " " + oar::dtype_name(t) + " " + op_name(op) +
            " count=" + std::to_string(count) + (in_place ? " in place" : " out of place") +
            ": byte " + std::to_string(at) + " of " + std::to_string(got.size()) + " is " +
            std::to_string(got[at]) + ", expected " + std::to_string(expected[at]));
  }
}

// --- the suites ----------------------------------------------------------------

// --quick: three dtypes of each kind instead of all (the jobs with more ranks).
bool g_quick = false;
// --large 1: also the cases of tens of MiB (the cheaper jobs; the others'
// large cases are oar-conform's collectives area).
bool g_large = false;

void all_collectives(Ctx& c) {
  std::vector<DLDataType> reducible = {oar::dtype::f32, oar::dtype::f64, oar::dtype::i32,
                                       oar::dtype::i64, oar::dtype::i8,  oar::dtype::u8,
                                       oar::dtype::f16, oar::dtype::bf16};
  std::vector<DLDataType> moved = {oar::dtype::f32, oar::dtype::i64, oar::dtype::u8,
                                   oar::dtype::f16};
  if (g_quick) {
    reducible = {oar::dtype::f32, oar::dtype::i8, oar::dtype::bf16};
    moved = {oar::dtype::f32, oar::dtype::u8};
  }
  const oar::ReduceOp ops[] = {oar::ReduceOp::kSum, oar::ReduceOp::kProd, oar::ReduceOp::kMax,
                               oar::ReduceOp::kMin, oar::ReduceOp::kAvg};
  auto sizes = [](DLDataType t) {
    // 0, 1, odd, prime, and one of a few MiB (many staging chunks at
    // OAR_COMM_CHUNK_KB=64) for f32.
    std::vector<uint64_t> s = {0, 1, 9, 131, 4099};
    if (t == oar::dtype::f32) s.push_back((uint64_t(3) << 20) / 4 + 17);
    return s;
  };
  for (Kind kind : {Kind::kAllReduce, Kind::kReduce, Kind::kReduceScatter}) {
    for (DLDataType t : reducible) {
      for (oar::ReduceOp op : ops) {
        for (uint64_t count : sizes(t)) {
          if (count > 5000 && op != oar::ReduceOp::kSum && op != oar::ReduceOp::kAvg) continue;
          for (bool in_place : {false, true}) run_case(c, kind, t, op, count, in_place);
        }
      }
    }
  }
  // Tens of MiB: 20 MiB of f32 per rank (hundreds of staging chunks at
  // OAR_COMM_CHUNK_KB=64), all_reduce both ways and an all_gather.
  if (g_large) {
    const uint64_t large = (uint64_t(5) << 20) + 3;
    for (bool in_place : {false, true}) {
      run_case(c, Kind::kAllReduce, oar::dtype::f32, oar::ReduceOp::kSum, large, in_place);
    }
    run_case(c, Kind::kAllGather, oar::dtype::f32, oar::ReduceOp::kSum, large / 2, false);
  }
  for (Kind kind : {Kind::kBroadcast, Kind::kAllGather, Kind::kAllToAll}) {
    for (DLDataType t : moved) {
      for (uint64_t count : sizes(t)) {
        for (bool in_place : {false, true}) {
          run_case(c, kind, t, oar::ReduceOp::kSum, count, in_place);
        }
      }
    }
  }
}

// A ring of send/recv in a group (each rank sends to the next and receives
// from the previous), then a group of two collectives.
void groups(Ctx& c) {
  for (uint64_t count : {uint64_t(1), uint64_t(1000003)}) {
    const int next = (g_rank + 1) % g_size;
    const int prev = (g_rank + g_size - 1) % g_size;
    std::vector<int32_t> mine(count), theirs(count, -1);
    for (uint64_t i = 0; i < count; ++i) mine[i] = int32_t(i * 3 + uint64_t(g_rank) * 1000);
    oar::Buffer a = c.device->allocate(count * 4, c.stream);
    oar::Buffer b = c.device->allocate(count * 4, c.stream);
    c.stream->copy_from_host(a, 0, mine.data(), count * 4);
    oar::Communicator::group_begin();
    c.comm->recv(b, count, oar::dtype::i32, prev, *c.stream);  // recv first: needs the group
    c.comm->send(a, count, oar::dtype::i32, next, *c.stream);
    oar::Communicator::group_end();
    c.stream->copy_to_host(theirs.data(), b, 0, count * 4);
    c.comm->synchronize(*c.stream);
    ++g_checks;
    for (uint64_t i = 0; i < count; ++i) {
      if (theirs[i] != int32_t(i * 3 + uint64_t(prev) * 1000)) {
        failure("send/recv ring, count " + std::to_string(count) + ": element " +
                std::to_string(i) + " is " + std::to_string(theirs[i]));
        break;
      }
    }
  }
  // Two collectives fused in one group.
  std::vector<float> x(5, float(g_rank + 1)), sum(5), gathered(5 * g_size);
  oar::Buffer a = c.device->allocate(20, c.stream);
  oar::Buffer s = c.device->allocate(20, c.stream);
  oar::Buffer g = c.device->allocate(20 * g_size, c.stream);
  c.stream->copy_from_host(a, 0, x.data(), 20);
  oar::Communicator::group_begin();
  c.comm->all_reduce(a, s, 5, oar::dtype::f32, oar::ReduceOp::kSum, *c.stream);
  c.comm->all_gather(a, g, 5, oar::dtype::f32, *c.stream);
  oar::Communicator::group_end();
  c.stream->copy_to_host(sum.data(), s, 0, 20);
  c.stream->copy_to_host(gathered.data(), g, 0, 20 * g_size);
  c.comm->synchronize(*c.stream);
  ++g_checks;
  if (sum[4] != float(g_size * (g_size + 1) / 2))
    failure("grouped all_reduce: " + std::to_string(sum[4]));
  for (int r = 0; r < g_size; ++r) {
    if (gathered[5 * r] != float(r + 1)) failure("grouped all_gather: block " + std::to_string(r));
  }
}

// Each call must throw |code| before submitting anything.
void expect_error(const char* what, oar_status_t code, const std::function<void()>& call) {
  ++g_checks;
  try {
    call();
  } catch (const oar::Error& e) {
    if (e.code() != code) {
      failure(std::string(what) + ": threw " + oar::status_name(e.code()) + " (" + e.what() +
              "), expected " + oar::status_name(code));
    }
    return;
  }
  failure(std::string(what) + ": no error, expected " + oar::status_name(code));
}

void argument_errors(Ctx& c) {
  oar::Buffer a = c.device->allocate(64, c.stream);
  expect_error("root out of range", OAR_STATUS_INVALID_ARGUMENT,
               [&] { c.comm->broadcast(a, a, 4, oar::dtype::f32, g_size, *c.stream); });
  expect_error("range beyond the buffer", OAR_STATUS_OUT_OF_RANGE, [&] {
    c.comm->all_reduce(a, oar::BufferRef(a, 32), 9, oar::dtype::f32, oar::ReduceOp::kSum,
                       *c.stream);
  });
  expect_error("bool sum", OAR_STATUS_INVALID_ARGUMENT, [&] {
    c.comm->all_reduce(a, a, 4, oar::dtype::boolean, oar::ReduceOp::kSum, *c.stream);
  });
  expect_error("unknown op", OAR_STATUS_INVALID_ARGUMENT,
               [&] { c.comm->all_reduce(a, a, 4, oar::dtype::f32, oar::ReduceOp(9), *c.stream); });
  expect_error("empty communicator", OAR_STATUS_FAILED_PRECONDITION, [&] {
    oar::Communicator empty;
    empty.all_reduce(a, a, 4, oar::dtype::f32, oar::ReduceOp::kSum, *c.stream);
  });
  expect_error("group_end without begin", OAR_STATUS_FAILED_PRECONDITION,
               [&] { oar::Communicator::group_end(); });
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The last rank dies during a large all_reduce; the others report it.
int kill_mode(Ctx& c) {
  const uint64_t count = uint64_t(8) << 20;  // 32 MiB of f32
  oar::Buffer a = c.device->allocate(count * 4, c.stream);
  c.stream->fill(a, 0, 0, count * 4);
  c.comm->all_reduce(a, a, 1, oar::dtype::f32, oar::ReduceOp::kSum, *c.stream);
  c.comm->synchronize(*c.stream);  // everyone is up
  if (g_rank == g_size - 1) {
    c.comm->all_reduce(a, a, count, oar::dtype::f32, oar::ReduceOp::kSum, *c.stream);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::printf("VICTIM rank %d kills itself\n", g_rank);
    std::fflush(stdout);
    kill(getpid(), SIGKILL);
  }
  auto start = std::chrono::steady_clock::now();
  try {
    for (int i = 0; i < 1000; ++i) {
      c.comm->all_reduce(a, a, count, oar::dtype::f32, oar::ReduceOp::kSum, *c.stream);
      c.comm->synchronize(*c.stream);
    }
  } catch (const oar::Error& e) {
    std::printf("SURVIVOR rank %d seconds=%.2f code=%s: %s\n", g_rank, seconds_since(start),
                oar::status_name(e.code()), e.what());
    std::fflush(stdout);
    // MPI cannot finish this job cleanly (Open MPI 4 has no ULFM): leave
    // without MPI_Finalize. A program would call MPI_Abort here; the test
    // runs mpirun with --enable-recovery and lets every survivor report.
    _exit(3);
  }
  std::printf("NO ERROR rank %d\n", g_rank);
  return 1;
}

// Rank 0 aborts an all_reduce that rank 1 never joins.
int abort_mode(Ctx& c) {
  oar::Buffer a = c.device->allocate(4096, c.stream);
  c.stream->fill(a, 0, 0, 4096);
  if (g_rank == 0) {
    c.comm->all_reduce(a, a, 1024, oar::dtype::f32, oar::ReduceOp::kSum, *c.stream);
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      c.comm->abort();
    });
    auto start = std::chrono::steady_clock::now();
    expect_error("the aborted all_reduce", OAR_STATUS_ABORTED,
                 [&] { c.comm->synchronize(*c.stream); });
    aborter.join();
    if (seconds_since(start) > 5) failure("abort took " + std::to_string(seconds_since(start)));
    expect_error("all_reduce after abort", OAR_STATUS_ABORTED, [&] {
      c.comm->all_reduce(a, a, 4, oar::dtype::f32, oar::ReduceOp::kSum, *c.stream);
    });
    expect_error("check after abort", OAR_STATUS_ABORTED, [&] { c.comm->check(); });
    // The staged engine leaves the stream alone; the plugin path fails the
    // stream the aborted operation was on, like any failed work.
    if (std::string(c.comm->engine_name()) == "staged-mpi") c.stream->synchronize();
  }
  return 0;
}

}  // namespace

// Under OAR_VALIDATE=1: ranks that disagree on the count, then on the dtype,
// of an all_reduce all fail with INVALID_ARGUMENT naming the difference, and
// nothing is written.
void mismatch_mode(Ctx& c) {
  auto attempt = [&](oar::Communicator& comm, uint64_t count, DLDataType dtype, const char* what) {
    oar::Buffer a = c.device->allocate(64, c.stream);
    oar::Buffer b = c.device->allocate(64, c.stream);
    c.stream->fill(a, 0, 1, 64);
    c.stream->fill(b, 0, kPattern, 64);
    comm.all_reduce(a, b, count, dtype, oar::ReduceOp::kSum, *c.stream);
    ++g_checks;
    try {
      comm.synchronize(*c.stream);
      failure(std::string(what) + ": no error");
    } catch (const oar::Error& e) {
      if (e.code() != OAR_STATUS_INVALID_ARGUMENT ||
          std::string(e.what()).find("validation: the ranks disagree: rank 1 issued all_reduce") ==
              std::string::npos) {
        failure(std::string(what) + ": " + e.what());
      }
    }
    std::vector<uint8_t> got(64);
    c.stream->copy_to_host(got.data(), b, 0, 64);
    c.stream->synchronize();
    if (got != std::vector<uint8_t>(64, kPattern))
      failure(std::string(what) + ": recv was written");
  };
  attempt(*c.comm, g_rank == 0 ? 10 : 12, oar::dtype::f32, "mismatched counts");
  // The first communicator failed for good; a second one for the dtypes.
  oar::Communicator second = oar::Communicator::from_mpi(*c.device, MPI_COMM_WORLD);
  attempt(second, 10, g_rank == 0 ? oar::dtype::f32 : oar::dtype::i32, "mismatched dtypes");
}

// Runs |mode| on one rank; returns its failure count.
int run_rank(Ctx& c, const std::string& mode) {
  auto start = std::chrono::steady_clock::now();
  try {
    if (mode == "kill") return kill_mode(c);
    if (mode == "abort") {
      g_failures += abort_mode(c);
    } else if (mode == "mismatch") {
      mismatch_mode(c);
    } else {
      if (c.comm->rank() != g_rank || c.comm->size() != g_size) failure("rank or size is wrong");
      all_collectives(c);
      groups(c);
      argument_errors(c);
    }
  } catch (const std::exception& e) {
    failure(std::string("exception: ") + e.what());
  }
  std::printf("rank %d on %s (%s): %d checks, %d failures, %.1f s\n", g_rank,
              c.device->name().c_str(), c.comm->engine_name(), g_checks, g_failures,
              seconds_since(start));
  return g_failures;
}

// A runtime destroyed before its communicators releases them (in the
// ABI's order: before device_close); they then refuse every call.
template <typename Make>
int released_with_runtime(const std::string& manifest, const std::string& plugin, Make make) {
  std::vector<oar::Communicator> comms;
  std::vector<oar::Buffer> buffers;
  {
    oar::RuntimeOptions options;
    options.plugin_files = {manifest};
    oar::Runtime runtime(options);
    comms = make(runtime);
    for (auto& comm : comms) buffers.push_back(comm.device().allocate(64));
  }
  int failures = 0;
  for (size_t i = 0; i < comms.size(); ++i) {
    try {
      comms[i].check();
      ++failures;
      std::fprintf(stderr, "FAIL: a communicator whose runtime is gone still works\n");
    } catch (const oar::Error& e) {
      if (e.code() != OAR_STATUS_FAILED_PRECONDITION) {
        ++failures;
        std::fprintf(stderr, "FAIL: released communicator: %s\n", e.what());
      }
    }
  }
  (void)plugin;
  return failures;  // the communicators and buffers are destroyed after their runtime
}

int forgotten_by_the_runtime(const std::string& manifests, const std::string& plugin, int ranks) {
  return released_with_runtime(manifests + "/" + plugin + ".json", plugin, [&](oar::Runtime& rt) {
    std::vector<oar::Device*> devices;
    for (int r = 0; r < ranks; ++r) devices.push_back(&rt.device(plugin + ":" + std::to_string(r)));
    return oar::Communicator::create_local(devices);
  });
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> names;
  for (size_t at = 0; at <= list.size();) {
    size_t comma = list.find(',', at);
    if (comma == std::string::npos) comma = list.size();
    names.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  return names;
}

// K devices of this process from the plugins of |plugins| in turn: local
// rank i on plugins[i % P], device i / P of it.
std::vector<oar::Device*> local_devices(oar::Runtime& runtime, const std::string& plugins, int k) {
  const std::vector<std::string> names = split(plugins);
  std::vector<oar::Device*> devices;
  for (int i = 0; i < k; ++i) {
    const std::string& name = names[size_t(i) % names.size()];
    devices.push_back(&runtime.device(name + ":" + std::to_string(size_t(i) / names.size())));
  }
  return devices;
}

oar::RuntimeOptions options_for(const std::string& manifests, const std::string& plugins) {
  oar::RuntimeOptions options;
  for (const std::string& name : split(plugins)) {
    options.plugin_files.push_back(manifests + "/" + name + ".json");
  }
  return options;
}

// --local N: N ranks on devices of this process (local_devices), joined by
// Communicator::create_local (the plugin's own slots where every device has
// them, else the core's staged engine meeting in this process), a thread each.
int run_local(const std::string& manifests, const std::string& plugin, int ranks,
              const std::string& mode) {
  g_size = ranks;
  oar::Runtime runtime(options_for(manifests, plugin));
  std::vector<oar::Device*> devices = local_devices(runtime, plugin, ranks);
  std::vector<oar::Communicator> comms = oar::Communicator::create_local(devices);
  std::vector<int> failures(ranks, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      g_rank = r;
      oar::Stream stream = devices[r]->create_stream();
      Ctx c{devices[r], &stream, &comms[r]};
      failures[r] = run_rank(c, mode);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const bool native = std::string(comms[0].engine_name()).rfind("plugin:", 0) == 0;
  if (mode == "all" && native) failures[0] += forgotten_by_the_runtime(manifests, plugin, ranks);
  int total = 0;
  for (int f : failures) total += f;
  return total == 0 ? 0 : 1;
}

// --per-process K under mpirun: K devices in each process (local_devices),
// joined by Communicator::from_mpi(devices, MPI_COMM_WORLD): rank p * K + i.
int run_per_process(const std::string& manifests, const std::string& plugins, int k) {
  int process = 0, processes = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  g_size = processes * k;
  std::vector<int> failures(size_t(k), 0);
  {
    oar::Runtime runtime(options_for(manifests, plugins));
    std::vector<oar::Device*> devices = local_devices(runtime, plugins, k);
    std::vector<oar::Communicator> comms = oar::Communicator::from_mpi(devices, MPI_COMM_WORLD);
    std::vector<std::thread> threads;
    for (int i = 0; i < k; ++i) {
      threads.emplace_back([&, i] {
        g_rank = process * k + i;
        oar::Stream stream = devices[size_t(i)]->create_stream();
        Ctx c{devices[size_t(i)], &stream, &comms[size_t(i)]};
        failures[size_t(i)] = run_rank(c, "all");
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  int mine = 0, total = 0;
  for (int f : failures) mine += f;
  MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  std::string manifests, plugins = "cpu", mode = "all";
  int local = 0, per_process = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    if (key == "--manifests") manifests = argv[i + 1];
    if (key == "--plugins") plugins = argv[i + 1];
    if (key == "--mode") mode = argv[i + 1];
    if (key == "--local") local = std::atoi(argv[i + 1]);
    if (key == "--per-process") per_process = std::atoi(argv[i + 1]);
    if (key == "--quick") g_quick = std::string(argv[i + 1]) == "1";
    if (key == "--large") g_large = std::string(argv[i + 1]) == "1";
  }
  if (local > 0) return run_local(manifests, plugins, local, mode);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (per_process > 0) return run_per_process(manifests, plugins, per_process);
  const std::vector<std::string> names = split(plugins);
  const std::string plugin = names[size_t(g_rank) % names.size()];
  {
    oar::RuntimeOptions options;
    options.plugin_files = {manifests + "/" + plugin + ".json"};
    oar::Runtime runtime(options);
    oar::Device& device = runtime.device(plugin);
    oar::Stream stream = device.create_stream();
    // Rank 0 makes the id and MPI broadcasts it; with more than two ranks the
    // full suite joins through MPI_COMM_WORLD instead, to cover from_mpi.
    oar::CommUniqueId id;
    if (g_rank == 0) id = oar::Communicator::unique_id();
    MPI_Bcast(id.bytes.data(), int(id.bytes.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
    oar::Communicator comm = mode == "all" && g_size > 2
                                 ? oar::Communicator::from_mpi(device, MPI_COMM_WORLD)
                                 : oar::Communicator::create(device, g_size, g_rank, id);
    Ctx c{&device, &stream, &comm};
    run_rank(c, mode);
  }
  if (mode == "all") {
    g_failures +=
        released_with_runtime(manifests + "/" + plugin + ".json", plugin, [&](oar::Runtime& rt) {
          std::vector<oar::Communicator> comms;
          comms.push_back(oar::Communicator::from_mpi(rt.device(plugin), MPI_COMM_WORLD));
          return comms;
        });
  }
  int failures = 0;
  if (mode != "abort") {
    MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  } else {
    failures = g_failures;
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
