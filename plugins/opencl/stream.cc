// Streams: one in-order command queue each (with profiling where the device
// has it, for timing events). Host callbacks run on a thread of the stream in
// submission order; later work on the stream waits for each callback through
// a user event, as work waits for any earlier command.
#include <chrono>
#include <cstring>
#include <string>

#include "kernels/kernel.h"  // index_error_operator: the codes of common.cl
#include "opencl.h"

namespace oar::opencl {

StreamErrors::~StreamErrors() {
  if (flag != nullptr) cl().clReleaseMemObject(flag);
}

Record::~Record() {
  // A pending read still writes |flag_value|: it must land before it is freed.
  if (reads_flag && event != nullptr) cl().clWaitForEvents(1, &event);
  if (event != nullptr) cl().clReleaseEvent(event);
}

bool Record::completed() const {
  cl_int execution = CL_QUEUED;
  return cl().clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(execution),
                             &execution, nullptr) != CL_SUCCESS ||
         execution <= CL_COMPLETE;
}

oar_status_t Record::status_after_completion() const {
  if (reads_flag && flag_value != 0) return OAR_STATUS_OUT_OF_RANGE;
  cl_int execution = CL_COMPLETE;
  if (cl().clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(execution), &execution,
                          nullptr) == CL_SUCCESS &&
      execution < 0) {
    return status_of(execution) == OAR_STATUS_OK ? OAR_STATUS_INTERNAL : status_of(execution);
  }
  return OAR_STATUS_OK;
}

cl_mem error_flag(oar_stream_t stream) {
  StreamErrors& errors = *stream->errors;
  if (errors.flag != nullptr) return errors.flag;
  cl_long zero[3] = {0, 0, 0};
  cl_int code = CL_SUCCESS;
  cl_mem flag =
      cl().clCreateBuffer(stream->device->physical->context,
                          CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(zero), zero, &code);
  check(code, "clCreateBuffer(stream error flag)");
  errors.flag = flag;
  return flag;
}

std::shared_ptr<Record> enqueue_point(oar_stream_t stream) {
  auto record = std::make_shared<Record>();
  record->errors = stream->errors;
  if (stream->errors->flag != nullptr) {
    record->reads_flag = true;
    check(cl().clEnqueueReadBuffer(stream->queue, stream->errors->flag, CL_FALSE, 0,
                                   sizeof(record->flag_value), &record->flag_value, 0, nullptr,
                                   &record->event),
          "clEnqueueReadBuffer(stream error flag)");
  } else {
    check(cl().clEnqueueMarkerWithWaitList(stream->queue, 0, nullptr, &record->event),
          "clEnqueueMarkerWithWaitList");
  }
  // Without a flush a driver may hold the command back until the next
  // synchronize, and a polling event_query would never see it complete.
  check(cl().clFlush(stream->queue), "clFlush");
  return record;
}

void throw_if_failed(oar_stream_t stream) {
  StreamErrors& errors = *stream->errors;
  // The record is read while the stream has not failed otherwise, and once
  // more for the message where a completed point already saw the flag.
  bool unread = false;
  if (errors.status == OAR_STATUS_OUT_OF_RANGE) {
    std::lock_guard<std::mutex> lock(errors.mutex);
    unread = errors.message.empty();
  }
  if ((errors.status == OAR_STATUS_OK || unread) && errors.flag != nullptr) {
    // [0]: the operator's code in its low int, [1] the index, [2] the bound.
    cl_long record[3] = {0, 0, 0};
    check(cl().clEnqueueReadBuffer(stream->queue, errors.flag, CL_TRUE, 0, sizeof(record), record,
                                   0, nullptr, nullptr),
          "clEnqueueReadBuffer(stream error record)");
    cl_int code = 0;
    std::memcpy(&code, &record[0], sizeof(code));
    if (code != 0) {
      std::lock_guard<std::mutex> lock(errors.mutex);
      if (errors.message.empty()) {
        errors.message = std::string(index_error_operator(code)) + ": index " +
                         std::to_string(record[1]) + " out of range [0, " +
                         std::to_string(record[2]) + "); the stream has failed";
      }
      errors.status = OAR_STATUS_OUT_OF_RANGE;
    }
  }
  oar_status_t status = errors.status;
  if (status == OAR_STATUS_OK) return;
  std::string message;
  if (status == OAR_STATUS_OUT_OF_RANGE) {
    std::lock_guard<std::mutex> lock(errors.mutex);
    message = errors.message;
  }
  if (message.empty()) {
    message = status == OAR_STATUS_OUT_OF_RANGE
                  ? "a kernel on this stream read an index out of range; the stream has failed"
                  : "asynchronous work on this stream failed";
  }
  throw oar::sdk::Error(status, message);
}

namespace {

void run_callbacks(oar_stream_s* stream) {
  for (;;) {
    CallbackTask task;
    {
      std::unique_lock<std::mutex> lock(stream->callback_mutex);
      stream->callback_ready.wait(lock,
                                  [&] { return stream->stopping || !stream->callbacks.empty(); });
      if (stream->callbacks.empty()) return;  // stopping and drained
      task = std::move(stream->callbacks.front());
      stream->callbacks.pop_front();
    }
    cl_int code = cl().clWaitForEvents(1, &task.point->event);
    oar_status_t status =
        code == CL_SUCCESS
            ? task.point->status_after_completion()
            : (status_of(code) == OAR_STATUS_OK ? OAR_STATUS_INTERNAL : status_of(code));
    if (status == OAR_STATUS_OK) status = stream->errors->status;
    if (status != OAR_STATUS_OK) {
      oar_status_t ok = OAR_STATUS_OK;
      stream->errors->status.compare_exchange_strong(ok, status);
    }
    task.callback(task.user_data, status);
    cl().clSetUserEventStatus(task.release, CL_COMPLETE);
    cl().clReleaseEvent(task.release);
  }
}

}  // namespace

void OpenclPlugin::stream_create(oar_device_t device, const oar_stream_desc_t* desc,
                                 oar_stream_t* out_stream) {
  require_not_null(device, "device");
  require_not_null(out_stream, "out_stream");
  oar::sdk::check_stream_desc(desc);
  // The priority is a hint; OpenCL 1.2 queues have none.
  PhysicalDevice& physical = *device->physical;
  cl_int code = CL_SUCCESS;
  cl_command_queue queue = cl().clCreateCommandQueue(
      physical.context, physical.device, physical.profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &code);
  check(code, "clCreateCommandQueue");
  auto stream = std::make_unique<oar_stream_s>();
  // PoCL often ends an empty op inside the enqueue: blocking waits are then
  // either instant or a sleep, and a median of them goes stale (host_wait.hpp).
  stream->waits.set_retry_stale_loser(true);
  stream->device = device;
  stream->queue = queue;
  stream->errors = std::make_shared<StreamErrors>();
  std::lock_guard<std::mutex> lock(device->mutex);
  device->streams.insert(stream.get());
  *out_stream = stream.release();
}

void OpenclPlugin::destroy_stream(oar_stream_s* stream) {
  // The ABI promises the work is done when destroy returns; a pending error is
  // dropped. Callbacks hold later work, so the queue finishes only once they ran.
  cl().clFinish(stream->queue);
  {
    std::lock_guard<std::mutex> lock(stream->callback_mutex);
    stream->stopping = true;
  }
  stream->callback_ready.notify_all();
  if (stream->callback_thread.joinable()) stream->callback_thread.join();
  cl().clReleaseCommandQueue(stream->queue);
  delete stream;
}

void OpenclPlugin::stream_destroy(oar_stream_t stream) {
  if (stream == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(stream->device->mutex);
    stream->device->streams.erase(stream);
  }
  destroy_stream(stream);
}

void OpenclPlugin::stream_synchronize(oar_stream_t stream) {
  require_not_null(stream, "stream");
  const auto start = std::chrono::steady_clock::now();
  if (stream->waits.should_poll()) {
    // Short work ends before clFinish would even sleep: poll a point at the
    // end of the stream first (host_wait.h); clFinish then returns at once.
    std::shared_ptr<Record> point = enqueue_point(stream);
    stream->waits.poll([&] { return point->completed(); });
  }
  check(cl().clFinish(stream->queue), "clFinish");
  stream->waits.finished(start);
  throw_if_failed(stream);
}

void OpenclPlugin::stream_query(oar_stream_t stream, bool* out_idle) {
  require_not_null(stream, "stream");
  require_not_null(out_idle, "out_idle");
  std::shared_ptr<Record> point = enqueue_point(stream);
  cl_int execution = CL_QUEUED;
  check(cl().clGetEventInfo(point->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(execution),
                            &execution, nullptr),
        "clGetEventInfo");
  bool idle = execution == CL_COMPLETE || execution < 0;
  if (idle) throw_if_failed(stream);
  *out_idle = idle;
}

void OpenclPlugin::stream_wait_event(oar_stream_t stream, oar_event_t event) {
  require_not_null(stream, "stream");
  require_not_null(event, "event");
  std::shared_ptr<Record> record = event->latest();
  oar::sdk::require(record != nullptr, OAR_STATUS_FAILED_PRECONDITION,
                    "stream_wait_event: the event was never recorded");
  oar::sdk::require(event->device->physical == stream->device->physical,
                    OAR_STATUS_INVALID_ARGUMENT,
                    "stream_wait_event: the event belongs to another OpenCL device (another "
                    "context): wait on the host instead");
  // The barrier holds its own reference to the cl_event: the OAR event may be
  // destroyed or re-recorded right after this call.
  check(cl().clEnqueueBarrierWithWaitList(stream->queue, 1, &record->event, nullptr),
        "clEnqueueBarrierWithWaitList");
}

void OpenclPlugin::stream_add_host_callback(oar_stream_t stream, oar_host_callback_fn callback,
                                            void* user_data) {
  require_not_null(stream, "stream");
  oar::sdk::require(callback != nullptr, OAR_STATUS_INVALID_ARGUMENT,
                    "stream_add_host_callback: callback is NULL");
  cl_int code = CL_SUCCESS;
  cl_event release = cl().clCreateUserEvent(stream->device->physical->context, &code);
  check(code, "clCreateUserEvent");
  CallbackTask task;
  try {
    task.point = enqueue_point(stream);
    // Work submitted after the callback runs after it, as on any stream.
    check(cl().clEnqueueBarrierWithWaitList(stream->queue, 1, &release, nullptr),
          "clEnqueueBarrierWithWaitList");
  } catch (...) {
    cl().clSetUserEventStatus(release, CL_COMPLETE);
    cl().clReleaseEvent(release);
    throw;
  }
  task.release = release;
  task.callback = callback;
  task.user_data = user_data;
  {
    std::lock_guard<std::mutex> lock(stream->callback_mutex);
    if (!stream->callback_thread.joinable()) {
      stream->callback_thread = std::thread(run_callbacks, stream);
    }
    stream->callbacks.push_back(std::move(task));
  }
  stream->callback_ready.notify_one();
}

}  // namespace oar::opencl
