// The services the core offers every plugin (oar_host_services_t): error
// messages kept per thread, logging, and trace records.
#pragma once

#include <string>

#include "oar/plugin.h"

namespace oar::detail {

class Plugin;

// Services whose context is |plugin|.
oar_host_services_t make_host_services(const Plugin* plugin);

// The message |plugin| reported on this thread for its last failure (and
// forgets it), or a placeholder saying it gave none.
std::string take_reported_error(const Plugin* plugin);

// Writes one diagnostic line to stderr if |level| passes OAR_LOG (default:
// warnings and errors).
void log_line(int32_t level, const std::string& source, const std::string& message);

// From now on in this process, drops lines below OAR_LOG_LEVEL_ERROR. A probe
// child calls it: the process that asked loads the same plugin again and
// prints its warnings once (`oar list` printed every plugin warning twice).
void quiet_logging() noexcept;

}  // namespace oar::detail
