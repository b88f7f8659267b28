// The OAR side of bench/paddle_bench.py's kernel comparison (issue 18): a
// small C library that Python loads with ctypes, so that each operator runs
// on OAR's cpu plugin and on Paddle's own CPU kernels in one process, one
// loop, interleaved, with the same threads (OMP_NUM_THREADS) for both.
//
// Each kernel of the set is one OAR operator on f32 inputs made once
// (values in [0.5, 1.5)); a run is ops::call (outputs allocated by OAR's
// caching allocator, as Paddle allocates its outputs) and a stream
// synchronize. Python times each run from outside, as it times Paddle's.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "oar/oar.hpp"
#include "oar/ops.hpp"

namespace {

struct Kernel {
  std::string op;
  std::vector<std::vector<int64_t>> shapes;
  oar::AttrList attrs;
};

// Names and shapes as in bench/paddle_bench.py (which checks the names).
std::map<std::string, Kernel> kernel_set() {
  std::map<std::string, Kernel> k;
  k["matmul_1024"] = {"matmul", {{1024, 1024}, {1024, 1024}}, {}};
  k["softmax_4096x1024"] = {"softmax", {{4096, 1024}}, oar::AttrList().add("axis", int64_t(-1))};
  k["layer_norm_4096x1024"] = {
      "layer_norm", {{4096, 1024}, {1024}, {1024}}, oar::AttrList().add("eps", 1e-5)};
  k["gelu_16Mi"] = {"gelu", {{16 << 20}}, oar::AttrList().add("approximate", "none")};
  k["add_16Mi"] = {"add", {{16 << 20}, {16 << 20}}, {}};
  k["sum_rows_4096x4096"] = {
      "sum", {{4096, 4096}}, oar::AttrList().add("axes", std::vector<int64_t>{-1})};
  k["conv2d_32x64x56x56_k3"] = {"conv2d",
                                {{32, 64, 56, 56}, {64, 64, 3, 3}},
                                oar::AttrList().add("padding", std::vector<int64_t>{1, 1})};
  k["sdpa_8x16x512x64"] = {
      "scaled_dot_product_attention", {{8, 16, 512, 64}, {8, 16, 512, 64}, {8, 16, 512, 64}}, {}};
  return k;
}

struct Prepared {
  Kernel kernel;
  std::vector<oar::Tensor> inputs;
  std::vector<const oar::Tensor*> pointers;
};

std::unique_ptr<oar::Runtime> g_runtime;
oar::Device* g_device = nullptr;
std::vector<std::unique_ptr<Prepared>> g_prepared;
std::string g_error;

}  // namespace

extern "C" {

// The last error's message ("" when none).
__attribute__((visibility("default"))) const char* oar_pk_error() { return g_error.c_str(); }

// Starts a runtime with only the plugin of |manifest|; 0 on success.
__attribute__((visibility("default"))) int oar_pk_open(const char* manifest) {
  try {
    oar::RuntimeOptions options;
    options.use_environment = false;
    options.search_install_prefix = false;
    options.plugin_files = {manifest};
    g_runtime = std::make_unique<oar::Runtime>(options);
    g_device = g_runtime->devices().at(0);
    return 0;
  } catch (const std::exception& e) {
    g_error = e.what();
    return -1;
  }
}

// Makes the inputs of kernel |name| on the device; a handle >= 0, or -1.
__attribute__((visibility("default"))) int oar_pk_prepare(const char* name) {
  try {
    auto set = kernel_set();
    auto it = set.find(name);
    if (it == set.end()) throw std::runtime_error(std::string("no kernel named ") + name);
    auto p = std::make_unique<Prepared>();
    p->kernel = it->second;
    oar::Stream& stream = g_device->default_stream();
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(0.5f, 1.5f);
    for (const auto& shape : p->kernel.shapes) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      std::vector<float> host(static_cast<size_t>(n));
      for (float& v : host) v = dist(rng);
      p->inputs.push_back(oar::Tensor::from_host(stream, host.data(), shape, oar::dtype::f32));
    }
    for (const oar::Tensor& t : p->inputs) p->pointers.push_back(&t);
    stream.synchronize();
    g_prepared.push_back(std::move(p));
    return int(g_prepared.size() - 1);
  } catch (const std::exception& e) {
    g_error = e.what();
    return -1;
  }
}

// Runs prepared kernel |handle| once, to completion; 0 on success.
__attribute__((visibility("default"))) int oar_pk_run(int handle) {
  try {
    Prepared& p = *g_prepared.at(size_t(handle));
    oar::Stream& stream = g_device->default_stream();
    std::vector<oar::Tensor> out = oar::ops::call(stream, p.kernel.op, p.pointers, p.kernel.attrs);
    stream.synchronize();
    return 0;
  } catch (const std::exception& e) {
    g_error = e.what();
    return -1;
  }
}

// Overwrites input |index| of kernel |handle| with |host|'s f32 values (as
// many as the input has), so that both sides compute on the same numbers.
__attribute__((visibility("default"))) int oar_pk_set_input(int handle, int index,
                                                            const float* host) {
  try {
    Prepared& p = *g_prepared.at(size_t(handle));
    oar::Stream& stream = g_device->default_stream();
    p.inputs.at(size_t(index)).copy_from_host(stream, host);
    stream.synchronize();
    return 0;
  } catch (const std::exception& e) {
    g_error = e.what();
    return -1;
  }
}

// The first |count| f32 values of kernel |handle|'s output into |host|, to
// check that both sides compute the same thing; 0 on success.
__attribute__((visibility("default"))) int oar_pk_output(int handle, float* host, int64_t count) {
  try {
    Prepared& p = *g_prepared.at(size_t(handle));
    oar::Stream& stream = g_device->default_stream();
    std::vector<oar::Tensor> out = oar::ops::call(stream, p.kernel.op, p.pointers, p.kernel.attrs);
    std::vector<float> all(size_t(out.at(0).numel()));
    out[0].copy_to_host(stream, all.data());
    stream.synchronize();
    std::memcpy(host, all.data(), size_t(std::min<int64_t>(count, out[0].numel())) * sizeof(float));
    return 0;
  } catch (const std::exception& e) {
    g_error = e.what();
    return -1;
  }
}

}  // extern "C"
