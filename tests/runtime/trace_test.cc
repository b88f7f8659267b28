// OAR_TRACE streams the core's calls to a Chrome-trace JSON file: memory stays
// bounded however long the run, and a file that cannot be written is reported
// when it happens, with the system's reason.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/trace/tracer.h"
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

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("oar_" + name + "_" + std::to_string(getpid()) + ".json"))
      .string();
}

uint64_t file_size(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? uint64_t(info.st_size) : 0;
}

void add_records(size_t count, const std::string& name = "op") {
  detail::Tracer& tracer = detail::Tracer::instance();
  for (size_t i = 0; i < count; ++i) {
    uint64_t now = detail::Tracer::now_ns();
    tracer.add(name, "op", "cpu:0", 1, now, now + 10);
  }
}

TEST(TraceTest, RecordsAreStreamedToDiskWithBoundedMemory) {
  std::string path = temp_path("trace_stream");
  detail::Tracer& tracer = detail::Tracer::instance();
  tracer.start(path);
  const size_t kRecords = 20 * detail::Tracer::kBatchRecords + 17;
  size_t most_buffered = 0;
  for (size_t i = 0; i < kRecords; i += 1000) {
    add_records(std::min<size_t>(1000, kRecords - i));
    most_buffered = std::max(most_buffered, tracer.buffered_records());
  }
  // Before shutdown: most of the trace is on disk already, little in memory.
  EXPECT_GT(file_size(path), uint64_t(15 * detail::Tracer::kBatchRecords * 50))
      << "the trace was kept in memory instead of written as the program ran";
  EXPECT_LT(most_buffered, detail::Tracer::kBatchRecords);
  tracer.stop();
  std::ifstream file(path);
  nlohmann::json trace = nlohmann::json::parse(file);  // valid JSON once stopped
  std::filesystem::remove(path);
  EXPECT_EQ(trace.at("traceEvents").size(), kRecords);
}

TEST(TraceTest, NamesThatAreNotUtf8StillMakeValidJson) {
  std::string path = temp_path("trace_latin1");
  detail::Tracer& tracer = detail::Tracer::instance();
  tracer.start(path);
  add_records(3, "caf\xe9 \"quoted\"\n\x01");
  tracer.stop();
  std::ifstream file(path);
  nlohmann::json trace = nlohmann::json::parse(file);
  std::filesystem::remove(path);
  ASSERT_EQ(trace.at("traceEvents").size(), 3u);
  std::string name = trace.at("traceEvents")[0].at("name").get<std::string>();
  EXPECT_EQ(name.substr(0, 3), "caf");
  EXPECT_NE(name.find("\"quoted\"\n\x01"), std::string::npos) << name;
}

TEST(TraceTest, AnUnwritablePathIsReportedAtStartWithTheSystemsReason) {
  std::string directory = temp_path("trace_dir");
  std::filesystem::create_directory(directory);
  ::testing::internal::CaptureStderr();
  detail::Tracer::instance().start(directory);
  std::string at_start = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(detail::Tracer::instance().enabled());
  detail::Tracer::instance().stop();
  std::filesystem::remove(directory);
  EXPECT_NE(at_start.find(directory), std::string::npos) << at_start;
  EXPECT_NE(at_start.find(std::strerror(EISDIR)), std::string::npos) << at_start;

  ::testing::internal::CaptureStderr();
  detail::Tracer::instance().start("/nonexistent-oar-dir/trace.json");
  at_start = ::testing::internal::GetCapturedStderr();
  detail::Tracer::instance().stop();
  EXPECT_NE(at_start.find(std::strerror(ENOENT)), std::string::npos) << at_start;
}

TEST(TraceTest, AFullDiskIsReportedWhenAWriteFailsNotAtExit) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full here";
  detail::Tracer& tracer = detail::Tracer::instance();
  ::testing::internal::CaptureStderr();
  tracer.start("/dev/full");
  add_records(3 * detail::Tracer::kBatchRecords);
  std::string while_running = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(while_running.find(std::strerror(ENOSPC)), std::string::npos)
      << "a full disk went unreported while the program ran: " << while_running;
  EXPECT_FALSE(tracer.enabled()) << "tracing went on after a failed write";
  ::testing::internal::CaptureStderr();
  tracer.stop();
  std::string at_stop = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(at_stop.find("not written"), std::string::npos) << at_stop;
}

TEST(TraceTest, TracingFromManyThreadsKeepsEveryRecord) {
  std::string path = temp_path("trace_threads");
  detail::Tracer& tracer = detail::Tracer::instance();
  tracer.start(path);
  std::vector<std::thread> threads;
  const size_t kPerThread = 3 * detail::Tracer::kBatchRecords + 5;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&] { add_records(kPerThread); });
  for (std::thread& thread : threads) thread.join();
  tracer.stop();
  std::ifstream file(path);
  nlohmann::json trace = nlohmann::json::parse(file);
  std::filesystem::remove(path);
  EXPECT_EQ(trace.at("traceEvents").size(), 4 * kPerThread);
}

}  // namespace
}  // namespace oar::testing
