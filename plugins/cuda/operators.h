// The cuda plugin's operators: which (operator, dtype) signatures it
// registers and how each call becomes one launch of a kernel of
// kernels/kernels.cu. The launch itself (the module's function, the stream,
// the error model) is the plugin's: operators.cc reaches it through Launcher.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "oar/kernel.h"
#include "oar/sdk/kernel.hpp"

namespace oar::cuda {

// Threads per block of every launch (OAR_BLOCK in kernels.cu).
constexpr uint32_t kBlock = 256;
// The most blocks a launch uses: the kernels loop with a grid stride over
// 64-bit indices, so a capped grid covers any element count (and stays far
// below the 2^31 - 1 blocks CUDA allows in x).
constexpr uint32_t kMaxGrid = 65535;

// Blocks for |items| work items, kBlock per block: at least 1, at most kMaxGrid.
uint32_t grid_for_items(uint64_t items);
// Blocks for |rows| rows, one block per row, at most kMaxGrid.
uint32_t grid_for_rows(uint64_t rows);

// A kernel's parameters as one buffer laid out as the kernel's parameter list
// (each at its natural alignment), passed with CU_LAUNCH_PARAM_BUFFER_POINTER.
class ArgPack {
 public:
  template <typename T>
  ArgPack& add(const T& value) {
    static_assert(sizeof(T) <= kCapacity, "parameter too large");
    size_ = (size_ + alignof(T) - 1) / alignof(T) * alignof(T);
    sdk::require(size_ + sizeof(T) <= kCapacity, OAR_STATUS_INTERNAL,
                 "cuda: kernel parameters exceed the launch buffer");
    std::memcpy(bytes_ + size_, &value, sizeof(T));
    size_ += sizeof(T);
    return *this;
  }
  const void* data() const { return bytes_; }
  size_t size() const { return size_; }

 private:
  static constexpr size_t kCapacity = 4096;  // CUDA's limit on a kernel's parameters
  alignas(16) unsigned char bytes_[kCapacity];
  size_t size_ = 0;
};

// One batched matmul for cuBLAS, row-major: y[i] (m x n) = op(a[i]) (m x k)
// * op(b[i]) (k x n) for i < batch, the operands |stride_*| elements apart
// (0: the same matrix for every i). All counts fit cuBLAS's int.
struct Gemm {
  DLDataType dtype{};
  uint64_t a = 0, b = 0, y = 0;  // device addresses
  bool transpose_a = false, transpose_b = false;
  int m = 0, n = 0, k = 0, batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_y = 0;
};

// What operators.cc needs from the plugin.
class Launcher {
 public:
  virtual ~Launcher() = default;
  // Throws unless |t| lies inside an allocation of the call's device.
  virtual void check_tensor(const oar_kernel_call_t& call, const DLTensor& t,
                            const char* what) const = 0;
  // Launches |kernel| with |grid| blocks of kBlock threads on the call's stream.
  virtual void launch(const oar_kernel_call_t& call, const char* kernel, uint32_t grid,
                      const ArgPack& args) = 0;
  // Runs |gemm| through cuBLAS on the call's stream; false if there is no
  // cuBLAS (the caller then launches OAR's own kernel). Throws on failure.
  virtual bool gemm(const oar_kernel_call_t& call, const Gemm& gemm) = 0;
  // The device address of the call's stream's error word (kernels.cu:
  // ErrorWord), zeroed on the stream at first use, which the plugin reads at
  // the stream's next synchronize or idle query: an index kernel that finds
  // an index out of range records it there and the stream fails with
  // OUT_OF_RANGE.
  virtual uint64_t error_word(const oar_kernel_call_t& call) = 0;
};

// Registers every operator the kernels implement; calls reach |launcher|.
void register_operators(const sdk::KernelRegistrar& registrar, sdk::KernelTable& table,
                        Launcher* launcher);

}  // namespace oar::cuda
