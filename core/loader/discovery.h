// Finding plugins: manifests in the install prefix, then in the configured and
// OAR_PLUGIN_PATH folders; or exactly the files OAR_PLUGINS lists.
#pragma once

#include <string>
#include <vector>

#include "core/util/status.h"
#include "oar/runtime.hpp"

namespace oar::loader {

// One plugin to try: a manifest that parsed (library_path resolved), a library
// named directly, or a manifest that failed (status says why).
struct Candidate {
  std::string name;
  std::string manifest_path;
  std::string library_path;
  Status status;
};

// <prefix>/share/oar/plugins.d, found relative to liboar's own location.
std::string install_manifest_dir();

// Candidates in search order; environment variables already applied.
std::vector<Candidate> discover(const RuntimeOptions& options);

}  // namespace oar::loader
