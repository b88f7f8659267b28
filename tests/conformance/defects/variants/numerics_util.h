// What the numerics variants share: element loads and stores in every float
// dtype (with the careless roundings vendors write), attributes, work queued
// in stream order, and running a real f32 kernel in place of an f16/bf16 one.
// Inputs of the kernels these variants replace are contiguous (the core hands
// strided tensors to copy first); cpu memory handles are host pointers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../shim.h"

namespace oar_defect {

// --- Storage formats -------------------------------------------------------------

inline bool is_code(const DLDataType& t, uint8_t code, uint8_t bits) {
  return t.code == code && t.bits == bits;
}
inline bool is_f16(const DLDataType& t) { return is_code(t, kDLFloat, 16); }
inline bool is_bf16(const DLDataType& t) { return is_code(t, kDLBfloat, 16); }
inline bool is_half(const DLDataType& t) { return is_f16(t) || is_bf16(t); }
inline bool is_float_type(const DLDataType& t) { return t.code == kDLFloat || is_bf16(t); }

inline float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  const float magnitude = std::ldexp(float(mantissa), -24);
  return sign ? -magnitude : magnitude;
}
inline float bf16_to_float(uint16_t b) { return bits_to_float(uint32_t(b) << 16); }

// How a variant narrows an f32 value to f16 or bf16.
enum class Narrowing {
  kNearestEven,     // correct
  kTruncate,        // toward zero: drops the low bits
  kHalfAway,        // ties away from zero: (bits + half) >> shift
  kNearestFlushed,  // correct, but results below the smallest normal become zero
};

inline uint16_t float_to_f16(float value, Narrowing how) {
  const uint32_t word = float_to_bits(value);
  const uint16_t sign = uint16_t((word >> 16) & 0x8000u);
  const float a = std::fabs(value);
  if (std::isnan(value)) return uint16_t(sign | 0x7e00u);
  if (how == Narrowing::kNearestFlushed && a < 0x1p-14f) return sign;
  // The value in units of f16's spacing at its binade (subnormals: 2^-24).
  int e = 0;
  std::frexp(a, &e);
  const int unbiased = std::max(e - 1, -14);
  if (a == 0 || std::isinf(a) || unbiased > 15) {
    return uint16_t(sign | (a == 0 ? 0u : 0x7c00u));
  }
  const double q = std::ldexp(double(a), 10 - unbiased);
  double r = std::floor(q);
  const double frac = q - r;
  if (how == Narrowing::kTruncate) {
    // nothing: toward zero
  } else if (how == Narrowing::kHalfAway) {
    if (frac >= 0.5) r += 1;
  } else if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0)) {
    r += 1;
  }
  const uint32_t bits = (uint32_t(unbiased + 14) << 10) + uint32_t(r);
  return uint16_t(sign | std::min<uint32_t>(bits, 0x7c00u));
}

inline uint16_t float_to_bf16(float value, Narrowing how) {
  uint32_t word = float_to_bits(value);
  if (std::isnan(value)) return uint16_t((word >> 16) | 0x40u);
  if (how == Narrowing::kNearestFlushed && std::fabs(value) < 0x1p-126f) {
    return uint16_t((word >> 16) & 0x8000u);
  }
  if (how == Narrowing::kTruncate) return uint16_t(word >> 16);
  if (how == Narrowing::kHalfAway) return uint16_t((word + 0x8000u) >> 16);
  word += 0x7fffu + ((word >> 16) & 1u);
  return uint16_t(word >> 16);
}

// Element |i| of a contiguous tensor of a float dtype, as a double.
inline double load_element(const void* base, const DLDataType& t, int64_t i) {
  if (is_f16(t)) return f16_to_float(static_cast<const uint16_t*>(base)[i]);
  if (is_bf16(t)) return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
  if (t.bits == 32) return static_cast<const float*>(base)[i];
  return static_cast<const double*>(base)[i];
}
// Stores |value| as element |i|: f64 as is, f32 rounded to nearest, f16 and
// bf16 through f32 with |how|.
inline void store_element(void* base, const DLDataType& t, int64_t i, double value,
                          Narrowing how = Narrowing::kNearestEven) {
  if (is_f16(t)) {
    static_cast<uint16_t*>(base)[i] = float_to_f16(float(value), how);
  } else if (is_bf16(t)) {
    static_cast<uint16_t*>(base)[i] = float_to_bf16(float(value), how);
  } else if (t.bits == 32) {
    static_cast<float*>(base)[i] = float(value);
  } else {
    static_cast<double*>(base)[i] = value;
  }
}

// --- Tensors and attributes ----------------------------------------------------------

// A tensor of the call as the stream-ordered work sees it (the call record
// dies with the call): its host address, dtype and shape.
struct HostView {
  char* data = nullptr;
  DLDataType dtype{};
  std::vector<int64_t> shape;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  double get(int64_t i) const { return load_element(data, dtype, i); }
  int64_t get_index(int64_t i) const {  // i32 or i64
    return dtype.bits == 32 ? static_cast<const int32_t*>(static_cast<void*>(data))[i]
                            : static_cast<const int64_t*>(static_cast<void*>(data))[i];
  }
  void set(int64_t i, double v, Narrowing how = Narrowing::kNearestEven) const {
    store_element(data, dtype, i, v, how);
  }
};
inline HostView host_view(const DLTensor& t) {
  HostView v;
  v.data = static_cast<char*>(t.data) + t.byte_offset;
  v.dtype = t.dtype;
  v.shape.assign(t.shape, t.shape + t.ndim);
  return v;
}

inline const oar_attr_t* find_attr(const oar_kernel_call_t* call, const char* name) {
  for (size_t i = 0; i < call->num_attrs; ++i) {
    if (std::strcmp(call->attrs[i].name, name) == 0) return &call->attrs[i];
  }
  return nullptr;
}
inline int64_t int_attr(const oar_kernel_call_t* call, const char* name, int64_t fallback) {
  const oar_attr_t* a = find_attr(call, name);
  return a != nullptr ? a->value.i : fallback;
}
inline double float_attr(const oar_kernel_call_t* call, const char* name, double fallback) {
  const oar_attr_t* a = find_attr(call, name);
  return a != nullptr ? a->value.f : fallback;
}
inline bool bool_attr(const oar_kernel_call_t* call, const char* name, bool fallback) {
  const oar_attr_t* a = find_attr(call, name);
  return a != nullptr ? a->value.b : fallback;
}
inline std::string string_attr(const oar_kernel_call_t* call, const char* name,
                               const char* fallback) {
  const oar_attr_t* a = find_attr(call, name);
  return a != nullptr ? a->value.s : fallback;
}
inline std::vector<int64_t> ints_attr(const oar_kernel_call_t* call, const char* name) {
  const oar_attr_t* a = find_attr(call, name);
  if (a == nullptr) return {};
  return std::vector<int64_t>(a->value.ints.data, a->value.ints.data + a->value.ints.count);
}

// The reduction sum or mean of |x| over the dimensions |reduced| marks into
// |y|, adding the elements in row-major order into one running accumulator
// per output that |round| rounds after every addition.
template <typename Round>
void running_sum(const HostView& x, const HostView& y, const std::vector<bool>& reduced, bool mean,
                 Round round) {
  const int64_t rank = int64_t(x.shape.size());
  std::vector<double> acc(size_t(y.numel()), 0.0);
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) count *= reduced[size_t(d)] ? x.shape[size_t(d)] : 1;
  std::vector<int64_t> index(size_t(rank), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t out = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (!reduced[size_t(d)]) out = out * x.shape[size_t(d)] + index[size_t(d)];
    }
    acc[size_t(out)] = round(acc[size_t(out)] + x.get(i));
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[size_t(d)] < x.shape[size_t(d)]) break;
      index[size_t(d)] = 0;
    }
  }
  for (int64_t o = 0; o < y.numel(); ++o) {
    y.set(o, mean ? acc[size_t(o)] / double(count) : acc[size_t(o)]);
  }
}

// Which dimensions of |x| a reduction's "axes" attribute names (none: all).
inline std::vector<bool> reduced_dims(const oar_kernel_call_t* call, const HostView& x) {
  const std::vector<int64_t> axes = ints_attr(call, "axes");
  const int64_t rank = int64_t(x.shape.size());
  std::vector<bool> reduced(size_t(rank), axes.empty());
  for (int64_t a : axes) {
    if (rank > 0) reduced[size_t(a < 0 ? a + rank : a)] = true;
  }
  return reduced;
}

// --- Stream order ----------------------------------------------------------------------

namespace detail {
inline void run_work(void* user_data, oar_status_t status) {
  auto* work = static_cast<std::function<void()>*>(user_data);
  if (status == OAR_STATUS_OK) (*work)();
  delete work;
}
}  // namespace detail

// Runs |work| on the call's stream after everything queued before it.
inline oar_status_t in_stream_order(const oar_kernel_call_t* call, std::function<void()> work) {
  auto* queued = new std::function<void()>(std::move(work));
  const oar_status_t status =
      real->stream_add_host_callback(call->stream, detail::run_work, queued);
  if (status != OAR_STATUS_OK) delete queued;
  return status;
}

// --- The real kernels, by signature --------------------------------------------------------

// Every kernel the real plugin registered that a variant's filter saw:
// record(kernel) from the filter, find() from a replacement.
inline std::string signature_key(const std::string& op, const std::vector<DLDataType>& dtypes) {
  std::string key = op;
  for (const DLDataType& t : dtypes) {
    key += "/" + std::to_string(t.code) + ":" + std::to_string(t.bits);
  }
  return key;
}
inline std::mutex& kernels_mutex() {
  static std::mutex m;
  return m;
}
inline std::map<std::string, RealKernel>& kernels_seen() {
  static std::map<std::string, RealKernel> seen;
  return seen;
}
inline void record(const RealKernel& kernel) {
  std::lock_guard<std::mutex> lock(kernels_mutex());
  kernels_seen()[signature_key(kernel.op, kernel.dtypes)] = kernel;
}
inline const RealKernel* find_kernel(const std::string& op, const std::vector<DLDataType>& dtypes) {
  std::lock_guard<std::mutex> lock(kernels_mutex());
  auto it = kernels_seen().find(signature_key(op, dtypes));
  return it == kernels_seen().end() ? nullptr : &it->second;
}

// Runs the kernel the call's kernel stands for with every f16/bf16 tensor
// replaced by an f32 copy (the real f32 kernel does the work), then stores
// the f32 results into the f16/bf16 outputs with |how|: a kernel that
// computes in f32 and narrows carelessly. Inputs are widened in stream order,
// so the work waits for whatever produced them.
inline oar_status_t compute_in_f32(const oar_kernel_call_t* call, Narrowing how,
                                   Narrowing inputs_how = Narrowing::kNearestEven) {
  const RealKernel& self = real_kernel(call);
  std::vector<DLDataType> wide = self.dtypes;
  for (DLDataType& t : wide) {
    if (is_half(t)) t = DLDataType{kDLFloat, 32, 1};
  }
  const RealKernel* f32 = find_kernel(self.op, wide);
  if (f32 == nullptr) return call_real(call);
  struct Temp {
    oar_memory_t memory = nullptr;
    HostView narrow;  // the call's tensor
    HostView wide;    // the f32 copy
  };
  auto temps = std::make_shared<std::vector<Temp>>();
  std::vector<DLTensor> inputs(call->inputs, call->inputs + call->num_inputs);
  std::vector<DLTensor> outputs(call->outputs, call->outputs + call->num_outputs);
  std::vector<size_t> input_temps, output_temps;
  auto widen = [&](DLTensor& t) -> bool {
    if (!is_half(t.dtype)) return true;
    Temp temp;
    temp.narrow = host_view(t);
    const uint64_t bytes = uint64_t(std::max<int64_t>(temp.narrow.numel(), 1)) * 4;
    if (real->memory_allocate(call->device, bytes, OAR_MEMORY_KIND_DEVICE, &temp.memory) !=
        OAR_STATUS_OK) {
      return false;
    }
    t.data = temp.memory;
    t.byte_offset = 0;
    t.strides = nullptr;
    t.dtype = DLDataType{kDLFloat, 32, 1};
    temp.wide = host_view(t);
    temps->push_back(temp);
    return true;
  };
  bool allocated = true;
  for (DLTensor& t : inputs) {
    if (is_half(t.dtype)) input_temps.push_back(temps->size());
    allocated = allocated && widen(t);
  }
  for (DLTensor& t : outputs) {
    if (is_half(t.dtype)) output_temps.push_back(temps->size());
    allocated = allocated && widen(t);
  }
  if (!allocated) {
    for (Temp& t : *temps) real->memory_free(call->device, t.memory);
    return OAR_STATUS_RESOURCE_EXHAUSTED;
  }
  oar_status_t status = in_stream_order(call, [temps, input_temps, inputs_how] {
    for (size_t k : input_temps) {
      const Temp& t = (*temps)[k];
      const double smallest_normal = is_f16(t.narrow.dtype) ? 0x1p-14 : 0x1p-126;
      for (int64_t i = 0; i < t.narrow.numel(); ++i) {
        double v = t.narrow.get(i);
        if (inputs_how == Narrowing::kNearestFlushed && std::fabs(v) < smallest_normal) {
          v = v * 0.0;  // a zero of v's sign
        }
        t.wide.set(i, v);
      }
    }
  });
  if (status != OAR_STATUS_OK) return status;
  oar_kernel_call_t copy = *call;
  copy.inputs = inputs.data();
  copy.outputs = outputs.data();
  copy.user_data = f32->user_data;
  status = f32->fn(&copy);
  if (status != OAR_STATUS_OK) return status;
  const oar_device_t device = call->device;
  return in_stream_order(call, [temps, output_temps, how, device] {
    for (size_t k : output_temps) {
      const Temp& t = (*temps)[k];
      for (int64_t i = 0; i < t.narrow.numel(); ++i) t.narrow.set(i, t.wide.get(i), how);
    }
    for (Temp& t : *temps) real->memory_free(device, t.memory);
  });
}

}  // namespace oar_defect
