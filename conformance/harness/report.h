// The certification report: report.json (the record, schema_version 2),
// junit.xml (for CI test views) and report.html (one self-contained page a
// person reads at a glance). All three say the same thing: the verdict
// (certified, not_certified or partial), the profile it certifies and the
// coverage of both profiles.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "conformance/harness/profiles.h"
#include "conformance/harness/runner.h"

namespace oar::conformance {

inline constexpr int kReportSchemaVersion = 2;

// Tests per status, indexed by Status.
struct Counts {
  std::array<size_t, 6> by_status{};

  size_t operator[](Status status) const { return by_status[size_t(status)]; }
  size_t total() const;
  // failed + crashed + timeout: what denies certification.
  size_t failures() const;
  // Nothing failed, crashed or timed out (known failures and skips aside):
  // necessary for a certificate, not sufficient (see judge()).
  bool clean() const { return failures() == 0; }
};

Counts count(const std::vector<TestResult>& results);

struct Report {
  TargetInfo target;
  std::string library_sha256;
  std::string expectations_path;  // empty when the plugin has none
  std::string filter;
  double duration_ms = 0;
  std::chrono::milliseconds base_timeout{0};  // --timeout
  std::chrono::milliseconds test_timeout{0};  // calibrated from target.speed
  std::vector<TestResult> results;
  Judgement judgement;  // judge(results, ...)
};

nlohmann::json report_json(const Report& report);
std::string junit_xml(const Report& report);
std::string report_html(const Report& report);

// Writes report.json, junit.xml and report.html into |dir|, creating it.
// Throws std::runtime_error naming the file that could not be written.
void write_report(const Report& report, const std::string& dir);

// For the XML and HTML writers, and their tests: escapes & < > " ' and
// replaces characters XML 1.0 does not allow.
std::string xml_escape(const std::string& text);

}  // namespace oar::conformance
