// Kernel helpers of the plugin SDK: what every plugin's kernels repeat.
//
//  - The operator schema. oar/ops.hpp declares it (OpSchema, find_schema,
//    Attrs, the dtype bits); liboar_plugin_sdk.a carries its own copy of the
//    core's table, so a plugin reads attribute defaults and dtype rules without
//    calling liboar (docs/abi.md, P21). The copy is the operator set of the
//    OAR release the plugin was built against.
//  - Registration: one kernel function over a set of dtypes, with every
//    signature the schema's dtype rule allows, optional inputs (conv2d's bias)
//    and variadic ones (concat) included; KernelTable does the bookkeeping and
//    calls a body with the call's attributes and the schema's defaults.
//  - Element types: the C++ storage type of each dtype of the set (f16, bf16
//    and bool included) and float conversions.
//  - Tensors: the bytes a DLTensor spans inside its allocation (for range
//    checks), the host address of its first element (byte_offset applied) for
//    devices whose oar_memory_t is a host pointer, and copyable views.
//  - Broadcast and strided iteration of N operands over one shape.
//
// Threading: everything here is thread-compatible; KernelTable is filled in
// register_kernels and only read afterwards.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "oar/dtype.hpp"
#include "oar/kernel.h"
#include "oar/ops.hpp"
#include "oar/sdk/plugin.hpp"

namespace oar::sdk {

static_assert(oar::dtype::kDLBoolCode == OAR_DTYPE_CODE_BOOL, "one bool code for C and C++");

inline constexpr int kMaxDims = ops::kMaxDims;
// The most inputs register_op registers a variadic operator for (concat).
inline constexpr size_t kMaxVariadicInputs = 32;

// --- the schema ---------------------------------------------------------------

// The schema of |op|; throws INTERNAL naming |plugin| for an operator outside
// the set (a plugin built against another operator set).
const ops::OpSchema& schema_of(const char* op, const char* plugin = "plugin");

// --- signatures and registration -----------------------------------------------

// Input dtypes then output dtypes, as the schema orders the tensors.
using Signature = std::vector<DLDataType>;

// One signature per dtype in |bits|, that dtype for all |inputs| + |outputs|
// tensors (the schema's kSame rule).
std::vector<Signature> same_signatures(uint32_t bits, size_t inputs, size_t outputs);

// Every signature a kernel for |schema| takes when it serves the data dtypes
// |bits| (intersected with the schema's): by the schema's dtype rule (kCompare
// outputs bool, kWhere's condition is bool, kIndexed's index is i32 or i64,
// kArgReduce outputs i64, kCast pairs every input dtype with every output
// dtype, kCustom: inputs of one dtype with i32 and i64 for an index input,
// outputs from the schema's output_dtypes_fn), for every input count the schema allows: with and
// without each trailing optional input, and 1..|max_variadic| tensors for a variadic one.
std::vector<Signature> signatures_for(const ops::OpSchema& schema, uint32_t bits,
                                      size_t max_variadic = kMaxVariadicInputs);

// Registers |fn| (with |flags| and |user_data|) for |schema|'s operator once
// per signature; the schema says how many of its tensors are outputs.
void register_signatures(const KernelRegistrar& registrar, const ops::OpSchema& schema,
                         const std::vector<Signature>& signatures, oar_kernel_fn fn, uint32_t flags,
                         void* user_data);

// One kernel call as a KernelTable body sees it. Valid during the call only.
struct KernelCall {
  const oar_kernel_call_t& call;
  const ops::OpSchema& schema;
  // The call's attributes, else the schema's defaults.
  ops::Attrs attrs;
  // What the body was registered with.
  void* user_data;

  size_t num_inputs() const { return call.num_inputs; }
  size_t num_outputs() const { return call.num_outputs; }
  // Whether the call passed input |i| (false for a left-out optional input).
  bool has_input(size_t i) const { return i < call.num_inputs; }
  const DLTensor& input(size_t i) const { return call.inputs[i]; }
  DLTensor& output(size_t i) const { return call.outputs[i]; }
  // Scratch device memory for work on the call's stream (see oar/kernel.h).
  std::pair<oar_memory_t, uint64_t> scratch(uint64_t size) const;
};

// A kernel body: validates on the calling thread (throwing Error, which the
// table turns into a status and a message) and submits work to the stream.
using KernelBody = void (*)(const KernelCall& call);

// The kernels a plugin registers through the SDK: one entry function that
// finds the body and its schema, builds the KernelCall and turns exceptions
// into statuses. Keep the table alive as long as the plugin (a member of the
// plugin class): the core calls kernels until finalize.
class KernelTable {
 public:
  // Registers |body| for |op| with the given signatures.
  void add(const KernelRegistrar& registrar, const char* op, KernelBody body,
           const std::vector<Signature>& signatures, uint32_t flags = 0, void* user_data = nullptr);
  // Registers |body| for |op| with signatures_for(schema, dtype_bits).
  void add(const KernelRegistrar& registrar, const char* op, KernelBody body, uint32_t dtype_bits,
           uint32_t flags = 0, void* user_data = nullptr);

 private:
  struct Entry {
    KernelBody body;
    const ops::OpSchema* schema;
    void* user_data;
  };
  static oar_status_t run(const oar_kernel_call_t* call);
  std::deque<Entry> entries_;  // stable addresses: each is a kernel's user_data
};

// --- element types -------------------------------------------------------------

// IEEE half and bfloat16 as storage types; arithmetic happens in float.
struct half {
  uint16_t bits;
};
struct bfloat16 {
  uint16_t bits;
};

float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);  // round to nearest even; NaN stays NaN
// |value| stored as dtype |t|, as fill converts a value (docs/ops.md): the
// element's bits in the low bytes of the result. Floats round once to
// nearest even (f16/bf16 through a round-to-odd f32, so the double is not
// rounded twice); integers truncate (0 when out of range or NaN), then wrap
// to their width; bool is value != 0 (NaN: true). For fills by pattern.
uint64_t scalar_bits(double value, DLDataType t);
inline float bf16_to_float(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}
inline uint16_t float_to_bf16(float value) {  // round to nearest even; NaN stays NaN
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  if ((word & 0x7fffffffu) > 0x7f800000u) return uint16_t((word >> 16) | 0x40);
  word += 0x7fffu + ((word >> 16) & 1u);
  return uint16_t(word >> 16);
}

// The type arithmetic on T happens in: float for the 16-bit floats, int32_t
// for bool and the narrow integers (int8_t, uint8_t, int16_t: store() wraps
// the result to T's width), T itself otherwise.
template <typename T>
using compute_t = std::conditional_t<
    std::is_same_v<T, half> || std::is_same_v<T, bfloat16>, float,
    std::conditional_t<std::is_same_v<T, bool> || std::is_same_v<T, int8_t> ||
                           std::is_same_v<T, uint8_t> || std::is_same_v<T, int16_t>,
                       int32_t, T>>;

// Reads one element as compute_t<T>. A bool element is a byte, 0 or 1; any
// other byte reads as true.
template <typename T>
inline compute_t<T> load(const T* p) {
  if constexpr (std::is_same_v<T, half>)
    return half_to_float(p->bits);
  else if constexpr (std::is_same_v<T, bfloat16>)
    return bf16_to_float(p->bits);
  else if constexpr (std::is_same_v<T, bool>)
    return *reinterpret_cast<const uint8_t*>(p) != 0;
  else
    return *p;
}

// Writes |value| as a T (a bool as the byte 0 or 1).
template <typename T, typename V>
inline void store(T* p, V value) {
  if constexpr (std::is_same_v<T, half>)
    p->bits = float_to_half(float(value));
  else if constexpr (std::is_same_v<T, bfloat16>)
    p->bits = float_to_bf16(float(value));
  else if constexpr (std::is_same_v<T, bool>)
    *reinterpret_cast<uint8_t*>(p) = value != V(0);
  else
    *p = static_cast<T>(value);
}

// The dtype whose storage type is T.
template <typename T>
constexpr DLDataType dtype_of() {
  if constexpr (std::is_same_v<T, half>)
    return dtype::f16;
  else if constexpr (std::is_same_v<T, bfloat16>)
    return dtype::bf16;
  else if constexpr (std::is_same_v<T, float>)
    return dtype::f32;
  else if constexpr (std::is_same_v<T, double>)
    return dtype::f64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return dtype::i32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return dtype::i64;
  else if constexpr (std::is_same_v<T, int8_t>)
    return dtype::i8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return dtype::u8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return dtype::i16;
  else {
    static_assert(std::is_same_v<T, bool>, "not a storage type of the operator set");
    return dtype::boolean;
  }
}

// Calls |f(T{})| with the storage type T of |t| (half, bfloat16, float,
// double, int32_t, int64_t, bool, int8_t, uint8_t, int16_t) and returns what
// it returns. Only the
// dtypes in |Bits| (ops::DtypeBits) instantiate |f|; any other dtype throws
// INVALID_ARGUMENT.
template <uint32_t Bits = ops::kAll, typename F>
decltype(auto) with_dtype(DLDataType t, F&& f) {
  const uint32_t bit = ops::dtype_bit(t);
  if constexpr ((Bits & ops::kF16) != 0)
    if (bit == ops::kF16) return f(half{});
  if constexpr ((Bits & ops::kBF16) != 0)
    if (bit == ops::kBF16) return f(bfloat16{});
  if constexpr ((Bits & ops::kF32) != 0)
    if (bit == ops::kF32) return f(float{});
  if constexpr ((Bits & ops::kF64) != 0)
    if (bit == ops::kF64) return f(double{});
  if constexpr ((Bits & ops::kI32) != 0)
    if (bit == ops::kI32) return f(int32_t{});
  if constexpr ((Bits & ops::kI64) != 0)
    if (bit == ops::kI64) return f(int64_t{});
  if constexpr ((Bits & ops::kBool) != 0)
    if (bit == ops::kBool) return f(bool{});
  if constexpr ((Bits & ops::kI8) != 0)
    if (bit == ops::kI8) return f(int8_t{});
  if constexpr ((Bits & ops::kU8) != 0)
    if (bit == ops::kU8) return f(uint8_t{});
  if constexpr ((Bits & ops::kI16) != 0)
    if (bit == ops::kI16) return f(int16_t{});
  throw Error(OAR_STATUS_INVALID_ARGUMENT, "no kernel for dtype " + dtype_name(t));
}

// --- tensors -------------------------------------------------------------------

// The bytes [offset, offset + size) of its allocation that a tensor's
// elements occupy (negative strides included); size 0 for an empty tensor.
struct ByteSpan {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// |t|'s span. Throws INVALID_ARGUMENT for more than kMaxDims dimensions,
// negative extents or a span that overflows, and OUT_OF_RANGE for negative
// strides that reach before the allocation; |what| names the tensor.
ByteSpan byte_span(const DLTensor& t, const char* what);

// The host address of |t|'s first element: data + byte_offset. Only for
// devices whose oar_memory_t is a host pointer (cpu-like devices, or work
// that runs where the device memory is mapped).
inline char* data_pointer(const DLTensor& t) { return static_cast<char*>(t.data) + t.byte_offset; }

// A tensor as host code sees it: element 0's address, shape and strides in
// elements. Small and copyable into the closure of work queued on a stream.
struct TensorView {
  char* data = nullptr;
  DLDataType dtype{};
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};

  int64_t numel() const;
  // Row-major without gaps (extent-1 dimensions may have any stride).
  bool contiguous() const;
  size_t element_size() const { return size_t(dtype.bits / 8) * dtype.lanes; }
  template <typename T>
  T* ptr() const {
    return reinterpret_cast<T*>(data);
  }
};

// The view of |t| with data_pointer(t); NULL strides become row-major ones.
// Throws INVALID_ARGUMENT for more than kMaxDims dimensions.
TensorView view_of(const DLTensor& t);

// Row-major strides of |shape|.
void contiguous_strides(int ndim, const int64_t* shape, int64_t* out_strides);

// |axis| (negative counts from the end) normalised into [0, rank); rank 0
// takes 0. Throws INVALID_ARGUMENT naming |what| otherwise.
int normalize_axis(int64_t axis, int rank, const char* what);

// Element offset of the |linear|-th element (row-major order) of |v|.
inline int64_t offset_of(const TensorView& v, int64_t linear) {
  int64_t offset = 0;
  for (int d = v.ndim - 1; d >= 0; --d) {
    int64_t extent = v.shape[d];
    int64_t index = linear % extent;
    linear /= extent;
    offset += index * v.strides[d];
  }
  return offset;
}

// --- broadcast and strided iteration ---------------------------------------------

// N operands over one shape. Operand k's element at multi-index i is at
// data[k] + sum(i[d] * strides[k][d]) elements.
template <int N>
struct Loop {
  char* data[N] = {};
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
  // Stride of operand |k| along the innermost dimension (runs advance by it).
  int64_t inner_stride(int k) const { return ndim > 0 ? strides[k][ndim - 1] : 0; }
  template <typename T>
  T* ptr(int k) const {
    return reinterpret_cast<T*>(data[k]);
  }
};

// The loop over |views[0]|'s shape (the output) with every operand broadcast
// to it by NumPy's rules: missing leading and extent-1 dimensions get stride
// 0. Extent-1 dimensions are dropped and neighbours merged where every
// operand allows, so a contiguous call becomes one run. Throws
// INVALID_ARGUMENT if an operand does not broadcast.
template <int N>
Loop<N> make_loop(const TensorView (&views)[N]) {
  Loop<N> loop;
  const TensorView& target = views[0];
  for (int k = 0; k < N; ++k) {
    loop.data[k] = views[k].data;
    require(views[k].ndim <= target.ndim, OAR_STATUS_INVALID_ARGUMENT,
            "an input has more dimensions than the output");
  }
  // An empty output: nothing to visit, and its operands' strides (which may
  // be anything beside a zero extent) must not enter the arithmetic below.
  for (int d = 0; d < target.ndim; ++d) {
    if (target.shape[d] == 0) {
      loop.ndim = 1;
      loop.shape[0] = 0;
      return loop;
    }
  }
  for (int d = 0; d < target.ndim; ++d) {
    const int64_t extent = target.shape[d];
    int64_t stride[N];
    for (int k = 0; k < N; ++k) {
      const int vd = d - (target.ndim - views[k].ndim);
      const int64_t have = vd < 0 ? 1 : views[k].shape[vd];
      if (have != extent && have != 1) {
        throw Error(OAR_STATUS_INVALID_ARGUMENT,
                    "shapes do not broadcast: extent " + std::to_string(have) + " against " +
                        std::to_string(extent) + " in dimension " + std::to_string(d));
      }
      stride[k] = have == extent && vd >= 0 ? views[k].strides[vd] : 0;
    }
    if (extent == 1) continue;
    bool merge = loop.ndim > 0;
    for (int k = 0; k < N && merge; ++k) {
      int64_t span = 0;  // may leave int64_t for a view reaching near 2^63: then no merge
      merge = !__builtin_mul_overflow(stride[k], extent, &span) &&
              loop.strides[k][loop.ndim - 1] == span;
    }
    if (!merge) loop.shape[loop.ndim++] = 1;
    loop.shape[loop.ndim - 1] *= extent;
    for (int k = 0; k < N; ++k) loop.strides[k][loop.ndim - 1] = stride[k];
  }
  return loop;
}

// Calls |run(offsets, n)| for the elements [begin, end) (row-major order) of
// |loop|, in runs of n elements along the innermost dimension; offsets[k] is
// operand k's element offset of the run's first element. Ranges let a plugin
// share a loop out across threads (one range per thread).
template <int N, typename Run>
void for_each_run(const Loop<N>& loop, int64_t begin, int64_t end, Run&& run) {
  if (begin >= end) return;
  if (loop.ndim == 0) {
    const int64_t zero[N] = {};
    run(static_cast<const int64_t*>(zero), int64_t(1));
    return;
  }
  const int last = loop.ndim - 1;
  int64_t index[kMaxDims];
  int64_t offset[N] = {};
  int64_t rest = begin;
  for (int d = last; d >= 0; --d) {
    index[d] = rest % loop.shape[d];
    rest /= loop.shape[d];
    for (int k = 0; k < N; ++k) offset[k] += index[d] * loop.strides[k][d];
  }
  while (begin < end) {
    const int64_t n = std::min(loop.shape[last] - index[last], end - begin);
    run(static_cast<const int64_t*>(offset), n);
    begin += n;
    index[last] += n;
    for (int k = 0; k < N; ++k) offset[k] += n * loop.strides[k][last];
    for (int d = last; d > 0 && index[d] == loop.shape[d]; --d) {
      index[d] = 0;
      ++index[d - 1];
      for (int k = 0; k < N; ++k) {
        offset[k] += loop.strides[k][d - 1] - loop.shape[d] * loop.strides[k][d];
      }
    }
  }
}

// The same over every element.
template <int N, typename Run>
void for_each_run(const Loop<N>& loop, Run&& run) {
  for_each_run(loop, 0, loop.numel(), std::forward<Run>(run));
}

// Calls |f(a, b..., y)| element by element: y = f(inputs...) over the
// output's shape with the inputs broadcast, T the storage type of every
// operand and the values passed as compute_t<T>. For a host-addressable
// device, on the thread that runs the work.
template <typename T, int N, typename F>
void map_elements(const TensorView (&views)[N], F&& f) {
  const Loop<N> loop = make_loop(views);
  for_each_run(loop, [&](const int64_t* offset, int64_t n) {
    T* y = loop.template ptr<T>(0) + offset[0];
    const int64_t sy = loop.inner_stride(0);
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (N == 2) {
        const T* a = loop.template ptr<T>(1) + offset[1];
        store(y + i * sy, f(load(a + i * loop.inner_stride(1))));
      } else {
        static_assert(N == 3, "map_elements takes one or two inputs");
        const T* a = loop.template ptr<T>(1) + offset[1];
        const T* b = loop.template ptr<T>(2) + offset[2];
        store(y + i * sy,
              f(load(a + i * loop.inner_stride(1)), load(b + i * loop.inner_stride(2))));
      }
    }
  });
}

}  // namespace oar::sdk
