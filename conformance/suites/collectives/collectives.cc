// The collectives area: the cases, the worker that runs them on each rank,
// and the launcher that starts the ranks and merges what they report. See
// collectives.h and docs/conformance.md ("Collectives").
#include "conformance/suites/collectives/collectives.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <mpi.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "conformance/harness/expectations.h"
#include "conformance/suites/ops/compare.h"
#include "oar/communicator.hpp"

#ifndef OAR_CONFORM_MPIEXEC
#define OAR_CONFORM_MPIEXEC "mpiexec"
#endif

namespace oar::conformance {
namespace {

// --- the cases -------------------------------------------------------------------

enum class Kind {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kRing,
  kGroup,
  kOrder
};

const char* kind_name(Kind kind) {
  static const char* names[] = {"all_reduce",     "broadcast",      "reduce",
                                "all_gather",     "reduce_scatter", "all_to_all",
                                "send_recv_ring", "group",          "stream_order"};
  return names[int(kind)];
}

constexpr int kNoOp = -1;
const char* op_name(int op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < 5 ? names[op] : "";
}

struct Case {
  std::string id;
  Kind kind = Kind::kAllReduce;
  DLDataType dtype{};
  int op = kNoOp;
  uint64_t count = 0;
  bool in_place = false;
};

// Every dtype collectives move and reduce that the device claims: f32, the
// integers (i32, i64 and the narrow i8, u8 need no claim), f16, bf16, f64 when
// claimed.
std::vector<DLDataType> dtypes_of(const oar_device_properties_t& properties) {
  std::vector<DLDataType> types = {dtype::f32, dtype::i32, dtype::i64, dtype::i8, dtype::u8};
  if (properties.dtypes & OAR_DTYPE_SUPPORT_F16) types.push_back(dtype::f16);
  if (properties.dtypes & OAR_DTYPE_SUPPORT_BF16) types.push_back(dtype::bf16);
  if (properties.dtypes & OAR_DTYPE_SUPPORT_F64) types.push_back(dtype::f64);
  return types;
}

// 0, 1, odd, prime; 65537 (prime, 256 KiB of f32: several staging chunks per
// block for the multi-block collectives) for f32; and one case of tens of MiB.
constexpr uint64_t kSmallSizes[] = {0, 1, 9, 131};
constexpr uint64_t kMidSize = 65537;
constexpr uint64_t kLargeSize = 5242883;  // prime; 20 MiB of f32

std::vector<Case> make_cases(const oar_device_properties_t& properties, const std::string& path,
                             int ranks) {
  std::vector<Case> cases;
  auto add = [&](Kind kind, DLDataType t, int op, uint64_t count, bool in_place) {
    Case c;
    c.kind = kind;
    c.dtype = t;
    c.op = op;
    c.count = count;
    c.in_place = in_place;
    c.id = fmt::format("collectives/{}/{}/{}/{}n{}/{}", path, kind_name(kind), dtype_name(t),
                       op == kNoOp ? "" : std::string(op_name(op)) + "/", count,
                       in_place ? "in_place" : "out_of_place");
    cases.push_back(c);
  };
  const std::vector<DLDataType> types = dtypes_of(properties);
  for (Kind kind : {Kind::kAllReduce, Kind::kReduce, Kind::kReduceScatter}) {
    for (DLDataType t : types) {
      for (int op = OAR_REDUCE_OP_SUM; op <= OAR_REDUCE_OP_AVG; ++op) {
        for (uint64_t count : kSmallSizes) {
          for (bool in_place : {false, true}) add(kind, t, op, count, in_place);
        }
      }
    }
    for (bool in_place : {false, true})
      add(kind, dtype::f32, OAR_REDUCE_OP_SUM, kMidSize, in_place);
  }
  for (Kind kind : {Kind::kBroadcast, Kind::kAllGather, Kind::kAllToAll}) {
    for (DLDataType t : types) {
      for (uint64_t count : kSmallSizes) {
        for (bool in_place : {false, true}) add(kind, t, kNoOp, count, in_place);
      }
    }
    for (bool in_place : {false, true}) add(kind, dtype::f32, kNoOp, kMidSize, in_place);
  }
  add(Kind::kAllReduce, dtype::f32, OAR_REDUCE_OP_SUM, kLargeSize, false);
  if (ranks >= 2) {
    for (DLDataType t : types) {
      for (uint64_t count : {uint64_t(1), uint64_t(131), kMidSize}) {
        Case c;
        c.kind = Kind::kRing;
        c.dtype = t;
        c.count = count;
        c.id = fmt::format("collectives/{}/send_recv_ring/{}/n{}", path, dtype_name(t), count);
        cases.push_back(c);
      }
    }
  }
  Case order;
  order.kind = Kind::kOrder;
  order.dtype = dtype::u8;
  order.count = uint64_t(1) << 20;
  order.op = OAR_REDUCE_OP_SUM;
  order.id = "collectives/" + path + "/stream_order/all_reduce/u8";
  cases.push_back(order);
  Case group;
  group.kind = Kind::kGroup;
  group.dtype = dtype::f32;
  group.count = 131;
  group.id = "collectives/" + path + "/group/all_reduce+all_gather+broadcast/f32";
  cases.push_back(group);
  return cases;
}

std::vector<Case> selected_cases(const oar_device_properties_t& properties, const std::string& path,
                                 int ranks, const std::string& filter) {
  std::vector<Case> cases;
  for (Case& c : make_cases(properties, path, ranks)) {
    if (matches_filter(filter, c.id)) cases.push_back(std::move(c));
  }
  return cases;
}

// --- values ----------------------------------------------------------------------

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t seed_of(const std::string& id) {
  uint64_t h = 1469598103934665603ull;
  for (char ch : id) h = (h ^ uint8_t(ch)) * 1099511628211ull;
  return h;
}

bool is_float(DLDataType t) { return t.code == kDLFloat || t.code == kDLBfloat; }

// Rank |rank|'s element |i| of block |b| for a reduction: integers small
// enough that sums and products never overflow (i64 also uses the upper
// bits), floats that round, extremes for max and min.
void fill_reduction_input(HostTensor& x, const Case& c, int rank, uint64_t blocks) {
  const uint64_t seed = seed_of(c.id) ^ (uint64_t(rank) << 48);
  const int64_t n = x.numel();
  for (int64_t k = 0; k < n; ++k) {
    const uint64_t h = mix(seed ^ uint64_t(k));
    const bool narrow = c.dtype == dtype::i8 || c.dtype == dtype::u8;
    const bool is_unsigned = c.dtype == dtype::u8;
    switch (c.op) {
      case OAR_REDUCE_OP_SUM:
      case OAR_REDUCE_OP_AVG:
        if (is_float(c.dtype)) {
          x.set(k, (double(h % 20001) - 10000.0) / 4096.0);
        } else if (narrow) {
          x.set_int(k, is_unsigned ? int64_t(h % 21) : int64_t(h % 21) - 10);
        } else if (c.dtype == dtype::i64) {
          x.set_int(k, (int64_t(h % 2001) - 1000) +
                           (int64_t((h >> 20) % 2001) - 1000) * (int64_t(1) << 33));
        } else {
          x.set_int(k, int64_t(h % 200001) - 100000);
        }
        break;
      case OAR_REDUCE_OP_PROD:
        if (is_float(c.dtype)) {
          x.set(k, 0.5 + double(h % 1001) / 1000.0);
        } else {
          // 1, 2 (on the first four ranks) or -1: products stay small.
          const int pick = int(h % 3);
          x.set_int(k, pick == 0 ? 1 : pick == 1 ? (rank < 4 ? 2 : 1) : is_unsigned ? 1 : -1);
        }
        break;
      default:  // max, min: the whole range, infinities among the floats
        if (is_float(c.dtype)) {
          double v = (double(h % 2001) - 1000.0) / 8.0;
          if (h % 97 == 5) v = rank % 2 == 0 ? INFINITY : -INFINITY;
          x.set(k, v);
        } else if (c.dtype == dtype::i8) {
          x.set_int(k, int8_t(h));
        } else if (c.dtype == dtype::u8) {
          x.set_int(k, uint8_t(h));
        } else if (c.dtype == dtype::i32) {
          x.set_int(k, int32_t(h));
        } else {
          x.set_int(k, int64_t(h));
        }
        break;
    }
  }
  (void)blocks;
}

// Arbitrary bit patterns (NaN payloads, signed zeros, subnormals): what moves
// must carry bit for bit.
void fill_bytes(std::vector<uint8_t>& bytes, uint64_t seed) {
  for (size_t i = 0; i < bytes.size(); i += 8) {
    const uint64_t h = mix(seed ^ i);
    std::memcpy(bytes.data() + i, &h, std::min<size_t>(8, bytes.size() - i));
  }
}

HostTensor tensor(uint64_t count, DLDataType t) { return HostTensor::zeros({int64_t(count)}, t); }

// One step of reduction |op| (avg sums; the caller divides at the end).
template <typename T>
T combine(int32_t op, T v, T x) {
  switch (op) {
    case OAR_REDUCE_OP_PROD:
      return v * x;
    case OAR_REDUCE_OP_MAX:
      return std::max(v, x);
    case OAR_REDUCE_OP_MIN:
      return std::min(v, x);
    default:
      return v + x;
  }
}

// The reduction of every rank's block |b| (|inputs|[rank] holds all blocks),
// and the magnitude of the terms for the tolerance.
void reduce_reference(const Case& c, const std::vector<HostTensor>& inputs, uint64_t b,
                      HostTensor& out, HostTensor& magnitude) {
  const int64_t n = int64_t(c.count);
  const int ranks = int(inputs.size());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = int64_t(b) * n + i;
    if (!is_float(c.dtype)) {
      int64_t v = inputs[0].get_int(k);
      for (int r = 1; r < ranks; ++r) {
        v = combine(c.op, v, inputs[size_t(r)].get_int(k));
      }
      if (c.op == OAR_REDUCE_OP_AVG) v /= ranks;  // truncates toward zero
      out.set_int(i, v);
      magnitude.set(i, 0);
      continue;
    }
    double v = inputs[0].get(k);
    double m = std::fabs(v);
    for (int r = 1; r < ranks; ++r) {
      const double x = inputs[size_t(r)].get(k);
      m += std::fabs(x);
      v = combine(c.op, v, x);
    }
    if (c.op == OAR_REDUCE_OP_AVG) {
      v /= ranks;
      m /= ranks;
    }
    out.set(i, v);
    magnitude.set(i, m);
  }
}

Tolerance reduction_tolerance(const Case& c, int ranks) {
  switch (c.op) {
    case OAR_REDUCE_OP_MAX:
    case OAR_REDUCE_OP_MIN:
      return tolerance_for(c.dtype, Family::kExact);
    case OAR_REDUCE_OP_PROD:
      return tolerance_for(c.dtype, Family::kProduct, ranks);
    default:
      return tolerance_for(c.dtype, Family::kAccumulate);
  }
}

// --- one rank running the cases ---------------------------------------------------

constexpr uint64_t kGuard = 64;
constexpr uint8_t kPattern = 0xa5;

struct Rank {
  int rank = 0;
  int size = 1;
  Device* device = nullptr;
  Stream* stream = nullptr;
  Communicator* comm = nullptr;
};

std::string where_bytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                        uint64_t from, uint64_t to, const char* region) {
  for (uint64_t at = from; at < to; ++at) {
    if (got[at] != want[at]) {
      return fmt::format("{}: byte {} is 0x{:02x}, expected 0x{:02x}", region, at - from, got[at],
                         want[at]);
    }
  }
  return "";
}

// The reduction collectives: all_reduce, reduce, reduce_scatter.
void run_reduction(Rank& r, const Case& c) {
  const uint64_t es = dtype_size(c.dtype);
  const uint64_t n = uint64_t(r.size);
  const uint64_t bytes = c.count * es;
  const int root = r.size - 1;
  const uint64_t in_blocks = c.kind == Kind::kReduceScatter ? n : 1;
  std::vector<HostTensor> inputs;
  for (int q = 0; q < r.size; ++q) {
    inputs.push_back(tensor(in_blocks * c.count, c.dtype));
    fill_reduction_input(inputs.back(), c, q, in_blocks);
  }
  const std::vector<uint8_t>& in = inputs[size_t(r.rank)].bytes;
  const uint64_t dst_bytes = (c.in_place ? in_blocks : 1) * bytes;
  std::vector<uint8_t> image(dst_bytes + 2 * kGuard, kPattern);
  uint64_t recv_at = kGuard;
  if (c.in_place && c.kind == Kind::kReduceScatter) recv_at = kGuard + uint64_t(r.rank) * bytes;
  if (c.in_place && !in.empty()) std::memcpy(image.data() + kGuard, in.data(), in.size());
  Buffer dst = r.device->allocate(image.size(), r.stream);
  Buffer src = r.device->allocate(in.size() + kGuard, r.stream);
  r.stream->copy_from_host(dst, 0, image.data(), image.size());
  if (!c.in_place && !in.empty()) r.stream->copy_from_host(src, kGuard, in.data(), in.size());
  BufferRef send = c.in_place ? BufferRef(dst, kGuard) : BufferRef(src, kGuard);
  BufferRef recv(dst, recv_at);
  const ReduceOp op = ReduceOp(c.op);
  switch (c.kind) {
    case Kind::kAllReduce:
      r.comm->all_reduce(send, recv, c.count, c.dtype, op, *r.stream);
      break;
    case Kind::kReduce:
      r.comm->reduce(send, recv, c.count, c.dtype, op, root, *r.stream);
      break;
    default:
      r.comm->reduce_scatter(send, recv, c.count, c.dtype, op, *r.stream);
      break;
  }
  std::vector<uint8_t> got(image.size());
  r.stream->copy_to_host(got.data(), dst, 0, got.size());
  r.comm->synchronize(*r.stream);

  const bool writes = c.kind != Kind::kReduce || r.rank == root;
  const uint64_t recv_end = writes ? recv_at + bytes : recv_at;
  // Outside the result: the guards and, in place, the other blocks.
  std::string problem = where_bytes(got, image, 0, recv_at, "before the result");
  if (problem.empty()) problem = where_bytes(got, image, recv_end, got.size(), "after the result");
  if (!problem.empty()) fail(problem);
  if (!writes) return;
  HostTensor expected = tensor(c.count, c.dtype);
  HostTensor magnitude = tensor(c.count, dtype::f64);
  reduce_reference(c, inputs, c.kind == Kind::kReduceScatter ? uint64_t(r.rank) : 0, expected,
                   magnitude);
  HostTensor result = tensor(c.count, c.dtype);
  if (bytes > 0) std::memcpy(result.bytes.data(), got.data() + recv_at, bytes);
  const Tolerance tolerance = reduction_tolerance(c, r.size);
  expect_close(c.id, 0, result, expected, tolerance,
               c.op == OAR_REDUCE_OP_SUM || c.op == OAR_REDUCE_OP_AVG ? &magnitude : nullptr);
}

// broadcast, all_gather, all_to_all: bit patterns moved exactly.
void run_move(Rank& r, const Case& c) {
  const uint64_t es = dtype_size(c.dtype);
  const uint64_t n = uint64_t(r.size);
  const uint64_t bytes = c.count * es;
  const int root = r.size - 1;
  const uint64_t in_blocks = c.kind == Kind::kAllToAll ? n : 1;
  const uint64_t out_blocks = c.kind == Kind::kBroadcast ? 1 : n;
  std::vector<std::vector<uint8_t>> inputs(r.size);
  for (int q = 0; q < r.size; ++q) {
    inputs[size_t(q)].resize(in_blocks * bytes);
    fill_bytes(inputs[size_t(q)], seed_of(c.id) ^ (uint64_t(q) << 48));
  }
  const std::vector<uint8_t>& in = inputs[size_t(r.rank)];
  std::vector<uint8_t> image(out_blocks * bytes + 2 * kGuard, kPattern);
  uint64_t in_at = kGuard;
  if (c.in_place && c.kind == Kind::kAllGather) in_at = kGuard + uint64_t(r.rank) * bytes;
  if (c.in_place && !in.empty()) std::memcpy(image.data() + in_at, in.data(), in.size());
  Buffer dst = r.device->allocate(image.size(), r.stream);
  Buffer src = r.device->allocate(in.size() + kGuard, r.stream);
  r.stream->copy_from_host(dst, 0, image.data(), image.size());
  if (!c.in_place && !in.empty()) r.stream->copy_from_host(src, kGuard, in.data(), in.size());
  BufferRef send = c.in_place ? BufferRef(dst, in_at) : BufferRef(src, kGuard);
  BufferRef recv(dst, kGuard);
  switch (c.kind) {
    case Kind::kBroadcast:
      r.comm->broadcast(send, recv, c.count, c.dtype, root, *r.stream);
      break;
    case Kind::kAllGather:
      r.comm->all_gather(send, recv, c.count, c.dtype, *r.stream);
      break;
    default:
      r.comm->all_to_all(send, recv, c.count, c.dtype, *r.stream);
      break;
  }
  std::vector<uint8_t> got(image.size());
  r.stream->copy_to_host(got.data(), dst, 0, got.size());
  r.comm->synchronize(*r.stream);
  std::vector<uint8_t> expected = image;
  uint8_t* out = expected.data() + kGuard;
  for (uint64_t b = 0; b < out_blocks && bytes > 0; ++b) {
    const uint8_t* from = c.kind == Kind::kBroadcast ? inputs[size_t(root)].data()
                          : c.kind == Kind::kAllGather
                              ? inputs[b].data()
                              : inputs[b].data() + uint64_t(r.rank) * bytes;  // block rank of b
    std::memcpy(out + b * bytes, from, bytes);
  }
  std::string problem = where_bytes(got, expected, 0, kGuard, "the guard before the result");
  if (problem.empty()) {
    for (uint64_t b = 0; b < out_blocks && problem.empty(); ++b) {
      const uint64_t at = kGuard + b * bytes;
      for (uint64_t k = at; k < at + bytes; ++k) {
        if (got[k] != expected[k]) {
          problem = fmt::format(
              "block {} (from rank {}): element {} differs (byte {}: 0x{:02x}, "
              "expected 0x{:02x})",
              b, c.kind == Kind::kBroadcast ? root : int(b), (k - at) / es, k - at, got[k],
              expected[k]);
          break;
        }
      }
    }
  }
  if (problem.empty()) {
    problem = where_bytes(got, expected, kGuard + out_blocks * bytes, got.size(),
                          "the guard after the result");
  }
  if (!problem.empty()) fail(problem);
}

// Each rank sends to the next and receives from the previous, in one group.
void run_ring(Rank& r, const Case& c) {
  const uint64_t bytes = c.count * dtype_size(c.dtype);
  const int next = (r.rank + 1) % r.size;
  const int prev = (r.rank + r.size - 1) % r.size;
  std::vector<uint8_t> mine(bytes), theirs(bytes);
  fill_bytes(mine, seed_of(c.id) ^ (uint64_t(r.rank) << 48));
  fill_bytes(theirs, seed_of(c.id) ^ (uint64_t(prev) << 48));
  std::vector<uint8_t> image(bytes + 2 * kGuard, kPattern);
  Buffer a = r.device->allocate(bytes, r.stream);
  Buffer b = r.device->allocate(image.size(), r.stream);
  r.stream->copy_from_host(a, 0, mine.data(), bytes);
  r.stream->copy_from_host(b, 0, image.data(), image.size());
  Communicator::group_begin();
  r.comm->recv(BufferRef(b, kGuard), c.count, c.dtype, prev, *r.stream);
  r.comm->send(a, c.count, c.dtype, next, *r.stream);
  Communicator::group_end();
  std::vector<uint8_t> got(image.size());
  r.stream->copy_to_host(got.data(), b, 0, got.size());
  r.comm->synchronize(*r.stream);
  std::memcpy(image.data() + kGuard, theirs.data(), bytes);
  std::string problem = where_bytes(got, image, 0, kGuard, "the guard before the received data");
  if (problem.empty()) {
    problem = where_bytes(got, image, kGuard, kGuard + bytes,
                          fmt::format("the data received from rank {}", prev).c_str());
  }
  if (problem.empty())
    problem = where_bytes(got, image, kGuard + bytes, got.size(), "the guard after it");
  if (!problem.empty()) fail(problem);
}

// Three collectives of different kinds fused in one group.
void run_group(Rank& r, const Case& c) {
  const uint64_t n = c.count;
  std::vector<float> x(n), sum(n), gathered(n * uint64_t(r.size)), root_data(n);
  for (uint64_t i = 0; i < n; ++i) x[i] = float(i % 7) + float(r.rank + 1);
  for (uint64_t i = 0; i < n; ++i) root_data[i] = -float(i);
  Buffer a = r.device->allocate(n * 4, r.stream);
  Buffer s = r.device->allocate(n * 4, r.stream);
  Buffer g = r.device->allocate(n * 4 * uint64_t(r.size), r.stream);
  Buffer bc = r.device->allocate(n * 4, r.stream);
  r.stream->copy_from_host(a, 0, x.data(), n * 4);
  if (r.rank == 0) r.stream->copy_from_host(bc, 0, root_data.data(), n * 4);
  Communicator::group_begin();
  r.comm->all_reduce(a, s, n, dtype::f32, ReduceOp::kSum, *r.stream);
  r.comm->all_gather(a, g, n, dtype::f32, *r.stream);
  r.comm->broadcast(bc, bc, n, dtype::f32, 0, *r.stream);
  Communicator::group_end();
  std::vector<float> got_bc(n);
  r.stream->copy_to_host(sum.data(), s, 0, n * 4);
  r.stream->copy_to_host(gathered.data(), g, 0, gathered.size() * 4);
  r.stream->copy_to_host(got_bc.data(), bc, 0, n * 4);
  r.comm->synchronize(*r.stream);
  for (uint64_t i = 0; i < n; ++i) {
    float want = 0;
    for (int q = 0; q < r.size; ++q) want += float(i % 7) + float(q + 1);
    if (sum[i] != want)
      fail(fmt::format("all_reduce in the group: element {} is {}, expected {}", i, sum[i], want));
    for (int q = 0; q < r.size; ++q) {
      const float g_want = float(i % 7) + float(q + 1);
      if (gathered[uint64_t(q) * n + i] != g_want) {
        fail(fmt::format("all_gather in the group: block {} element {} is {}, expected {}", q, i,
                         gathered[uint64_t(q) * n + i], g_want));
      }
    }
    if (got_bc[i] != root_data[i]) {
      fail(fmt::format("broadcast in the group: element {} is {}, expected {}", i, got_bc[i],
                       root_data[i]));
    }
  }
}

// Stream order both ways: the all_reduce must wait for ~50 MiB of fills
// queued before it (the last one writes its input), and a copy and a fill
// queued after it must wait for its result.
void run_order(Rank& r, const Case& c) {
  const uint64_t n = c.count;
  constexpr uint64_t kBusy = uint64_t(16) << 20;
  Buffer busy = r.device->allocate(kBusy, r.stream);
  Buffer src = r.device->allocate(n, r.stream);
  Buffer dst = r.device->allocate(n, r.stream);
  Buffer kept = r.device->allocate(n, r.stream);
  r.stream->fill(src, 0, 0, n);
  r.stream->fill(dst, 0, 0, n);
  r.comm->synchronize(*r.stream);
  for (int i = 0; i < 3; ++i) r.stream->fill(busy, 0, uint8_t(i), kBusy);
  r.stream->fill(src, 0, uint8_t(r.rank + 1), n);
  r.comm->all_reduce(src, dst, n, c.dtype, ReduceOp::kSum, *r.stream);
  r.stream->copy(kept, 0, dst, 0, n);
  r.stream->fill(dst, 0, 0xee, n);
  std::vector<uint8_t> got(n);
  r.stream->copy_to_host(got.data(), kept, 0, n);
  r.comm->synchronize(*r.stream);
  const uint8_t want = uint8_t(r.size * (r.size + 1) / 2);
  for (uint64_t i = 0; i < n; ++i) {
    if (got[i] == want) continue;
    fail(fmt::format("element {} is {}, expected {} (the sum of the ranks' fills){}", i,
                     int(got[i]), int(want),
                     got[i] == 0xee ? ": the fill queued after the all_reduce ran before it "
                                      "finished"
                     : got[i] == 0  ? ": the all_reduce ran before the fills queued before it"
                                    : ""));
  }
}

void run_case(Rank& r, const Case& c) {
  switch (c.kind) {
    case Kind::kOrder:
      return run_order(r, c);
    case Kind::kAllReduce:
    case Kind::kReduce:
    case Kind::kReduceScatter:
      return run_reduction(r, c);
    case Kind::kRing:
      return run_ring(r, c);
    case Kind::kGroup:
      return run_group(r, c);
    default:
      return run_move(r, c);
  }
}

// One rank's event file: a line per event, flushed, so that the launcher sees
// which case a crash or a hang interrupted.
class EventFile {
 public:
  explicit EventFile(const std::string& path) : file_(std::fopen(path.c_str(), "w")) {}
  ~EventFile() {
    if (file_ != nullptr) std::fclose(file_);
  }
  void write(const nlohmann::json& event) {
    if (file_ == nullptr) return;
    std::fputs(
        (event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(),
        file_);
    std::fflush(file_);
  }

 private:
  std::FILE* file_;
};

void run_rank(Rank& r, const std::vector<Case>& cases, const std::string& out) {
  EventFile events(fmt::format("{}.rank{}", out, r.rank));
  for (const Case& c : cases) {
    events.write({{"event", "start"}, {"id", c.id}});
    const auto started = std::chrono::steady_clock::now();
    Status status = Status::kPassed;
    std::string message;
    try {
      run_case(r, c);
    } catch (const TestSkip& e) {
      status = Status::kSkipped;
      message = e.what();
    } catch (const std::exception& e) {
      status = Status::kFailed;
      message = e.what();
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    events.write({{"event", "result"},
                  {"id", c.id},
                  {"status", status_name(status)},
                  {"message", message},
                  {"ms", ms}});
  }
  events.write({{"event", "done"}});
}

RuntimeOptions worker_runtime_options(const std::string& plugin, bool validate) {
  RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = {plugin};
  options.validate = validate;
  return options;
}

Device& device_of(Runtime& runtime, int index) {
  for (Device* device : runtime.devices()) {
    if (device->index() == index) return *device;
  }
  throw Error(OAR_STATUS_NOT_FOUND, fmt::format("the plugin has no device {}", index));
}

}  // namespace

// --- the worker ---------------------------------------------------------------------

int collectives_worker_main(int argc, char** argv) {
  std::string plugin, path = "staged", out, filter;
  int device = 0, local = 0;
  bool validate = false;
  for (int i = 2; i < argc; ++i) {
    const std::string key = argv[i];
    const bool has_value = i + 1 < argc;
    if (key == "--validate") {
      validate = true;
    } else if (has_value && key == "--plugin") {
      plugin = argv[++i];
    } else if (has_value && key == "--device") {
      device = std::atoi(argv[++i]);
    } else if (has_value && key == "--path") {
      path = argv[++i];
    } else if (has_value && key == "--out") {
      out = argv[++i];
    } else if (has_value && key == "--filter") {
      filter = argv[++i];
    } else if (has_value && key == "--local") {
      local = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "oar-conform collectives-worker: unknown argument %s\n", key.c_str());
      return 2;
    }
  }
  if (plugin.empty() || out.empty()) {
    std::fprintf(stderr, "oar-conform collectives-worker: --plugin and --out are required\n");
    return 2;
  }
  try {
    if (local > 0) {
      // The plugin's own slots: |local| devices of this process, a thread each.
      Runtime runtime(worker_runtime_options(plugin, validate));
      std::vector<Device*> devices;
      for (int q = 0; q < local; ++q) devices.push_back(&device_of(runtime, q));
      const std::vector<Case> cases = selected_cases(devices[0]->properties(), path, local, filter);
      std::vector<Communicator> comms = Communicator::create_local(devices);
      if (std::string(comms[0].engine_name()).rfind("plugin:", 0) != 0) {
        std::fprintf(stderr,
                     "oar-conform collectives-worker: create_local chose the engine %s, not the "
                     "plugin's slots (is OAR_COMM_NATIVE=0 set?)\n",
                     comms[0].engine_name());
        return 1;
      }
      std::vector<std::thread> threads;
      for (int q = 0; q < local; ++q) {
        threads.emplace_back([&, q] {
          Stream stream = devices[size_t(q)]->create_stream();
          Rank r{q, local, devices[size_t(q)], &stream, &comms[size_t(q)]};
          run_rank(r, cases, out);
        });
      }
      for (std::thread& thread : threads) thread.join();
      return 0;
    }
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    {
      Runtime runtime(worker_runtime_options(plugin, validate));
      Device& dev = device_of(runtime, device);
      const std::vector<Case> cases = selected_cases(dev.properties(), path, size, filter);
      Stream stream = dev.create_stream();
      Communicator comm = Communicator::from_mpi(dev, MPI_COMM_WORLD);
      Rank r{rank, size, &dev, &stream, &comm};
      run_rank(r, cases, out);
    }
    MPI_Finalize();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oar-conform collectives-worker: %s\n", e.what());
    std::fflush(stderr);
    return 1;
  }
}

// --- the launcher -------------------------------------------------------------------

namespace {

std::string mpiexec() {
  const char* text = std::getenv("OAR_MPIEXEC");
  return text != nullptr && *text != '\0' ? text : OAR_CONFORM_MPIEXEC;
}

std::vector<std::string> worker_args(const CollectivesRun& run, const std::string& path,
                                     const std::string& out, int local) {
  std::vector<std::string> args;
  if (local == 0) args = {mpiexec(), "-n", std::to_string(run.ranks)};
  args.insert(args.end(), {run.self, "collectives-worker", "--plugin", run.plugin, "--device",
                           std::to_string(run.device), "--path", path, "--out", out});
  if (local > 0) args.insert(args.end(), {"--local", std::to_string(local)});
  if (!run.filter.empty()) args.insert(args.end(), {"--filter", run.filter});
  if (run.validate) args.push_back("--validate");
  return args;
}

std::string joined(const std::vector<std::string>& args) {
  std::string text;
  for (const std::string& a : args) text += (text.empty() ? "" : " ") + a;
  return text;
}

struct Launch {
  int exit_code = -1;  // the exit status, or -signal
  bool timed_out = false;
  std::string error;  // could not start
};

off_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

// Runs |args| in a process group of its own, output appended to |log|;
// kills the group when none of |watched| grew for |timeout|.
Launch launch(const std::vector<std::string>& args, const std::string& log,
              const std::vector<std::string>& watched, std::chrono::milliseconds timeout) {
  Launch result;
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    setpgid(0, 0);
    int fd = log.empty() ? open("/dev/null", O_WRONLY)
                         : open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    // More ranks than cores (CI machines) and, as root, Open MPI's consent.
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
    if (geteuid() == 0) {
      setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
      setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "oar-conform: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  off_t seen = -1;
  auto last_progress = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    off_t total = 0;
    for (const std::string& file : watched) total += file_size(file);
    const auto now = std::chrono::steady_clock::now();
    if (total != seen) {
      seen = total;
      last_progress = now;
    } else if (now - last_progress > timeout) {
      result.timed_out = true;
      kill(-pid, SIGTERM);
      std::this_thread::sleep_for(std::chrono::seconds(2));
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid, SIGKILL);  // whatever the ranks left behind
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  if (result.exit_code == 127) result.error = "could not start " + args[0];
  return result;
}

std::string log_tail(const std::string& log) {
  std::ifstream file(log, std::ios::binary);
  if (!file) return "";
  file.seekg(0, std::ios::end);
  const std::streamoff size = file.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 1500);
  file.seekg(from);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return text;
}

struct RankEvents {
  std::map<std::string, nlohmann::json> results;
  std::string running;  // started, no result
};

RankEvents read_events(const std::string& path) {
  RankEvents events;
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
    if (event.is_discarded() || !event.contains("event")) continue;
    if (event["event"] == "start") events.running = event.value("id", "");
    if (event["event"] == "result") {
      events.results[event.value("id", "")] = event;
      events.running.clear();
    }
  }
  return events;
}

TestResult result_of(const Case& c, const std::string& path) {
  TestResult result;
  result.id = c.id;
  result.area = "collectives";
  result.op = kind_name(c.kind);
  result.dtype = dtype_name(c.dtype);
  result.group = "collectives/" + path;
  return result;
}

// Runs one path's cases (|ranks| ranks) and merges the ranks' events.
std::vector<TestResult> run_path(const CollectivesRun& run, const std::vector<Case>& cases,
                                 const std::string& path, int ranks, int local) {
  const std::string out = run.work_dir + "/collectives-" + path;
  std::vector<std::string> watched;
  for (int q = 0; q < ranks; ++q) {
    watched.push_back(fmt::format("{}.rank{}", out, q));
    std::remove(watched.back().c_str());
  }
  const std::vector<std::string> args = worker_args(run, path, out, local);
  if (!run.log.empty()) {
    std::ofstream(run.log, std::ios::app)
        << "=== collectives (" << path << "): " << joined(args) << "\n";
  }
  // MPI's start-up is not a case: it gets a limit of its own on top.
  const Launch launched = launch(args, run.log, watched, run.timeout + std::chrono::seconds(30));
  std::vector<RankEvents> events;
  for (const std::string& file : watched) events.push_back(read_events(file));
  std::vector<TestResult> results;
  std::string ended_at;  // the case a crash or hang interrupted
  for (const Case& c : cases) {
    TestResult result = result_of(c, path);
    int missing = 0;
    std::string running_on;
    result.status = Status::kPassed;
    for (int q = 0; q < ranks; ++q) {
      auto it = events[size_t(q)].results.find(c.id);
      if (it == events[size_t(q)].results.end()) {
        ++missing;
        if (events[size_t(q)].running == c.id) running_on += fmt::format(" {}", q);
        continue;
      }
      const Status status = parse_status(it->second.value("status", "failed"));
      result.duration_ms = std::max(result.duration_ms, it->second.value("ms", 0.0));
      if (severity(status) > severity(result.status)) {
        result.status = status;
        result.message = (ranks > 1 ? fmt::format("rank {}: ", q) : std::string()) +
                         it->second.value("message", "");
      }
    }
    if (missing > 0) {
      if (ended_at.empty()) {
        ended_at = c.id;
        result.status = launched.timed_out ? Status::kTimeout : Status::kCrashed;
        std::string how =
            !launched.error.empty() ? launched.error
            : launched.timed_out
                ? fmt::format("no rank made progress for {:.1f} s; the ranks were killed",
                              (run.timeout + std::chrono::seconds(30)).count() / 1e3)
            : launched.exit_code < 0
                ? fmt::format("the ranks ended by signal {}", -launched.exit_code)
                : fmt::format("the ranks exited with status {}", launched.exit_code);
        result.message = fmt::format(
            "{} during this case (running on rank(s){}; {} of {} ranks "
            "had not finished it); the command: {}\nthe output's tail:\n{}",
            how, running_on.empty() ? " none" : running_on, missing, ranks, joined(args),
            log_tail(run.log));
      } else {
        result.status = Status::kFailed;
        result.message = "not run: the ranks ended during " + ended_at;
      }
    }
    results.push_back(std::move(result));
  }
  if (ended_at.empty() && (launched.exit_code != 0 || launched.timed_out)) {
    TestResult shutdown;
    shutdown.id = "collectives/" + path + "/shutdown";
    shutdown.area = "collectives";
    shutdown.group = "collectives/" + path;
    shutdown.status = launched.timed_out ? Status::kTimeout : Status::kCrashed;
    shutdown.message = fmt::format(
        "every case finished, then the ranks {} ({}); the output's tail:\n{}",
        launched.timed_out ? "hung" : "failed",
        launched.error.empty() ? fmt::format("status {}", launched.exit_code) : launched.error,
        log_tail(run.log));
    results.push_back(std::move(shutdown));
  }
  return results;
}

}  // namespace

std::string collectives_command(const CollectivesRun& run) {
  return joined(worker_args(run, "staged", run.work_dir + "/collectives-staged", 0));
}

std::vector<std::string> collectives_ids(const CollectivesRun& run,
                                         const oar_device_properties_t& properties) {
  std::vector<std::string> ids;
  for (const Case& c : selected_cases(properties, "staged", run.ranks, run.filter)) {
    ids.push_back(c.id);
  }
  if ((properties.features & OAR_DEVICE_FEATURE_COLLECTIVES) != 0) {
    const int local = std::max(1, std::min(run.ranks, run.device_count));
    for (const Case& c : selected_cases(properties, "native", local, run.filter)) {
      ids.push_back(c.id);
    }
  }
  return ids;
}

std::vector<TestResult> run_collectives(const CollectivesRun& run,
                                        const oar_device_properties_t& properties,
                                        const std::function<void(const TestResult&)>& on_result) {
  std::vector<TestResult> all;
  auto take = [&](std::vector<TestResult> results) {
    for (TestResult& result : results) {
      if (on_result) on_result(result);
      all.push_back(std::move(result));
    }
  };
  const bool claims = (properties.features & OAR_DEVICE_FEATURE_COLLECTIVES) != 0;
  // The core's staged engine: every device with host callbacks.
  const std::vector<Case> staged = selected_cases(properties, "staged", run.ranks, run.filter);
  if (!staged.empty()) {
    if ((properties.features & OAR_DEVICE_FEATURE_HOST_CALLBACKS) == 0) {
      std::vector<TestResult> results;
      for (const Case& c : staged) {
        TestResult result = result_of(c, "staged");
        result.status = claims ? Status::kFailed : Status::kSkipped;
        result.message = claims ? "the device lists OAR_DEVICE_FEATURE_COLLECTIVES but has no "
                                  "host callbacks, which the core's staged engine needs"
                                : "no host callbacks (OAR_DEVICE_FEATURE_HOST_CALLBACKS): the "
                                  "core's staged engine cannot order collectives on this device";
        results.push_back(std::move(result));
      }
      take(std::move(results));
    } else {
      take(run_path(run, staged, "staged", run.ranks, 0));
    }
  }
  // The plugin's own slots, for a device that claims them: as many of its
  // devices as ranks asked for (and it has).
  if (claims) {
    const int local = std::max(1, std::min(run.ranks, run.device_count));
    const std::vector<Case> native = selected_cases(properties, "native", local, run.filter);
    if (!native.empty()) take(run_path(run, native, "native", local, local));
  }
  return all;
}

}  // namespace oar::conformance
