// Memory: an oar_memory_t is the cl_mem itself (what DLPack consumers of an
// OpenCL tensor expect); bytes inside it are (cl_mem, offset), never SVM.
// Copies are non-blocking commands on the stream's in-order queue: they run
// after the work before them, and the caller keeps host buffers alive until
// the copy completes, as the ABI says.
#include <string>

#include "opencl.h"

namespace oar::opencl {

void OpenclPlugin::memory_allocate(oar_device_t device, uint64_t size, uint32_t kind,
                                   oar_memory_t* out_memory) {
  require_not_null(device, "device");
  require_not_null(out_memory, "out_memory");
  const oar_device_properties_t& p = device->physical->properties;
  oar::sdk::require(kind == OAR_MEMORY_KIND_DEVICE, OAR_STATUS_INVALID_ARGUMENT,
                    "memory_allocate: kind " + std::to_string(kind) +
                        " is not in the device's memory_kinds (the opencl plugin allocates "
                        "OAR_MEMORY_KIND_DEVICE only)");
  oar::sdk::require(size <= p.max_allocation_size, OAR_STATUS_INVALID_ARGUMENT,
                    "memory_allocate: " + std::to_string(size) +
                        " bytes exceed max_allocation_size " +
                        std::to_string(p.max_allocation_size) + " (CL_DEVICE_MAX_MEM_ALLOC_SIZE)");
  // OpenCL refuses empty buffers; a zero-size allocation still needs a handle
  // of its own, so it holds one byte nobody may touch.
  cl_int code = CL_SUCCESS;
  cl_mem memory = cl().clCreateBuffer(device->physical->context, CL_MEM_READ_WRITE,
                                      size == 0 ? 1 : size, nullptr, &code);
  if (code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
      code == CL_OUT_OF_HOST_MEMORY || code == CL_INVALID_BUFFER_SIZE) {
    throw oar::sdk::Error(OAR_STATUS_RESOURCE_EXHAUSTED,
                          cl_error_message(code, "memory_allocate: clCreateBuffer(" +
                                                     std::to_string(size) + " bytes)"));
  }
  check(code, "memory_allocate: clCreateBuffer");
  allocations_.insert(memory, {size, kind, device});
  *out_memory = reinterpret_cast<oar_memory_t>(memory);
}

void OpenclPlugin::memory_free(oar_device_t device, oar_memory_t memory) {
  if (memory == nullptr) return;
  cl_mem buffer = reinterpret_cast<cl_mem>(memory);
  allocations_.erase(buffer, device);
  cl().clReleaseMemObject(buffer);
}

void OpenclPlugin::memory_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                   const void* src, uint64_t size) {
  require_not_null(stream, "stream");
  cl_mem buffer = reinterpret_cast<cl_mem>(dst);
  allocations_.check_range(buffer, dst_offset, size, "memory_copy_h2d destination");
  if (size == 0) return;
  require_not_null(src, "memory_copy_h2d source");
  check(cl().clEnqueueWriteBuffer(stream->queue, buffer, CL_FALSE, dst_offset, size, src, 0,
                                  nullptr, nullptr),
        "memory_copy_h2d: clEnqueueWriteBuffer");
}

void OpenclPlugin::memory_copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src,
                                   uint64_t src_offset, uint64_t size) {
  require_not_null(stream, "stream");
  cl_mem buffer = reinterpret_cast<cl_mem>(src);
  allocations_.check_range(buffer, src_offset, size, "memory_copy_d2h source");
  if (size == 0) return;
  require_not_null(dst, "memory_copy_d2h destination");
  check(cl().clEnqueueReadBuffer(stream->queue, buffer, CL_FALSE, src_offset, size, dst, 0, nullptr,
                                 nullptr),
        "memory_copy_d2h: clEnqueueReadBuffer");
}

void OpenclPlugin::memory_copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                   oar_memory_t src, uint64_t src_offset, uint64_t size) {
  require_not_null(stream, "stream");
  cl_mem to = reinterpret_cast<cl_mem>(dst);
  cl_mem from = reinterpret_cast<cl_mem>(src);
  allocations_.check_range(to, dst_offset, size, "memory_copy_d2d destination");
  allocations_.check_range(from, src_offset, size, "memory_copy_d2d source");
  if (size == 0) return;
  if (to == from) {
    // The ABI allows only identical overlapping ranges, which need no copy.
    if (dst_offset == src_offset) return;
    oar::sdk::require(dst_offset + size <= src_offset || src_offset + size <= dst_offset,
                      OAR_STATUS_INVALID_ARGUMENT,
                      "memory_copy_d2d: source and destination ranges partly overlap");
  }
  check(cl().clEnqueueCopyBuffer(stream->queue, from, to, src_offset, dst_offset, size, 0, nullptr,
                                 nullptr),
        "memory_copy_d2d: clEnqueueCopyBuffer");
}

void OpenclPlugin::memory_fill(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                               uint8_t value, uint64_t size) {
  require_not_null(stream, "stream");
  cl_mem buffer = reinterpret_cast<cl_mem>(dst);
  allocations_.check_range(buffer, dst_offset, size, "memory_fill destination");
  if (size == 0) return;
  check(cl().clEnqueueFillBuffer(stream->queue, buffer, &value, sizeof(value), dst_offset, size, 0,
                                 nullptr, nullptr),
        "memory_fill: clEnqueueFillBuffer");
}

}  // namespace oar::opencl
