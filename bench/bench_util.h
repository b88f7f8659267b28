// What every benchmark needs: a runtime with exactly this build's cpu plugin.
#pragma once

#include "oar/oar.hpp"

namespace oar::bench {

inline Runtime& cpu_runtime() {
  static Runtime* runtime = [] {
    RuntimeOptions options;
    options.use_environment = false;
    options.search_install_prefix = false;
    options.plugin_files = {OAR_BENCH_CPU_MANIFEST};
    return new Runtime(options);  // lives until exit: benchmarks share it
  }();
  return *runtime;
}

inline Device& cpu() { return cpu_runtime().device("cpu:0"); }

}  // namespace oar::bench
