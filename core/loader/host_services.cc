#include "core/loader/host_services.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "core/loader/environment.h"
#include "core/loader/plugin.h"
#include "core/loader/text.h"
#include "core/trace/tracer.h"

namespace oar::detail {
namespace {

struct ReportedError {
  const Plugin* plugin = nullptr;
  oar_status_t code = OAR_STATUS_OK;
  std::string message;
};

// Per thread: a plugin reports on the thread that returns the failing status,
// so two threads failing at once never see each other's message.
thread_local ReportedError t_reported;

std::atomic<bool> g_quiet{false};

int32_t threshold() {
  static const int32_t level = [] {
    auto value = loader::get_environment("OAR_LOG");
    if (!value) return int32_t(OAR_LOG_LEVEL_WARNING);
    if (*value == "debug") return int32_t(OAR_LOG_LEVEL_DEBUG);
    if (*value == "info") return int32_t(OAR_LOG_LEVEL_INFO);
    if (*value == "error") return int32_t(OAR_LOG_LEVEL_ERROR);
    if (*value == "off") return int32_t(OAR_LOG_LEVEL_ERROR + 1);
    if (*value != "warning") {
      std::fprintf(stderr,
                   "[oar] warning: OAR_LOG=%s is not one of debug, info, warning, error, off; "
                   "logging warnings and errors\n",
                   loader::clipped(*value, 64).c_str());
    }
    return int32_t(OAR_LOG_LEVEL_WARNING);
  }();
  return level;
}

void report_error(void* context, oar_status_t code, const char* message) {
  t_reported.plugin = static_cast<const Plugin*>(context);
  t_reported.code = code;
  t_reported.message = message != nullptr ? message : "";
}

void log(void* context, int32_t level, const char* message) {
  const auto* plugin = static_cast<const Plugin*>(context);
  log_line(level, plugin->name(), message != nullptr ? message : "");
}

void trace(void* context, const oar_trace_record_t* record) {
  Tracer& tracer = Tracer::instance();
  if (!tracer.enabled() || record == nullptr ||
      record->struct_size < OAR_TRACE_RECORD_STRUCT_SIZE) {
    return;
  }
  const auto* plugin = static_cast<const Plugin*>(context);
  tracer.add(record->name != nullptr ? record->name : "?",
             record->category != nullptr ? record->category : "plugin", plugin->name(),
             reinterpret_cast<uintptr_t>(record->stream), record->start_ns, record->end_ns);
}

}  // namespace

oar_host_services_t make_host_services(const Plugin* plugin) {
  oar_host_services_t host{};
  host.struct_size = OAR_HOST_SERVICES_STRUCT_SIZE;
  host.abi_major = OAR_ABI_MAJOR;
  host.abi_minor = OAR_ABI_MINOR;
  host.context = const_cast<Plugin*>(plugin);
  host.report_error = &report_error;
  host.log = &log;
  host.trace = &trace;
  return host;
}

std::string take_reported_error(const Plugin* plugin) {
  if (t_reported.plugin != plugin || t_reported.message.empty()) {
    return "(the plugin reported no message)";
  }
  t_reported.plugin = nullptr;
  return std::move(t_reported.message);
}

void quiet_logging() noexcept { g_quiet.store(true, std::memory_order_relaxed); }

void log_line(int32_t level, const std::string& source, const std::string& message) {
  if (level < threshold()) return;
  if (level < OAR_LOG_LEVEL_ERROR && g_quiet.load(std::memory_order_relaxed)) return;
  static const char* names[] = {"debug", "info", "warning", "error"};
  const char* name = level >= 0 && level <= 3 ? names[level] : "log";
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(stderr, "oar[%s] %s: %s\n", source.c_str(), name, message.c_str());
}

}  // namespace oar::detail
