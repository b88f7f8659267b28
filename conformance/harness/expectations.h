// A plugin's conformance expectations: plugins/<name>/conformance.json.
//
//   {"unsupported":    [{"tests": "ops/conv2d/*", "reason": "..."}],
//    "known_failures": [{"tests": "ops/erf/f16/*", "reason": "..."}]}
//
// "unsupported" is permanent: those tests are skipped with the reason and
// never run. "known_failures" is temporary: a failing, crashing or hanging test
// becomes known_failure, and one that passes is reported as failed so that the
// entry gets removed. Globs follow fnmatch(3) without FNM_PATHNAME: '*' also
// matches '/'.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace oar::conformance {

struct Expectation {
  std::string tests;  // glob over test ids
  std::string reason;
};

struct Expectations {
  std::string path;  // where they were read from; empty when none
  std::vector<Expectation> unsupported;
  std::vector<Expectation> known_failures;

  // The first entry whose glob matches |id|, or nullptr.
  const Expectation* find_unsupported(const std::string& id) const;
  const Expectation* find_known_failure(const std::string& id) const;
};

// Parses |path|; throws std::runtime_error naming the file and the fault (bad
// JSON, an unknown key, an entry without "tests" or "reason").
Expectations load_expectations(const std::string& path);

// The default expectations file of plugin |name|: the first that exists of
// <source dir>/plugins/<name>/conformance.json (baked in at build time) and
// <prefix>/share/oar/conformance/<name>.json (|prefix| is the folder above
// the executable's bin/). std::nullopt when neither exists.
std::optional<std::string> find_expectations(const std::string& name, const std::string& prefix);

// True when |id| matches one of the comma-separated globs of |filter|; an
// empty filter matches everything.
bool matches_filter(const std::string& filter, const std::string& id);

}  // namespace oar::conformance
