// A runtime that loads exactly this build's cpu plugin, whatever the
// environment says, so that tests are reproducible.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <future>
#include <memory>
#include <numeric>
#include <vector>

#include "oar/oar.hpp"

namespace oar::testing {

// Blocks |stream|'s work until the returned promise is set, so that tests can
// hold work back and observe what happens meanwhile.
inline std::promise<void> block(Stream& stream) {
  std::promise<void> gate;
  auto released = std::make_shared<std::shared_future<void>>(gate.get_future().share());
  stream.add_callback([released](oar_status_t) { released->wait(); });
  return gate;
}

inline RuntimeOptions cpu_only() {
  RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = {OAR_TEST_CPU_MANIFEST};
  return options;
}

class CpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime_ = std::make_unique<Runtime>(cpu_only());
    ASSERT_EQ(runtime_->devices().size(), 1u) << "the cpu plugin did not load";
    device_ = runtime_->devices()[0];
  }

  Device& device() { return *device_; }

  // |n| bytes 0, 1, 2, ... (mod 251, so that offsets show in the values).
  static std::vector<uint8_t> pattern(size_t n, uint8_t seed = 0) {
    std::vector<uint8_t> bytes(n);
    for (size_t i = 0; i < n; ++i) bytes[i] = uint8_t((i + seed) % 251);
    return bytes;
  }

  // Runs |body| expecting oar::Error with |code|; returns its message.
  template <typename Body>
  static std::string error_of(oar_status_t code, Body&& body) {
    try {
      body();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "expected oar::Error " << status_name(code);
    return {};
  }

  std::unique_ptr<Runtime> runtime_;
  Device* device_ = nullptr;
};

}  // namespace oar::testing
