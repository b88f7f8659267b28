// OAR_TRACE writes the core's calls as Chrome-trace JSON at shutdown.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cpu_fixture.h"

namespace oar::testing {
namespace {

TEST(TraceTest, OarTraceWritesOpsCopiesAndSyncsAsChromeTraceJson) {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("oar_trace_test_" + std::to_string(getpid()) + ".json"))
                         .string();
  setenv("OAR_TRACE", path.c_str(), 1);
  {
    RuntimeOptions options = cpu_only();
    options.use_environment = true;
    Runtime runtime(options);
    unsetenv("OAR_TRACE");
    Device& cpu = runtime.device("cpu:0");
    Stream& stream = cpu.default_stream();
    std::vector<float> host(64, 1.0f);
    Tensor a = Tensor::empty(cpu, {64}, dtype::f32);
    a.copy_from_host(stream, host.data());
    dispatch(stream, OpId("relu"), {&a}, {&a});
    a.copy_to_host(stream, host.data());
    stream.synchronize();
  }
  std::ifstream file(path);
  ASSERT_TRUE(file) << "no trace written to " << path;
  nlohmann::json trace = nlohmann::json::parse(file);
  std::filesystem::remove(path);
  std::set<std::string> names;
  for (const auto& event : trace.at("traceEvents")) {
    EXPECT_EQ(event.at("ph"), "X");
    EXPECT_GE(event.at("dur").get<double>(), 0.0);
    names.insert(event.at("name").get<std::string>());
  }
  for (const char* expected : {"relu", "copy_h2d", "copy_d2h", "stream_synchronize"}) {
    EXPECT_TRUE(names.count(expected)) << "no '" << expected << "' record";
  }
}

}  // namespace
}  // namespace oar::testing
