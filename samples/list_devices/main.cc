// Lists every OAR device and adds two vectors on the first one that has an
// f32 "add" kernel. Exit 0 when the sum is right (or there is no device).
#include <cstdio>
#include <vector>

#include "oar/oar.hpp"

int main() {
  try {
    oar::Runtime runtime;
    for (const oar::PluginRecord& plugin : runtime.plugins()) {
      std::printf("plugin %s: %s%s\n", plugin.name.c_str(),
                  plugin.state == oar::PluginState::kLoaded ? "loaded" : "skipped: ",
                  plugin.reason.c_str());
    }
    if (runtime.devices().empty()) {
      std::printf("no devices\n");
      return 0;
    }
    oar::Device& device = *runtime.devices().front();
    std::printf("device %s: %s\n", device.name().c_str(), device.properties().name);

    std::vector<float> x = {1, 2, 3, 4}, y = {10, 20, 30, 40}, sum(4);
    oar::Stream& stream = device.default_stream();
    oar::Tensor a = oar::Tensor::empty(device, {4}, oar::dtype::f32);
    oar::Tensor b = oar::Tensor::empty(device, {4}, oar::dtype::f32);
    a.copy_from_host(stream, x.data());
    b.copy_from_host(stream, y.data());
    oar::dispatch(stream, oar::OpId("add"), {&a, &b}, {&a});
    a.copy_to_host(stream, sum.data());
    stream.synchronize();
    for (size_t i = 0; i < sum.size(); ++i) {
      if (sum[i] != x[i] + y[i]) {
        std::printf("wrong sum at %zu: %g\n", i, double(sum[i]));
        return 1;
      }
    }
    std::printf("add: ok\n");
    return 0;
  } catch (const oar::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
