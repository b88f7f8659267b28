// The validation layer's cost (docs/runtime.md, "Validation layer"): the same
// C ABI calls through the cpu plugin's own table (validation off: what
// device.api() is then, the plain path) and through a table with the checking
// wrappers installed (validation on). A 4 KiB h2d copy + stream synchronize,
// and stream_query alone (the per-call cost). Kernel dispatch does not go
// through the table, so it costs the same either way. The wrapped table is
// built beside the shared benchmark runtime (two runtimes must not share the
// cpu plugin's library at once).
#include <benchmark/benchmark.h>

#include <vector>

#include "bench/bench_util.h"
#include "core/loader/host_services.h"
#include "core/loader/plugin.h"
#include "core/validate/validator.h"

namespace oar::bench {
namespace {

// A device handle, stream and 4 KiB allocation opened through |api|.
struct Setup {
  Setup(const oar_plugin_api_t& table, bool validate, detail::Plugin& plugin)
      : api(table), host(detail::make_host_services(&plugin)) {
    if (validate) slot = detail::validate::install(&api, host, plugin.name());
    check(api.device_open(0, &device));
    check(api.stream_create(device, nullptr, &stream));
    check(api.memory_allocate(device, 4096, OAR_MEMORY_KIND_DEVICE, &memory));
  }
  ~Setup() {
    api.memory_free(device, memory);
    api.stream_destroy(stream);
    api.device_close(device);
    detail::validate::uninstall(slot);
  }
  static void check(oar_status_t code) {
    if (code != OAR_STATUS_OK) throw Error(code, "validate_bench setup failed");
  }
  oar_plugin_api_t api;
  oar_host_services_t host;
  int slot = -1;
  oar_device_t device = nullptr;
  oar_stream_t stream = nullptr;
  oar_memory_t memory = nullptr;
};

void BM_ValidateCopyH2D4KiBAndSync(benchmark::State& state) {
  Device& device = cpu();
  Setup setup(device.api(), state.range(0) != 0, device.plugin());
  std::vector<uint8_t> host(4096, 1);
  for (auto _ : state) {
    setup.api.memory_copy_h2d(setup.stream, setup.memory, 0, host.data(), host.size());
    setup.api.stream_synchronize(setup.stream);
  }
  state.SetLabel(state.range(0) != 0 ? "validate on" : "validate off");
}
BENCHMARK(BM_ValidateCopyH2D4KiBAndSync)->Arg(0)->Arg(1);

void BM_ValidateStreamQuery(benchmark::State& state) {
  Device& device = cpu();
  Setup setup(device.api(), state.range(0) != 0, device.plugin());
  bool idle = false;
  for (auto _ : state) {
    setup.api.stream_query(setup.stream, &idle);
    benchmark::DoNotOptimize(idle);
  }
  state.SetLabel(state.range(0) != 0 ? "validate on" : "validate off");
}
BENCHMARK(BM_ValidateStreamQuery)->Arg(0)->Arg(1);

}  // namespace
}  // namespace oar::bench
