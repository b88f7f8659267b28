// Streams torn down right after their work: two streams per round, one
// waiting on the other's event behind a host callback, both synchronized and
// destroyed at once, and the device closed and reopened now and then. Before
// stream.cc waited for the queue to go idle, lavapipe's submit thread was
// still releasing the timeline semaphore's points after the host had seen
// the value, and wrote into the freed semaphore: SIGSEGV in most runs of this
// test (and at shutdown of forced-decomposition conformance groups under
// load). Exit 77 (skipped) without a vulkan device.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "oar/oar.hpp"
#include "oar/ops.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <vulkan.json> [devices] [rounds]\n", argv[0]);
    return 2;
  }
  const int devices = argc > 2 ? std::atoi(argv[2]) : 20;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 200;
  oar::RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = {argv[1]};
  try {
    for (int opened = 0; opened < devices; ++opened) {
      oar::Runtime runtime(options);
      if (runtime.devices().empty()) {
        std::puts("no vulkan device: skipped");
        return 77;
      }
      oar::Device& device = *runtime.devices()[0];
      for (int round = 0; round < rounds; ++round) {
        oar::Stream a = device.create_stream();
        oar::Stream b = device.create_stream();
        oar::Tensor x = oar::ops::fill(a, {4096}, oar::dtype::f32, 1.0);
        a.add_callback(
            [](oar_status_t) { std::this_thread::sleep_for(std::chrono::microseconds(50)); });
        oar::Tensor y = oar::ops::add(a, x, x);
        oar::Event done = device.create_event();
        done.record(a);
        b.wait(done);
        oar::Tensor z = oar::ops::add(b, y, y);
        std::vector<float> out(4096);
        z.copy_to_host(b, out.data());
        b.synchronize();
        a.synchronize();
        if (out[0] != 4.0f || out[4095] != 4.0f) {
          std::fprintf(stderr, "round %d: got %g, expected 4\n", round, double(out[0]));
          return 1;
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  std::puts("ok");
  return 0;
}
