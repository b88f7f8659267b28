// The cuda/hip kernels (kernels/kernels.cu) computing values on the host: a
// unit test of the kernels' arithmetic and indexing, NOT a device (nothing
// here registers as an OAR device or goes through the plugin's driver code).
//
// kernels.cu is compiled as plain C++ (portable.h's OAR_KERNELS_ON_HOST
// branch). The calls go through the plugin's own operators.cc
// (register_operators): its attribute handling, Geo/ReduceGeo builders, grid
// sizes and ArgPack parameter buffers are the ones a GPU would get. Launcher
// runs a launch on BlockPool: kBlock std::threads, one per CUDA thread of a
// block, the blocks one after another, __syncthreads a real barrier. Each
// kernel's parameters are read back from the ArgPack at the offsets the
// kernel's own parameter list gives (a layout mismatch fails the test).
// Results are compared with plain loops in double here, rounded to the
// dtype, with the tolerances named at each check.
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gpu_plugin_test_util.h"
#include "kernels/kernels.cu"
#include "operators.h"

namespace {

using oar::cuda::kBlock;
namespace dtype = oar::dtype;
using oar::operator==;

// --- the emulated GPU ---------------------------------------------------------

// kBlock threads, created once; run() executes |job| as every thread of
// every block of a grid, block after block, and returns when all are done.
class BlockPool {
 public:
  BlockPool() {
    for (unsigned t = 0; t < kBlock; ++t) threads_.emplace_back([this, t] { work(t); });
  }
  ~BlockPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      ++generation_;
    }
    start_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void run(uint32_t grid, const std::function<void()>& job) {
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = &job;
    grid_ = grid;
    finished_ = 0;
    ++generation_;
    start_.notify_all();
    done_.wait(lock, [this] { return finished_ == kBlock; });
  }
  // A reusable barrier over the kBlock threads.
  void barrier() {
    std::unique_lock<std::mutex> lock(barrier_mutex_);
    const uint64_t phase = phase_;
    if (++arrived_ == kBlock) {
      arrived_ = 0;
      ++phase_;
      barrier_cv_.notify_all();
    } else {
      barrier_cv_.wait(lock, [&] { return phase_ != phase; });
    }
  }

 private:
  void work(unsigned t) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void()>* job;
      uint32_t grid;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        start_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (stop_) return;
        job = job_;
        grid = grid_;
      }
      threadIdx = {t, 0, 0};
      blockDim = {kBlock, 1, 1};
      gridDim = {grid, 1, 1};
      for (unsigned b = 0; b < grid; ++b) {
        blockIdx = {b, 0, 0};
        (*job)();
        barrier();  // the next block starts once this one is over (__shared__ is static)
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (++finished_ == kBlock) done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void()>* job_ = nullptr;
  uint32_t grid_ = 0;
  uint64_t generation_ = 0;
  unsigned finished_ = 0;
  bool stop_ = false;
  std::mutex barrier_mutex_;
  std::condition_variable barrier_cv_;
  unsigned arrived_ = 0;
  uint64_t phase_ = 0;
};

BlockPool& pool() {
  static BlockPool* p = new BlockPool;  // lives until exit (threads parked)
  return *p;
}

// One kernel as the launcher runs it: the ArgPack's bytes, its size, the grid.
using HostKernel = std::function<void(const unsigned char*, size_t, uint32_t)>;

template <typename T>
T read_arg(const unsigned char* bytes, size_t& offset) {
  offset = (offset + alignof(T) - 1) / alignof(T) * alignof(T);
  T value;
  std::memcpy(static_cast<void*>(&value), bytes + offset, sizeof(T));
  offset += sizeof(T);
  return value;
}

template <typename... A>
HostKernel host_kernel(void (*fn)(A...)) {
  return [fn](const unsigned char* bytes, size_t size, uint32_t grid) {
    size_t offset = 0;
    const std::tuple<A...> args{read_arg<A>(bytes, offset)...};  // left to right
    EXPECT_EQ(offset, size) << "the ArgPack is not the kernel's parameter list";
    pool().run(grid, [&] { std::apply(fn, args); });
  };
}

// Every kernel of kernels.list (kernels_list.inc is generated from it: a
// listed kernel missing from kernels.cu does not compile).
const std::map<std::string, HostKernel>& listed_kernels() {
  static const std::map<std::string, HostKernel> kernels = {
#define OAR_LISTED_KERNEL(name) {#name, host_kernel(&name)},
#include "kernels_list.inc"
#undef OAR_LISTED_KERNEL
  };
  return kernels;
}

std::set<std::string>& launched() {
  static std::set<std::string> names;
  return names;
}

class HostLauncher : public oar::cuda::Launcher {
 public:
  void check_tensor(const oar_kernel_call_t&, const DLTensor&, const char*) const override {}
  void launch(const oar_kernel_call_t&, const char* kernel, uint32_t grid,
              const oar::cuda::ArgPack& args) override {
    const auto it = listed_kernels().find(kernel);
    ASSERT_NE(it, listed_kernels().end()) << kernel << " is not in kernels.list";
    launched().insert(kernel);
    it->second(static_cast<const unsigned char*>(args.data()), args.size(), grid);
  }
  bool gemm(const oar_kernel_call_t&, const oar::cuda::Gemm&) override {
    return false;  // no cuBLAS: OAR's matmul kernel
  }
  uint64_t error_word(const oar_kernel_call_t&) override {
    return uint64_t(reinterpret_cast<uintptr_t>(&error));
  }
  ErrorWord error{};
};

// The operators as register_operators registers them.
struct Registered {
  std::string op;
  std::vector<DLDataType> dtypes;
  oar_kernel_fn fn;
  void* user_data;
};

class Operators {
 public:
  Operators() {
    oar_kernel_registrar_t registrar{OAR_KERNEL_REGISTRAR_STRUCT_SIZE, this, &Operators::add};
    oar::cuda::register_operators(oar::sdk::KernelRegistrar(&registrar), table_, &launcher);
  }
  // Runs |op|; the status of its kernel function.
  oar_status_t call(const char* op, std::vector<DLTensor> inputs, std::vector<DLTensor> outputs,
                    const std::vector<oar_attr_t>& attrs = {}) {
    std::vector<DLDataType> dtypes;
    for (const DLTensor& t : inputs) dtypes.push_back(t.dtype);
    for (const DLTensor& t : outputs) dtypes.push_back(t.dtype);
    for (const Registered& r : registered_) {
      if (r.op != op || r.dtypes.size() != dtypes.size()) continue;
      bool same = true;
      for (size_t i = 0; i < dtypes.size(); ++i) same = same && r.dtypes[i] == dtypes[i];
      if (!same) continue;
      return oar_gpu_test::call_kernel(r.fn, r.user_data, nullptr, nullptr, inputs, outputs, attrs);
    }
    ADD_FAILURE() << op << ": no kernel registered for these dtypes";
    return OAR_STATUS_INTERNAL;
  }
  HostLauncher launcher;

 private:
  static oar_status_t add(void* context, const oar_kernel_def_t* def) {
    auto* self = static_cast<Operators*>(context);
    self->registered_.push_back(
        {def->op_name,
         std::vector<DLDataType>(def->dtypes, def->dtypes + def->num_inputs + def->num_outputs),
         def->fn, def->user_data});
    return OAR_STATUS_OK;
  }
  oar::sdk::KernelTable table_;
  std::vector<Registered> registered_;
};

Operators& operators() {
  static Operators* o = new Operators;
  return *o;
}

// --- tensors and references -----------------------------------------------------

// f16 and bf16 rounding for the references, written apart from the
// kernels' (SDK) conversions: the nearest of the two neighbours, ties to
// the even one, decided in double.
double round_to_bits(double v, int mantissa_bits, int min_exponent, double max_finite) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  const double a = std::fabs(v);
  int e = std::ilogb(a);
  if (e < min_exponent) e = min_exponent;  // subnormal spacing
  const double ulp = std::ldexp(1.0, e - mantissa_bits);
  const double lo = std::floor(a / ulp) * ulp, hi = lo + ulp;
  double r;
  if (a - lo < hi - a) {
    r = lo;
  } else if (a - lo > hi - a) {
    r = hi;
  } else {
    r = std::fmod(lo / ulp, 2.0) == 0 ? lo : hi;
  }
  // Past the largest finite value by half an ulp or more: infinity.
  if (r > max_finite) r = INFINITY;
  return std::copysign(r, v);
}
double round_f16(double v) { return round_to_bits(v, 10, -14, 65504.0); }
double round_bf16(double v) { return round_to_bits(v, 7, -126, std::ldexp(255.0 / 128.0, 127)); }
double round_f32(double v) { return double(float(v)); }

double round_to(DLDataType t, double v) {
  if (t == dtype::f16) return round_f16(v);
  if (t == dtype::bf16) return round_bf16(v);
  if (t == dtype::f32) return round_f32(v);
  return v;
}

struct Tensor {
  Tensor(DLDataType t, std::vector<int64_t> s) : dtype(t), shape(std::move(s)) {
    bytes.assign(size_t(numel() * t.bits / 8), 0);
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
  }
  double get(int64_t i) const {
    const unsigned char* p = bytes.data() + i * dtype.bits / 8;
    if (dtype == dtype::f32) return load<float>(p);
    if (dtype == dtype::f16) return oar::sdk::half_to_float(load<uint16_t>(p));
    if (dtype == dtype::bf16) return oar::sdk::bf16_to_float(load<uint16_t>(p));
    if (dtype == dtype::i32) return load<int32_t>(p);
    if (dtype == dtype::i64) return double(load<int64_t>(p));
    return load<uint8_t>(p);
  }
  // Stores |v| (floats: rounded by the reference's rounding).
  void set(int64_t i, double v) {
    unsigned char* p = bytes.data() + i * dtype.bits / 8;
    if (dtype == dtype::f32) {
      save(p, float(v));
    } else if (dtype == dtype::f16 || dtype == dtype::bf16) {
      const float r = float(round_to(dtype, v));
      uint32_t word;
      std::memcpy(&word, &r, 4);
      if (dtype == dtype::bf16) {
        save(p, uint16_t(word >> 16));
      } else {
        save(p, oar::sdk::float_to_half(r));  // exact: r is an f16 value
      }
    } else if (dtype == dtype::i32) {
      save(p, int32_t(v));
    } else if (dtype == dtype::i64) {
      save(p, int64_t(v));
    } else {
      save(p, uint8_t(v));
    }
  }
  uint64_t raw(int64_t i) const {
    uint64_t r = 0;
    std::memcpy(&r, bytes.data() + i * dtype.bits / 8, dtype.bits / 8);
    return r;
  }
  DLTensor dl() {
    DLTensor t{};
    t.data = bytes.data();
    t.device = {kDLCPU, 0};
    t.ndim = int(shape.size());
    t.dtype = dtype;
    t.shape = shape.data();
    return t;
  }
  template <typename T>
  static T load(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
  template <typename T>
  static void save(unsigned char* p, T v) {
    std::memcpy(p, &v, sizeof(T));
  }

  DLDataType dtype;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;
};

// Deterministic values in [lo, hi).
struct Random {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  double next(double lo, double hi) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * double(state >> 11) / double(1ull << 53);
  }
};

Tensor random_tensor(DLDataType t, std::vector<int64_t> shape, double lo, double hi,
                     uint64_t seed = 1) {
  Tensor x(t, std::move(shape));
  Random r;
  r.state += seed;
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, r.next(lo, hi));
  return x;
}

oar_attr_t attr_int(const char* name, int64_t v) {
  oar_attr_t a{};
  a.name = name;
  a.type = OAR_ATTR_TYPE_INT;
  a.value.i = v;
  return a;
}
oar_attr_t attr_float(const char* name, double v) {
  oar_attr_t a{};
  a.name = name;
  a.type = OAR_ATTR_TYPE_FLOAT;
  a.value.f = v;
  return a;
}
oar_attr_t attr_bool(const char* name, bool v) {
  oar_attr_t a{};
  a.name = name;
  a.type = OAR_ATTR_TYPE_BOOL;
  a.value.b = v;
  return a;
}
oar_attr_t attr_string(const char* name, const char* v) {
  oar_attr_t a{};
  a.name = name;
  a.type = OAR_ATTR_TYPE_STRING;
  a.value.s = v;
  return a;
}
oar_attr_t attr_ints(const char* name, const std::vector<int64_t>& v) {
  oar_attr_t a{};
  a.name = name;
  a.type = OAR_ATTR_TYPE_INT_ARRAY;
  a.value.ints.data = v.data();
  a.value.ints.count = v.size();
  return a;
}

// |got| within |rel| * |want| + |abs| of |want|; NaN matches NaN, an infinity
// the same infinity.
::testing::AssertionResult near_value(double got, double want, double rel, double abs) {
  if (std::isnan(want)
          ? std::isnan(got)
          : (std::isinf(want) ? got == want
                              : std::fabs(got - want) <= rel * std::fabs(want) + abs)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "got " << got << ", want " << want;
}

const DLDataType kFloats[] = {dtype::f32, dtype::f16, dtype::bf16};

// Relative tolerance of a float result computed in f32 (or f64) and rounded
// once to |t|: one unit in the last place of |t| (the reference rounds the
// exact value; the kernel's f32 math is a few f32 ulps off it).
double ulp_rel(DLDataType t) {
  if (t == dtype::f16) return 1.0 / 1024;
  if (t == dtype::bf16) return 1.0 / 128;
  return 4e-7;
}

std::string name_of(DLDataType t) { return oar::dtype_name(t); }

// Linear index of |shape| -> the broadcast operand's linear index.
int64_t broadcast_index(const std::vector<int64_t>& out, const std::vector<int64_t>& in,
                        int64_t linear) {
  int64_t index = 0, stride = 1;
  for (int d = int(out.size()) - 1, e = int(in.size()) - 1; d >= 0; --d, --e) {
    const int64_t p = linear % out[size_t(d)];
    linear /= out[size_t(d)];
    if (e >= 0) {
      if (in[size_t(e)] != 1) index += p * stride;
      stride *= in[size_t(e)];
    }
  }
  return index;
}

// --- the tests -------------------------------------------------------------------

double unary_reference(const std::string& op, double x) {
  if (std::isnan(x)) return NAN;  // relu too (docs/ops.md: NaN propagates)
  if (op == "neg") return -x;
  if (op == "abs") return std::fabs(x);
  if (op == "exp") return std::exp(x);
  if (op == "log") return std::log(x);
  if (op == "sqrt") return std::sqrt(x);
  if (op == "rsqrt") return 1 / std::sqrt(x);
  if (op == "sin") return std::sin(x);
  if (op == "cos") return std::cos(x);
  if (op == "tanh") return std::tanh(x);
  if (op == "sigmoid") return 1 / (1 + std::exp(-x));
  if (op == "relu") return x > 0 ? x : 0.0;
  if (op == "silu") return x / (1 + std::exp(-x));
  if (op == "erf") return std::erf(x);
  if (op == "floor") return std::floor(x);
  if (op == "ceil") return std::ceil(x);
  if (op == "reciprocal") return 1 / x;
  if (op == "gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  // gelu tanh
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

TEST(KernelsOnHost, UnaryEveryOpAndDtype) {
  for (const char* op :
       {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu",
        "silu", "erf", "floor", "ceil", "reciprocal", "gelu", "gelu_tanh"}) {
    const std::string name = op;
    const bool positive =
        name == "log" || name == "sqrt" || name == "rsqrt" || name == "reciprocal";
    for (DLDataType t : kFloats) {
      SCOPED_TRACE(name + " " + name_of(t));
      // 300 elements: two blocks, the grid-stride loop's tail included.
      Tensor x = random_tensor(t, {3, 100}, positive ? 0.05 : -4.0, 4.0, 7);
      x.set(17, NAN);
      Tensor y(t, {3, 100});
      std::vector<oar_attr_t> attrs;
      if (name == "gelu" || name == "gelu_tanh") {
        attrs.push_back(attr_string("approximate", name == "gelu" ? "none" : "tanh"));
      }
      ASSERT_EQ(operators().call(name == "gelu_tanh" ? "gelu" : op, {x.dl()}, {y.dl()}, attrs),
                OAR_STATUS_OK);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double want = round_to(t, unary_reference(name, x.get(i)));
        // f32: the C library's float functions within a few ulps, plus 1e-6
        // absolute where a result passes near 0 (sin, gelu).
        ASSERT_TRUE(
            near_value(y.get(i), want, 2 * ulp_rel(t) + 2e-6, t == dtype::f32 ? 1e-6 : 1e-3))
            << "x[" << i << "] = " << x.get(i);
      }
    }
  }
}

double binary_reference(const std::string& op, double a, double b) {
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  if (op == "div") return a / b;
  if (op == "pow") return std::pow(a, b);
  if (std::isnan(a) || std::isnan(b)) return NAN;
  return op == "maximum" ? std::max(a, b) : std::min(a, b);
}

TEST(KernelsOnHost, BinaryBroadcastEveryOpAndDtype) {
  for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum", "pow"}) {
    const std::string name = op;
    for (DLDataType t : kFloats) {
      SCOPED_TRACE(name + " " + name_of(t));
      // a [3, 1, 5] and b [4, 5] broadcast to y [3, 4, 5].
      Tensor a = random_tensor(t, {3, 1, 5}, name == "pow" ? 0.1 : -3.0, 3.0, 11);
      Tensor b = random_tensor(t, {4, 5}, 0.5, 3.0, 12);
      for (int64_t i = 0; i < b.numel(); i += 3) b.set(i, -b.get(i));  // signs
      a.set(2, NAN);                                                   // NaN propagates
      Tensor y(t, {3, 4, 5});
      ASSERT_EQ(operators().call(op, {a.dl(), b.dl()}, {y.dl()}), OAR_STATUS_OK);
      for (int64_t i = 0; i < y.numel(); ++i) {
        const double av = a.get(broadcast_index(y.shape, a.shape, i));
        const double bv = b.get(broadcast_index(y.shape, b.shape, i));
        const double want = round_to(t, binary_reference(name, av, bv));
        ASSERT_TRUE(near_value(y.get(i), want, t == dtype::f32 ? 2e-6 : ulp_rel(t), 0))
            << "y[" << i << "] = " << av << " " << name << " " << bv;
      }
    }
  }
}

TEST(KernelsOnHost, CompareBroadcastEveryOpAndDtype) {
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    const std::string name = op;
    for (DLDataType t : {dtype::f32, dtype::f16, dtype::bf16, dtype::i32, dtype::i64}) {
      SCOPED_TRACE(name + " " + name_of(t));
      Tensor a(t, {3, 1, 5}), b(t, {4, 5});
      Random r;
      for (int64_t i = 0; i < a.numel(); ++i) a.set(i, std::floor(r.next(-2, 3)));
      for (int64_t i = 0; i < b.numel(); ++i) b.set(i, std::floor(r.next(-2, 3)));
      if (t == dtype::i64) a.set(1, double(int64_t(1) << 40));  // not rounded through f32
      Tensor y(dtype::boolean, {3, 4, 5});
      ASSERT_EQ(operators().call(op, {a.dl(), b.dl()}, {y.dl()}), OAR_STATUS_OK);
      for (int64_t i = 0; i < y.numel(); ++i) {
        const double av = a.get(broadcast_index(y.shape, a.shape, i));
        const double bv = b.get(broadcast_index(y.shape, b.shape, i));
        const bool want = name == "eq"   ? av == bv
                          : name == "ne" ? av != bv
                          : name == "lt" ? av < bv
                          : name == "le" ? av <= bv
                          : name == "gt" ? av > bv
                                         : av >= bv;
        ASSERT_EQ(y.get(i), want ? 1.0 : 0.0) << av << " " << name << " " << bv;
      }
    }
  }
}

TEST(KernelsOnHost, CastBetweenFloatsRoundsToNearestEven) {
  // Halfway cases of f16 and bf16, subnormals, overflow, infinities, NaN.
  const double specials[] = {1.0 + 1.0 / 2048,
                             1.0 + 3.0 / 2048,
                             1.0 + 1.0 / 256,
                             1.0 + 3.0 / 256,
                             65504.0,
                             65520.0,
                             65519.99,
                             70000.0,
                             1e-7,
                             3e-8,
                             -2.9802322e-8,
                             INFINITY,
                             -INFINITY,
                             NAN,
                             -0.0,
                             3.3895313892515355e38,
                             1.0 / 3.0,
                             -2.5};
  for (DLDataType from : kFloats) {
    for (DLDataType to : kFloats) {
      if (from == to) continue;
      SCOPED_TRACE(name_of(from) + " -> " + name_of(to));
      Tensor x = random_tensor(from, {300}, -1000, 1000, 5);
      for (size_t i = 0; i < std::size(specials); ++i) x.set(int64_t(i), specials[i]);
      Tensor y(to, {300});
      ASSERT_EQ(operators().call("cast", {x.dl()}, {y.dl()}), OAR_STATUS_OK);
      for (int64_t i = 0; i < x.numel(); ++i) {
        // Exactly the reference's rounding (both go through f32, which holds
        // every f16 and bf16 value exactly).
        const double want = round_to(to, x.get(i));
        ASSERT_TRUE(near_value(y.get(i), want, 0, 0)) << "x[" << i << "] = " << x.get(i);
        if (want == 0) {
          ASSERT_EQ(std::signbit(y.get(i)), std::signbit(want));
        }
      }
    }
  }
}

// A dtype of each width the moves serve.
const DLDataType kWidths[] = {dtype::u8, dtype::f16, dtype::f32, dtype::i64};

TEST(KernelsOnHost, FillCopyTransposeWhereEveryWidth) {
  for (DLDataType t : kWidths) {
    SCOPED_TRACE(name_of(t));
    Tensor y(t, {3, 100});
    ASSERT_EQ(operators().call("fill", {}, {y.dl()}, {attr_float("value", 5.0)}), OAR_STATUS_OK);
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.get(i), 5.0) << i;

    // transpose [2, 3, 4] by perm [2, 0, 1] -> [4, 2, 3] (a strided copy).
    Tensor x = random_tensor(t, {2, 3, 4}, 0, 100, 3);
    Tensor xt(t, {4, 2, 3});
    const std::vector<int64_t> perm = {2, 0, 1};
    ASSERT_EQ(operators().call("transpose", {x.dl()}, {xt.dl()}, {attr_ints("perm", perm)}),
              OAR_STATUS_OK);
    for (int64_t k = 0; k < 4; ++k) {
      for (int64_t i = 0; i < 2; ++i) {
        for (int64_t j = 0; j < 3; ++j) {
          ASSERT_EQ(xt.raw((k * 2 + i) * 3 + j), x.raw((i * 3 + j) * 4 + k)) << k << i << j;
        }
      }
    }
    // copy from a strided view: every other column of x viewed as [2, 3, 2].
    Tensor c(t, {2, 3, 2});
    DLTensor view = x.dl();
    int64_t view_shape[3] = {2, 3, 2}, view_strides[3] = {12, 4, 2};
    view.shape = view_shape;
    view.strides = view_strides;
    view.byte_offset = t.bits / 8;  // starting at column 1
    ASSERT_EQ(operators().call("copy", {view}, {c.dl()}), OAR_STATUS_OK);
    for (int64_t i = 0; i < c.numel(); ++i) {
      ASSERT_EQ(c.raw(i), x.raw(1 + (i / 6) * 12 + (i / 2 % 3) * 4 + (i % 2) * 2)) << i;
    }

    // where: condition [3, 1], a [3, 4], b [1, 4] -> [3, 4].
    Tensor cond(dtype::boolean, {3, 1});
    cond.set(0, 1), cond.set(1, 0), cond.set(2, 7);  // a nonzero byte is true
    Tensor a = random_tensor(t, {3, 4}, 0, 100, 8), b = random_tensor(t, {1, 4}, 0, 100, 9);
    Tensor w(t, {3, 4});
    ASSERT_EQ(operators().call("where", {cond.dl(), a.dl(), b.dl()}, {w.dl()}), OAR_STATUS_OK);
    for (int64_t i = 0; i < 12; ++i) {
      ASSERT_EQ(w.raw(i), i / 4 == 1 ? b.raw(i % 4) : a.raw(i)) << i;
    }
  }
}

TEST(KernelsOnHost, ReduceEveryOpAndDtype) {
  // x [3, 2, 100] over axes [0, 2]: 2 outputs (2 blocks) of 300 elements
  // each (more than a block's 256 threads), read through strides.
  for (const char* op : {"sum", "mean", "max", "min", "prod"}) {
    const std::string name = op;
    for (DLDataType t : kFloats) {
      SCOPED_TRACE(name + " " + name_of(t));
      Tensor x = name == "prod" ? random_tensor(t, {3, 2, 100}, 0.97, 1.03, 4)
                                : random_tensor(t, {3, 2, 100}, -2, 2, 4);
      Tensor y(t, {2});
      const std::vector<int64_t> axes = {0, 2};
      ASSERT_EQ(operators().call(op, {x.dl()}, {y.dl()}, {attr_ints("axes", axes)}), OAR_STATUS_OK);
      for (int64_t j = 0; j < 2; ++j) {
        double acc = name == "prod" ? 1 : name == "max" ? -INFINITY : name == "min" ? INFINITY : 0;
        for (int64_t i = 0; i < 3; ++i) {
          for (int64_t k = 0; k < 100; ++k) {
            const double v = x.get((i * 2 + j) * 100 + k);
            acc = name == "prod"  ? acc * v
                  : name == "max" ? std::max(acc, v)
                  : name == "min" ? std::min(acc, v)
                                  : acc + v;
          }
        }
        if (name == "mean") acc /= 300;
        // f64 accumulation, rounded once: within an ulp of the dtype.
        ASSERT_TRUE(near_value(y.get(j), round_to(t, acc), ulp_rel(t), 1e-12)) << "output " << j;
      }
    }
  }
}

TEST(KernelsOnHost, ReduceNaNAndEmptyAxis) {
  // max/min propagate a NaN; over an empty axis sum is 0, prod 1, mean NaN
  // (0 / 0), and max refuses before any launch.
  Tensor x(dtype::f32, {2, 3});
  const double values[6] = {1, NAN, 3, -1, 5, 2};
  for (int64_t i = 0; i < 6; ++i) x.set(i, values[i]);
  const std::vector<int64_t> last = {1};
  for (const char* op : {"max", "min"}) {
    Tensor y(dtype::f32, {2});
    ASSERT_EQ(operators().call(op, {x.dl()}, {y.dl()}, {attr_ints("axes", last)}), OAR_STATUS_OK);
    EXPECT_TRUE(std::isnan(y.get(0))) << op;
    EXPECT_EQ(y.get(1), std::string(op) == "max" ? 5.0 : -1.0) << op;
  }
  Tensor empty(dtype::f32, {2, 0});
  for (const char* op : {"sum", "prod", "mean"}) {
    Tensor y(dtype::f32, {2});
    y.set(0, 42), y.set(1, 42);
    ASSERT_EQ(operators().call(op, {empty.dl()}, {y.dl()}, {attr_ints("axes", last)}),
              OAR_STATUS_OK);
    for (int64_t i = 0; i < 2; ++i) {
      const std::string name = op;
      if (name == "mean") {
        EXPECT_TRUE(std::isnan(y.get(i))) << op;
      } else {
        EXPECT_EQ(y.get(i), name == "sum" ? 0.0 : 1.0) << op;
      }
    }
  }
  Tensor y(dtype::f32, {2});
  EXPECT_EQ(operators().call("max", {empty.dl()}, {y.dl()}, {attr_ints("axes", last)}),
            OAR_STATUS_INVALID_ARGUMENT);
}

TEST(KernelsOnHost, SoftmaxAndLogSoftmaxEveryDtype) {
  // x [2, 300, 2] along axis 1: 4 rows (blocks) of 300 elements, inner stride 2.
  for (const char* op : {"softmax", "log_softmax"}) {
    const bool log = std::string(op) == "log_softmax";
    for (DLDataType t : kFloats) {
      SCOPED_TRACE(std::string(op) + " " + name_of(t));
      Tensor x = random_tensor(t, {2, 300, 2}, -5, 5, 6);
      Tensor y(t, {2, 300, 2});
      ASSERT_EQ(operators().call(op, {x.dl()}, {y.dl()}, {attr_int("axis", 1)}), OAR_STATUS_OK);
      for (int64_t o = 0; o < 2; ++o) {
        for (int64_t in = 0; in < 2; ++in) {
          double m = -INFINITY, sum = 0;
          for (int64_t j = 0; j < 300; ++j) m = std::max(m, x.get((o * 300 + j) * 2 + in));
          for (int64_t j = 0; j < 300; ++j) sum += std::exp(x.get((o * 300 + j) * 2 + in) - m);
          for (int64_t j = 0; j < 300; ++j) {
            const int64_t i = (o * 300 + j) * 2 + in;
            const double s = x.get(i) - m;
            const double want = round_to(t, log ? s - std::log(sum) : std::exp(s) / sum);
            // f32 partial sums: 1e-5 relative (f32 runs), else an ulp and a bit.
            ASSERT_TRUE(near_value(y.get(i), want, t == dtype::f32 ? 1e-5 : 2 * ulp_rel(t), 1e-7))
                << "element " << i;
          }
        }
      }
    }
  }
}

TEST(KernelsOnHost, SoftmaxOfAnUndefinedRowIsNaN) {
  // Rows (axis last, 4 elements): finite; with +inf; with a NaN; all -inf
  // (each undefined row NaN everywhere); with -inf among finite values (0).
  for (const char* op : {"softmax", "log_softmax"}) {
    const bool log = std::string(op) == "log_softmax";
    SCOPED_TRACE(op);
    Tensor x(dtype::f32, {5, 4});
    const double rows[5][4] = {{1, 2, 3, 4},
                               {1, INFINITY, 3, 4},
                               {1, 2, NAN, 4},
                               {-INFINITY, -INFINITY, -INFINITY, -INFINITY},
                               {0, -INFINITY, 0, 0}};
    for (int64_t i = 0; i < 20; ++i) x.set(i, rows[i / 4][i % 4]);
    Tensor y(dtype::f32, {5, 4});
    ASSERT_EQ(operators().call(op, {x.dl()}, {y.dl()}, {attr_int("axis", -1)}), OAR_STATUS_OK);
    for (int64_t i = 4; i < 16; ++i) EXPECT_TRUE(std::isnan(y.get(i))) << "element " << i;
    EXPECT_TRUE(near_value(y.get(16), log ? -std::log(3.0) : 1.0 / 3, 1e-6, 0));
    EXPECT_EQ(y.get(17), log ? -INFINITY : 0.0);
    EXPECT_TRUE(near_value(y.get(3),
                           log ? -std::log(1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0))
                               : 1 / (1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0)),
                           1e-6, 0));
  }
}

TEST(KernelsOnHost, LayerNormEveryDtype) {
  for (DLDataType t : kFloats) {
    SCOPED_TRACE(name_of(t));
    // 3 rows (blocks) of 300.
    Tensor x = random_tensor(t, {3, 300}, -3, 5, 13);
    Tensor w = random_tensor(t, {300}, 0.5, 1.5, 14), b = random_tensor(t, {300}, -1, 1, 15);
    Tensor y(t, {3, 300});
    const double eps = 1e-5;
    ASSERT_EQ(operators().call("layer_norm", {x.dl(), w.dl(), b.dl()}, {y.dl()},
                               {attr_float("eps", eps)}),
              OAR_STATUS_OK);
    for (int64_t r = 0; r < 3; ++r) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < 300; ++j) mean += x.get(r * 300 + j) / 300;
      for (int64_t j = 0; j < 300; ++j) var += std::pow(x.get(r * 300 + j) - mean, 2) / 300;
      for (int64_t j = 0; j < 300; ++j) {
        const double want = round_to(
            t, (x.get(r * 300 + j) - mean) / std::sqrt(var + double(float(eps))) * w.get(j) +
                   b.get(j));
        ASSERT_TRUE(near_value(y.get(r * 300 + j), want, ulp_rel(t), 1e-6)) << r << ", " << j;
      }
    }
  }
}

TEST(KernelsOnHost, MatmulTilesTransposesAndBatchBroadcast) {
  struct Case {
    bool ta, tb;
  };
  for (DLDataType t : kFloats) {
    for (Case c : {Case{false, false}, Case{true, false}, Case{false, true}}) {
      SCOPED_TRACE(name_of(t) + (c.ta ? " ta" : "") + (c.tb ? " tb" : ""));
      // y [2, 20, 18] = a [2, 20, 37] (or [2, 37, 20]) x b [37, 18] (or
      // [18, 37]), b broadcast over the batch: 2 x 2 x 2 tiles, K in 3 steps.
      const int64_t m = 20, n = 18, k = 37;
      Tensor a = random_tensor(
          t, c.ta ? std::vector<int64_t>{2, k, m} : std::vector<int64_t>{2, m, k}, -1, 1, 16);
      Tensor b = random_tensor(t, c.tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n},
                               -1, 1, 17);
      Tensor y(t, {2, m, n});
      ASSERT_EQ(operators().call("matmul", {a.dl(), b.dl()}, {y.dl()},
                                 {attr_bool("transpose_a", c.ta), attr_bool("transpose_b", c.tb)}),
                OAR_STATUS_OK);
      for (int64_t batch = 0; batch < 2; ++batch) {
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double acc = 0, magnitude = 0;
            for (int64_t l = 0; l < k; ++l) {
              const double av = a.get(batch * m * k + (c.ta ? l * m + i : i * k + l));
              const double bv = b.get(c.tb ? j * k + l : l * n + j);
              acc += av * bv;
              magnitude += std::fabs(av * bv);
            }
            // f16/bf16 accumulate in f32: an ulp of the dtype plus 1e-6 of
            // the sum of magnitudes; f32 accumulates in f64.
            ASSERT_TRUE(near_value(y.get((batch * m + i) * n + j), round_to(t, acc), ulp_rel(t),
                                   1e-6 * magnitude))
                << batch << ", " << i << ", " << j;
          }
        }
      }
    }
  }
}

TEST(KernelsOnHost, IndexSelectAndGatherEveryWidthAndIndexType) {
  HostLauncher& launcher = operators().launcher;
  for (DLDataType t : kWidths) {
    for (DLDataType it : {dtype::i32, dtype::i64}) {
      SCOPED_TRACE(name_of(t) + " index " + name_of(it));
      Tensor x = random_tensor(t, {3, 5, 4}, 0, 100, 18);
      // index_select along axis 1: y [3, 6, 4].
      Tensor index(it, {6});
      const int64_t picks[6] = {4, 0, 2, 2, 1, 3};
      for (int64_t i = 0; i < 6; ++i) index.set(i, double(picks[i]));
      Tensor y(t, {3, 6, 4});
      launcher.error = {};
      ASSERT_EQ(
          operators().call("index_select", {x.dl(), index.dl()}, {y.dl()}, {attr_int("axis", 1)}),
          OAR_STATUS_OK);
      EXPECT_EQ(launcher.error.flag, 0u);
      for (int64_t o = 0; o < 3; ++o) {
        for (int64_t j = 0; j < 6; ++j) {
          for (int64_t in = 0; in < 4; ++in) {
            ASSERT_EQ(y.raw((o * 6 + j) * 4 + in), x.raw((o * 5 + picks[j]) * 4 + in));
          }
        }
      }
      // An index out of range sets the error word: op 1, the index, the bound.
      index.set(3, 5);
      ASSERT_EQ(
          operators().call("index_select", {x.dl(), index.dl()}, {y.dl()}, {attr_int("axis", 1)}),
          OAR_STATUS_OK);
      EXPECT_EQ(launcher.error.flag, 1u);
      EXPECT_EQ(launcher.error.op, 1);
      EXPECT_EQ(launcher.error.index, 5);
      EXPECT_EQ(launcher.error.bound, 5);

      // gather along axis 1: index [3, 2, 4] in [0, 5), y of its shape.
      Tensor gindex(it, {3, 2, 4});
      Random r;
      for (int64_t i = 0; i < gindex.numel(); ++i) gindex.set(i, std::floor(r.next(0, 5)));
      Tensor g(t, {3, 2, 4});
      launcher.error = {};
      ASSERT_EQ(operators().call("gather", {x.dl(), gindex.dl()}, {g.dl()}, {attr_int("axis", 1)}),
                OAR_STATUS_OK);
      EXPECT_EQ(launcher.error.flag, 0u);
      for (int64_t o = 0; o < 3; ++o) {
        for (int64_t j = 0; j < 2; ++j) {
          for (int64_t in = 0; in < 4; ++in) {
            const int64_t at = int64_t(gindex.get((o * 2 + j) * 4 + in));
            ASSERT_EQ(g.raw((o * 2 + j) * 4 + in), x.raw((o * 5 + at) * 4 + in));
          }
        }
      }
      gindex.set(5, -1);
      ASSERT_EQ(operators().call("gather", {x.dl(), gindex.dl()}, {g.dl()}, {attr_int("axis", 1)}),
                OAR_STATUS_OK);
      EXPECT_EQ(launcher.error.flag, 1u);
      EXPECT_EQ(launcher.error.op, 2);
      EXPECT_EQ(launcher.error.index, -1);
      EXPECT_EQ(launcher.error.bound, 5);
    }
  }
}

// Last (gtest runs a file's tests in order): every kernel of kernels.list
// computed something above.
TEST(KernelsOnHost, ZzEveryListedKernelWasLaunched) {
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  if (unit.test_to_run_count() != unit.total_test_count()) {
    GTEST_SKIP() << "a filtered run launches only some kernels";
  }
  std::ifstream list(OAR_CUDA_KERNEL_LIST);
  ASSERT_TRUE(list.good()) << OAR_CUDA_KERNEL_LIST;
  std::string name;
  int count = 0;
  while (std::getline(list, name)) {
    if (name.empty()) continue;
    ++count;
    EXPECT_TRUE(launched().count(name)) << name << " was never launched";
  }
  EXPECT_EQ(count, int(listed_kernels().size()));
}

}  // namespace

// __syncthreads of the kernels: the running block's barrier.
void oar_host_block_barrier() { pool().barrier(); }
