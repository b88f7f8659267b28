// The validation layer (OAR_VALIDATE=1, RuntimeOptions::validate): checking
// wrappers interposed in a plugin's copied table. Each wrapper verifies its
// handles, ranges and ordering against what it has seen the plugin hand out,
// reports a misuse through the plugin's host services (so the core's normal
// error flow carries the message) and only then calls the plugin's own slot.
// When validation is off nothing is installed: the table is the plugin's own.
#pragma once

#include <string>

#include "oar/plugin.h"

namespace oar::detail::validate {

// Replaces the device, stream, event and memory slots of |api| with checking
// wrappers that call the slots |api| holds now. |host| is the plugin's host
// services (errors are reported through it). Returns the validator slot to pass
// to uninstall, or -1 (and leaves |api| alone) when too many plugins are
// validated at once.
int install(oar_plugin_api_t* api, const oar_host_services_t& host, const std::string& plugin_name);

// Forgets what the validator slot tracked; call after the plugin is finalized.
void uninstall(int slot);

// Appends |message| to the reports oar::validation_reports() returns.
void add_report(const std::string& message);

}  // namespace oar::detail::validate
