// What every benchmark needs: a runtime with exactly this build's cpu plugin.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "oar/oar.hpp"

namespace oar::bench {

// A runtime with exactly these plugin manifests (no environment, no install
// prefix). It lives until exit: a program's benchmarks share it.
inline Runtime* new_bench_runtime(std::vector<std::string> manifests) {
  RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = std::move(manifests);
  return new Runtime(options);
}

inline Runtime& cpu_runtime() {
  static Runtime* runtime = new_bench_runtime({OAR_BENCH_CPU_MANIFEST});
  return *runtime;
}

inline Device& cpu() { return cpu_runtime().device("cpu:0"); }

}  // namespace oar::bench
