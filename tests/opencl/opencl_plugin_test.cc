// Facts about the opencl plugin the conformance suite does not cover: the
// OpenCL error helper, zero devices without an ICD, and the disk cache of
// program binaries. Facts that depend on the process environment (the ICD
// loader reads OCL_ICD_VENDORS once; the plugin reads the cache variables at
// load) run this binary again as a child with "--child" and read its output.
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "error.h"
#include "oar/oar.hpp"
#include "oar/ops.hpp"
#include "oar/sdk/plugin.hpp"

namespace {

namespace fs = std::filesystem;

// The child: load the plugin alone, print the device count and, with a
// device, run one add and check it.
int child_main() {
  oar::RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = {OAR_TEST_OPENCL_MANIFEST};
  oar::Runtime runtime(options);
  std::printf("devices=%zu\n", runtime.devices().size());
  if (runtime.devices().empty()) return 0;
  oar::Device& device = *runtime.devices()[0];
  oar::Stream& stream = device.default_stream();
  std::vector<float> a = {1, 2, 3, 4, 5}, b = {10, 20, 30, 40, 50}, y(5, 0);
  oar::Tensor ta = oar::Tensor::empty(device, {5}, oar::dtype::f32);
  oar::Tensor tb = oar::Tensor::empty(device, {5}, oar::dtype::f32);
  ta.copy_from_host(stream, a.data());
  tb.copy_from_host(stream, b.data());
  oar::Tensor ty = oar::ops::add(stream, ta, tb);
  ty.copy_to_host(stream, y.data());
  stream.synchronize();
  bool ok = y == std::vector<float>{11, 22, 33, 44, 55};
  std::printf("result=%s\n", ok ? "ok" : "wrong");
  return ok ? 0 : 1;
}

struct ChildResult {
  int exit_code;
  std::string output;  // stdout and stderr
};

// Runs this binary as a child with |environment| added (an empty value unsets).
ChildResult run_child(const std::map<std::string, std::string>& environment) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {-1, "pipe failed"};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    for (const auto& [name, value] : environment) {
      if (value.empty()) {
        unsetenv(name.c_str());
      } else {
        setenv(name.c_str(), value.c_str(), 1);
      }
    }
    execl("/proc/self/exe", "opencl_plugin_test", "--child", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string output;
  char chunk[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], chunk, sizeof(chunk))) > 0) output.append(chunk, size_t(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::map<std::string, fs::file_time_type> files_in(const fs::path& folder) {
  std::map<std::string, fs::file_time_type> files;
  if (!fs::exists(folder)) return files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    files[entry.path().filename().string()] = fs::last_write_time(entry.path());
  }
  return files;
}

// Whether the machine has an OpenCL device (the cache tests need one).
bool has_device() {
  static const bool found = [] {
    ChildResult child = run_child({{"OAR_KERNEL_CACHE", "0"}});
    return child.exit_code == 0 && !contains(child.output, "devices=0");
  }();
  return found;
}

class OpenclPluginCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!has_device()) GTEST_SKIP() << "no OpenCL device on this machine";
    folder_ = fs::temp_directory_path() /
              ("oar-opencl-cache-" + std::to_string(getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }
  fs::path folder_;
};

TEST(OpenclPluginTest, ClErrorBecomesItsStatusWithTheClName) {
  try {
    oar::opencl::check(CL_OUT_OF_RESOURCES, "clEnqueueNDRangeKernel(u_exp)");
    FAIL() << "check(CL_OUT_OF_RESOURCES) did not throw";
  } catch (const oar::sdk::Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_RESOURCE_EXHAUSTED);
    EXPECT_TRUE(contains(e.what(), "CL_OUT_OF_RESOURCES")) << e.what();
    EXPECT_TRUE(contains(e.what(), "clEnqueueNDRangeKernel(u_exp)")) << e.what();
  }
  EXPECT_EQ(oar::opencl::status_of(CL_INVALID_VALUE), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(oar::opencl::status_of(CL_MEM_OBJECT_ALLOCATION_FAILURE),
            OAR_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_EQ(oar::opencl::cl_error_name(CL_INVALID_KERNEL_NAME), "CL_INVALID_KERNEL_NAME");
  EXPECT_EQ(oar::opencl::cl_error_name(-9999), "CL error -9999");
  EXPECT_EQ(oar::opencl::status_of(-9999), OAR_STATUS_INTERNAL);
  EXPECT_NO_THROW(oar::opencl::check(CL_SUCCESS, "clFinish"));
}

TEST(OpenclPluginTest, BuildFailureCarriesTheBuildLog) {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  if (clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS) {
    GTEST_SKIP() << "no OpenCL device on this machine";
  }
  cl_int code = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &code);
  ASSERT_EQ(code, CL_SUCCESS);
  const char* source = "__kernel void broken(__global float* y) { y[0] = undeclared_name; }";
  cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &code);
  ASSERT_EQ(code, CL_SUCCESS);
  code = clBuildProgram(program, 1, &device, "", nullptr, nullptr);
  ASSERT_EQ(code, CL_BUILD_PROGRAM_FAILURE);
  try {
    oar::opencl::check_build(code, program, device, "clBuildProgram(broken)");
    ADD_FAILURE() << "check_build did not throw";
  } catch (const oar::sdk::Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_INTERNAL);
    EXPECT_TRUE(contains(e.what(), "CL_BUILD_PROGRAM_FAILURE")) << e.what();
    EXPECT_TRUE(contains(e.what(), "build log")) << e.what();
    EXPECT_TRUE(contains(e.what(), "undeclared_name")) << e.what();
  }
  clReleaseProgram(program);
  clReleaseContext(context);
}

TEST(OpenclPluginTest, ZeroDevicesWithoutAnIcd) {
  ChildResult child = run_child({{"OCL_ICD_VENDORS", "/nonexistent"}});
  EXPECT_EQ(child.exit_code, 0) << child.output;
  EXPECT_TRUE(contains(child.output, "devices=0")) << child.output;
  EXPECT_TRUE(contains(child.output, "no OpenCL platform found")) << child.output;
  EXPECT_TRUE(contains(child.output, "pocl-opencl-icd")) << child.output;
}

TEST(OpenclPluginTest, ZeroDevicesWithoutTheIcdLoader) {
  ChildResult child = run_child({{"OAR_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1"}});
  EXPECT_EQ(child.exit_code, 0) << child.output;
  EXPECT_TRUE(contains(child.output, "devices=0")) << child.output;
  EXPECT_TRUE(contains(child.output, "/nonexistent/libOpenCL.so.1 cannot be loaded"))
      << child.output;
  EXPECT_TRUE(contains(child.output, "ocl-icd-libopencl1")) << child.output;
}

TEST_F(OpenclPluginCacheTest, SecondRunLoadsProgramsFromTheDiskCache) {
  std::map<std::string, std::string> environment = {
      {"OAR_KERNEL_CACHE_DIR", folder_.string()}, {"OAR_KERNEL_CACHE", ""}, {"OAR_LOG", "debug"}};
  ChildResult first = run_child(environment);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_TRUE(contains(first.output, "result=ok")) << first.output;
  EXPECT_TRUE(contains(first.output, "compiled program elementwise")) << first.output;
  auto stored = files_in(folder_);
  EXPECT_FALSE(stored.empty()) << "the first run stored no program binary in " << folder_;

  ChildResult second = run_child(environment);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_TRUE(contains(second.output, "result=ok")) << second.output;
  EXPECT_TRUE(contains(second.output, "loaded program elementwise")) << second.output;
  EXPECT_FALSE(contains(second.output, "compiled program")) << second.output;
  EXPECT_EQ(files_in(folder_), stored) << "the second run rewrote the cache";
}

TEST_F(OpenclPluginCacheTest, CacheOffCompilesAndWritesNothing) {
  ChildResult child = run_child({{"OAR_KERNEL_CACHE_DIR", folder_.string()},
                                 {"OAR_KERNEL_CACHE", "0"},
                                 {"OAR_LOG", "debug"}});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_TRUE(contains(child.output, "result=ok")) << child.output;
  EXPECT_TRUE(contains(child.output, "compiled program elementwise")) << child.output;
  EXPECT_TRUE(files_in(folder_).empty()) << "OAR_KERNEL_CACHE=0 still wrote " << folder_;
}

TEST(OpenclPluginTest, IndexOutOfRangeFailsTheStreamAndLaterEventsOnly) {
  oar::RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = {OAR_TEST_OPENCL_MANIFEST};
  oar::Runtime runtime(options);
  if (runtime.devices().empty()) GTEST_SKIP() << "no OpenCL device on this machine";
  oar::Device& device = *runtime.devices()[0];
  oar::Stream stream = device.create_stream();
  std::vector<float> weights = {1, 2, 3, 4, 5, 6};  // [3, 2]
  std::vector<int64_t> indices = {0, 5};            // 5 is outside [0, 3)
  oar::Tensor w = oar::Tensor::empty(device, {3, 2}, oar::dtype::f32);
  oar::Tensor index = oar::Tensor::empty(device, {2}, oar::dtype::i64);
  w.copy_from_host(stream, weights.data());
  index.copy_from_host(stream, indices.data());
  stream.synchronize();
  oar::Event before = device.create_event();
  before.record(stream);
  std::vector<oar::Tensor> y = oar::ops::call(stream, "embedding", {&w, &index});
  oar::Event after = device.create_event();
  after.record(stream);
  EXPECT_NO_THROW(before.synchronize());
  try {
    after.synchronize();
    ADD_FAILURE() << "an event recorded after the failing kernel completed without error";
  } catch (const oar::Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_OUT_OF_RANGE) << e.what();
  }
  for (int attempt = 0; attempt < 2; ++attempt) {  // the stream stays failed
    try {
      stream.synchronize();
      ADD_FAILURE() << "stream_synchronize succeeded after an index out of range";
    } catch (const oar::Error& e) {
      EXPECT_EQ(e.code(), OAR_STATUS_OUT_OF_RANGE) << e.what();
      EXPECT_TRUE(contains(e.what(), "out of range")) << e.what();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--child") {
    try {
      return child_main();
    } catch (const std::exception& e) {
      std::printf("child failed: %s\n", e.what());
      return 2;
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
