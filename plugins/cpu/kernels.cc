// Kernels: a few elementwise operators that prove dispatch end to end. Each
// kernel validates its call on the submitting thread (so a bad call fails at
// once, with a message), snapshots pointers and a count (the call record dies
// with the call) and runs the loop on the stream's worker. The full operator
// set plugs new functors into the same helpers.
#include <cstdint>
#include <string>
#include <type_traits>

#include "cpu.h"

namespace oar::cpu {
namespace {

template <typename T>
constexpr DLDataType dtype_of() {
  if constexpr (std::is_floating_point_v<T>) {
    return DLDataType{kDLFloat, static_cast<uint8_t>(8 * sizeof(T)), 1};
  } else {
    return DLDataType{kDLInt, static_cast<uint8_t>(8 * sizeof(T)), 1};
  }
}

std::string shape_text(const DLTensor& t) {
  std::string text = "[";
  for (int32_t i = 0; i < t.ndim; ++i) text += (i ? "," : "") + std::to_string(t.shape[i]);
  return text + "]";
}

uint64_t numel(const DLTensor& t) {
  uint64_t n = 1;
  for (int32_t i = 0; i < t.ndim; ++i) n *= static_cast<uint64_t>(t.shape[i]);
  return n;
}

// Validates one operand of an elementwise kernel against the output's shape
// and returns its typed address. Kernels registered without
// OAR_KERNEL_FLAG_STRIDED_INPUTS get contiguous tensors from the core; the
// check guards against a core that breaks that promise.
template <typename T>
T* operand(const oar_kernel_call_t* call, const DLTensor& t, const DLTensor& output,
           const char* what) {
  const AllocationTable* table = static_cast<const AllocationTable*>(call->user_data);
  DLDataType want = dtype_of<T>();
  oar::sdk::require(t.dtype.code == want.code && t.dtype.bits == want.bits && t.dtype.lanes == 1,
                    OAR_STATUS_INVALID_ARGUMENT, std::string(what) + ": unexpected dtype");
  bool same_shape = t.ndim == output.ndim;
  for (int32_t i = 0; same_shape && i < t.ndim; ++i) same_shape = t.shape[i] == output.shape[i];
  oar::sdk::require(same_shape, OAR_STATUS_INVALID_ARGUMENT,
                    std::string(what) + " has shape " + shape_text(t) +
                        " but the output has shape " + shape_text(output) +
                        " (this kernel does not broadcast)");
  int64_t expected_stride = 1;
  for (int32_t i = t.ndim - 1; i >= 0; --i) {
    oar::sdk::require(t.shape[i] == 1 || t.strides[i] == expected_stride,
                      OAR_STATUS_INVALID_ARGUMENT, std::string(what) + " is not contiguous");
    expected_stride *= t.shape[i];
  }
  uint64_t bytes = numel(t) * sizeof(T);
  table->check_range(t.data, t.byte_offset, bytes, what);
  return reinterpret_cast<T*>(address(static_cast<oar_memory_t>(t.data), t.byte_offset));
}

void check_call(const oar_kernel_call_t* call, size_t inputs, size_t outputs) {
  require_not_null(call, "kernel call");
  require_not_null(call->stream, "kernel call stream");
  require_not_null(call->user_data, "kernel call user_data (the cpu allocation table)");
  oar::sdk::require(
      call->num_inputs == inputs && call->num_outputs == outputs, OAR_STATUS_INVALID_ARGUMENT,
      "kernel takes " + std::to_string(inputs) + " input(s) and " + std::to_string(outputs) +
          " output(s), got " + std::to_string(call->num_inputs) + " and " +
          std::to_string(call->num_outputs));
}

// y = op(x)
template <typename T, typename Op>
oar_status_t unary(const oar_kernel_call_t* call) {
  return oar::sdk::guard([call] {
    check_call(call, 1, 1);
    const DLTensor& out = call->outputs[0];
    const T* x = operand<T>(call, call->inputs[0], out, "input 0");
    T* y = operand<T>(call, out, out, "output 0");
    uint64_t n = numel(out);
    if (n == 0) return;
    call->stream->queue->submit([x, y, n] {
      Op op;
      for (uint64_t i = 0; i < n; ++i) y[i] = op(x[i]);
    });
  });
}

// z = op(x, y)
template <typename T, typename Op>
oar_status_t binary(const oar_kernel_call_t* call) {
  return oar::sdk::guard([call] {
    check_call(call, 2, 1);
    const DLTensor& out = call->outputs[0];
    const T* a = operand<T>(call, call->inputs[0], out, "input 0");
    const T* b = operand<T>(call, call->inputs[1], out, "input 1");
    T* z = operand<T>(call, out, out, "output 0");
    uint64_t n = numel(out);
    if (n == 0) return;
    call->stream->queue->submit([a, b, z, n] {
      Op op;
      for (uint64_t i = 0; i < n; ++i) z[i] = op(a[i], b[i]);
    });
  });
}

// Integers wrap on overflow (two's complement), as in NumPy and PyTorch;
// computing in the unsigned type keeps that defined behaviour in C++.
template <typename T>
T wrap(std::make_unsigned_t<T> value) {
  return static_cast<T>(value);
}

struct Add {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return wrap<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
};

struct Mul {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return wrap<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return a * b;
    }
  }
};

struct Relu {
  // NaN stays NaN: the comparison is false for it.
  template <typename T>
  T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }
};

}  // namespace

void register_cpu_kernels(const oar_kernel_registrar_t* registrar, AllocationTable* table) {
  oar::sdk::KernelRegistrar kernels(registrar);
  constexpr DLDataType f32 = dtype_of<float>();
  constexpr DLDataType i32 = dtype_of<int32_t>();
  // Elementwise loops read each element before writing it, so in place is safe.
  constexpr uint32_t kInplace = OAR_KERNEL_FLAG_INPLACE_OK;
  kernels.add("add", {f32, f32}, {f32}, &binary<float, Add>, kInplace, table);
  kernels.add("mul", {f32, f32}, {f32}, &binary<float, Mul>, kInplace, table);
  kernels.add("relu", {f32}, {f32}, &unary<float, Relu>, kInplace, table);
  kernels.add("add", {i32, i32}, {i32}, &binary<int32_t, Add>, kInplace, table);
}

void CpuPlugin::register_kernels(const oar_kernel_registrar_t* registrar) {
  require_not_null(registrar, "registrar");
  register_cpu_kernels(registrar, &allocations_);
}

}  // namespace oar::cpu
