#include "program.h"

#include <cctype>
#include <chrono>
#include <string>
#include <vector>

#include "oar_cl/common_cl.h"
#include "opencl.h"

namespace oar::opencl {

KernelSlot::~KernelSlot() {
  if (kernel != nullptr) cl().clReleaseKernel(kernel);
}

ProgramCache::ProgramCache(PhysicalDevice* device) : device_(device), disk_("opencl") {}

ProgramCache::~ProgramCache() {
  for (auto& [key, program] : programs_) {
    program->kernels.clear();
    if (program->program != nullptr) cl().clReleaseProgram(program->program);
  }
}

KernelSlot& ProgramCache::kernel(size_t slot, const char* source_name, const char* source,
                                 const char* tag, const char* name) {
  std::lock_guard<std::mutex> lock(mutex_);
  Program* cached = slot < kSlots ? slots_[slot] : nullptr;
  if (cached == nullptr) {
    std::string upper = tag;
    for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    cached = &program(source_name, source, std::string("-DX=") + tag + " -DX_" + upper);
    if (slot < kSlots) slots_[slot] = cached;
  }
  Program& entry = *cached;
  auto it = entry.kernels.find(name);
  if (it != entry.kernels.end()) return *it->second;
  cl_int code = CL_SUCCESS;
  cl_kernel kernel = cl().clCreateKernel(entry.program, name, &code);
  check(code, (std::string("clCreateKernel(") + name + ")").c_str());
  auto created = std::make_unique<KernelSlot>();
  created->kernel = kernel;
  return *entry.kernels.emplace(name, std::move(created)).first->second;
}

ProgramCache::Program& ProgramCache::program(const char* source_name, const char* source,
                                             const std::string& options) {
  std::string key = std::string(source_name) + "|" + options;
  auto it = programs_.find(key);
  if (it != programs_.end()) return *it->second;
  // The device's own options: fp64 where it has it, and correctly rounded
  // sqrt/division (the arith tolerances assume one rounding) where it offers it.
  std::string all = options;
  if (device_->fp64) all += " -DOAR_HAS_FP64";
  if (device_->correctly_rounded_sqrt) all += " -cl-fp32-correctly-rounded-divide-sqrt";
  std::string text = std::string(kClCommonSource) + "\n#line 1\n" + source;
  auto program = std::make_unique<Program>();
  program->program = build(source_name, text, all);
  return *programs_.emplace(key, std::move(program)).first->second;
}

cl_program ProgramCache::build(const char* source_name, const std::string& text,
                               const std::string& options) {
  const oar_device_properties_t& p = device_->properties;
  // Everything the binary depends on: a new driver, device or source misses.
  std::string key = std::string("opencl-program|") + device_->platform_name + "|" + p.name + "|" +
                    p.driver_version + "|" + source_name + "|" +
                    oar::sdk::DiskCache::digest(text + "\n--options--\n" + options);
  cl_int code = CL_SUCCESS;
  if (auto binary = disk_.load(key)) {
    const unsigned char* bytes = binary->data();
    size_t size = binary->size();
    cl_int binary_status = CL_SUCCESS;
    cl_program program = cl().clCreateProgramWithBinary(device_->context, 1, &device_->device,
                                                        &size, &bytes, &binary_status, &code);
    if (code == CL_SUCCESS && binary_status == CL_SUCCESS) {
      code = cl().clBuildProgram(program, 1, &device_->device, options.c_str(), nullptr, nullptr);
      if (code == CL_SUCCESS) {
        ++loaded_;
        oar::sdk::log(OAR_LOG_LEVEL_DEBUG, std::string("opencl: loaded program ") + source_name +
                                               " [" + options + "] from the disk cache");
        return program;
      }
    }
    // A binary the driver refuses (a stale or foreign file): compile instead.
    if (program != nullptr) cl().clReleaseProgram(program);
  }
  const char* source = text.c_str();
  size_t length = text.size();
  cl_program program = cl().clCreateProgramWithSource(device_->context, 1, &source, &length, &code);
  check(code, "clCreateProgramWithSource");
  auto start = std::chrono::steady_clock::now();
  code = cl().clBuildProgram(program, 1, &device_->device, options.c_str(), nullptr, nullptr);
  if (code != CL_SUCCESS) {
    try {
      check_build(code, program, device_->device,
                  std::string("clBuildProgram(kernels/") + source_name + ".cl, " + options + ")");
    } catch (...) {
      cl().clReleaseProgram(program);
      throw;
    }
  }
  ++compiled_;
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  oar::sdk::log(OAR_LOG_LEVEL_DEBUG, std::string("opencl: compiled program ") + source_name + " [" +
                                         options + "] in " + std::to_string(int(ms)) + " ms");
  if (disk_.enabled()) {
    size_t size = 0;
    if (cl().clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) ==
            CL_SUCCESS &&
        size > 0) {
      std::vector<unsigned char> binary(size);
      unsigned char* pointer = binary.data();
      if (cl().clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(pointer), &pointer, nullptr) ==
          CL_SUCCESS) {
        disk_.store(key, binary.data(), binary.size());
      }
    }
  }
  return program;
}

}  // namespace oar::opencl
