#include "conformance/harness/report.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "cli/describe.h"

namespace oar::conformance {
namespace {

using nlohmann::json;

constexpr Status kAllStatuses[] = {Status::kPassed,       Status::kFailed,  Status::kSkipped,
                                   Status::kKnownFailure, Status::kCrashed, Status::kTimeout};

// Columns of the coverage matrix in a reader's order; other dtypes follow.
constexpr const char* kDtypeOrder[] = {"f32", "f16", "bf16", "f64", "i8",
                                       "u8",  "i32", "i64",  "bool"};

std::string utc_time_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

json host_json() {
  char hostname[256] = "unknown";
  gethostname(hostname, sizeof(hostname) - 1);
  utsname system{};
  uname(&system);
  return {{"hostname", hostname},
          {"os", fmt::format("{} {} {}", system.sysname, system.release, system.machine)},
          {"cpu", cpu_model()},
          {"cpu_count", sysconf(_SC_NPROCESSORS_ONLN)},
          {"time", utc_time_iso8601()}};
}

json coverage_json(const Coverage& coverage) {
  json gaps = json::array();
  for (const Gap& gap : coverage.gaps) {
    gaps.push_back({{"op", gap.op}, {"dtype", gap.dtype}, {"reason", gap.reason}});
  }
  return {{"operators", coverage.operators}, {"operators_covered", coverage.operators_covered},
          {"pairs", coverage.pairs},         {"pairs_covered", coverage.pairs_covered},
          {"complete", coverage.complete()}, {"gaps", gaps}};
}

json profile_json(const Judgement& judgement) {
  return judgement.profile ? json(profile_name(*judgement.profile)) : json(nullptr);
}

// The banner's words and its CSS class.
std::string banner_title(const Judgement& judgement) {
  switch (judgement.verdict) {
    case Verdict::kCertified:
      return fmt::format("CERTIFIED &middot; {} profile", profile_name(*judgement.profile));
    case Verdict::kPartial:
      return "PARTIAL RUN";
    case Verdict::kNotCertified:
      break;
  }
  return "NOT CERTIFIED";
}

json counts_json(const Counts& counts) {
  json value = json::object();
  for (Status status : kAllStatuses) value[status_name(status)] = counts[status];
  value["total"] = counts.total();
  return value;
}

json plugin_section(const Report& report) {
  json plugin = cli::plugin_json(report.target.plugin);
  plugin["library_sha256"] = report.library_sha256;
  return plugin;
}

// Length of the valid UTF-8 sequence at |text[i]|, or 0 when it is invalid.
size_t utf8_sequence_length(const std::string& text, size_t i) {
  const auto byte = uint8_t(text[i]);
  size_t length = byte < 0x80           ? 1
                  : (byte >> 5) == 0x6  ? 2
                  : (byte >> 4) == 0xe  ? 3
                  : (byte >> 3) == 0x1e ? 4
                                        : 0;
  if (length == 0 || i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((uint8_t(text[i + k]) & 0xc0) != 0x80) return 0;
  }
  return length;
}

std::string seconds(double milliseconds) { return fmt::format("{:.3f}", milliseconds / 1e3); }

// --- HTML ------------------------------------------------------------------

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2430;background:#f5f6f8}
main{max-width:1200px;margin:0 auto;padding:0 24px 48px}
.banner{padding:28px 24px;color:#fff;text-align:center}
.banner h1{margin:0;font-size:44px;letter-spacing:2px}
.banner p{margin:6px 0 0;font-size:16px;opacity:.9}
.certified{background:#1e8e3e}.not_certified{background:#c5221f}.partial{background:#5f6368}
.banner p.coverage{font-size:15px;margin-top:8px}
h2{margin:28px 0 10px;font-size:18px}
table{border-collapse:collapse;background:#fff}
td,th{border:1px solid #d9dde3;padding:4px 8px;text-align:left;vertical-align:top}
.kv th{background:#eef0f3;width:170px}.mono{font-family:ui-monospace,monospace;word-break:break-all}
.counts{display:flex;gap:10px;flex-wrap:wrap}
.count{padding:10px 16px;border-radius:6px;min-width:90px;text-align:center;color:#fff}
.count b{display:block;font-size:26px}
.s-passed{background:#1e8e3e;color:#fff}.s-skipped{background:#9aa0a6;color:#fff}
.s-known_failure{background:#f9ab00;color:#1d2430}.s-failed{background:#d93025;color:#fff}
.s-timeout{background:#a142f4;color:#fff}.s-crashed{background:#7b1113;color:#fff}
.matrix td{text-align:center;min-width:44px}.matrix td.none{background:#fff}
.matrix th{background:#eef0f3}
pre{white-space:pre-wrap;margin:4px 0;font-size:12px;background:#f1f3f4;padding:6px}
.legend span{padding:2px 8px;margin-right:6px;border-radius:4px}
details{margin:8px 0}summary{cursor:pointer;font-weight:600}
)";

std::string h(const std::string& text) { return xml_escape(text); }

std::string status_badge(Status status) {
  return fmt::format("<span class=\"s-{0}\" style=\"padding:1px 6px;border-radius:4px\">{0}</span>",
                     status_name(status));
}

std::string key_value_rows(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string html;
  for (const auto& [key, value] : rows) {
    html += fmt::format("<tr><th>{}</th><td class=\"mono\">{}</td></tr>\n", h(key), h(value));
  }
  return html;
}

std::string join(const json& list) {
  std::string text;
  for (const auto& item : list) text += (text.empty() ? "" : ", ") + item.get<std::string>();
  return text.empty() ? "-" : text;
}

std::string timeouts_text(const Report& report) {
  const DeviceSpeed& speed = report.target.speed;
  std::string text =
      fmt::format("{} s ({} s + {} x round trip", seconds(report.test_timeout.count()),
                  seconds(report.base_timeout.count()), kRoundTripsPerTest);
  text += fmt::format("; copy {:.3f} ms, f32 add of 2^20 {:.3f} ms)", speed.copy_round_trip_ms,
                      speed.kernel_round_trip_ms);
  if (!speed.note.empty()) text += "; " + speed.note;
  return text;
}

std::string coverage_html(const Judgement& judgement) {
  std::string html =
      "<table class=\"kv\"><tr><th>profile</th><th>operators</th><th>op &times; dtype "
      "pairs</th><th>complete</th></tr>\n";
  for (const Coverage* coverage : {&judgement.core, &judgement.full}) {
    html += fmt::format("<tr><th>{}</th><td>{}/{}</td><td>{}/{}</td><td>{}</td></tr>\n",
                        profile_name(coverage->profile), coverage->operators_covered,
                        coverage->operators, coverage->pairs_covered, coverage->pairs,
                        coverage->complete() ? "yes" : "no");
  }
  html += "</table>\n";
  if (!judgement.reasons.empty()) {
    html += "<p>Not certified because:</p><ul>";
    for (const auto& reason : judgement.reasons) html += "<li>" + h(reason) + "</li>";
    html += "</ul>\n";
  }
  const std::vector<Gap>& gaps = judgement.full.gaps;
  html += fmt::format("<details{}><summary>Pairs not covered ({})</summary>",
                      gaps.size() > 0 && gaps.size() <= 40 ? " open" : "", gaps.size());
  if (gaps.empty()) return html + "<p>None.</p></details>\n";
  std::set<std::pair<std::string, std::string>> core;
  for (const Gap& gap : judgement.core.gaps) core.insert({gap.op, gap.dtype});
  html += "<table><tr><th>op</th><th>dtype</th><th>profile</th><th>why</th></tr>\n";
  for (const Gap& gap : gaps) {
    html +=
        fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", h(gap.op),
                    h(gap.dtype), core.count({gap.op, gap.dtype}) ? "core" : "full", h(gap.reason));
  }
  return html + "</table></details>\n";
}

std::string summary_tables(const Report& report) {
  const PluginRecord& plugin = report.target.plugin;
  const json properties = cli::properties_json(report.target.properties, plugin.abi_minor);
  const json host = host_json();
  std::string html = "<div style=\"display:flex;gap:24px;flex-wrap:wrap\">";
  html +=
      "<table class=\"kv\">" +
      key_value_rows({{"plugin", plugin.name},
                      {"version", plugin.version},
                      {"vendor", plugin.vendor},
                      {"ABI", fmt::format("{}.{}", plugin.abi_major, plugin.abi_minor)},
                      {"library", plugin.library_path},
                      {"library SHA-256", report.library_sha256},
                      {"expectations",
                       report.expectations_path.empty() ? "(none)" : report.expectations_path}}) +
      "</table>";
  html += "<table class=\"kv\">" +
          key_value_rows({{"device", report.target.device_name},
                          {"name", properties["name"]},
                          {"vendor", properties["vendor"]},
                          {"driver", properties["driver_version"]},
                          {"kind", properties["kind"]},
                          {"memory", cli::human_bytes(report.target.properties.total_memory)},
                          {"dtypes beyond f32/int", join(properties["dtypes"])},
                          {"native arithmetic",
                           cli::native_dtypes_text(report.target.properties, plugin.abi_minor)},
                          {"features", join(properties["features"])}}) +
          "</table>";
  html += "<table class=\"kv\">" +
          key_value_rows({{"suite version", kSuiteVersion},
                          {"filter", report.filter.empty() ? "(all tests)" : report.filter},
                          {"host", host["hostname"]},
                          {"os", host["os"]},
                          {"cpu", host["cpu"]},
                          {"time", host["time"]},
                          {"duration", seconds(report.duration_ms) + " s"},
                          {"limit per test", timeouts_text(report)}}) +
          "</table></div>";
  return html;
}

std::string counts_html(const Counts& counts) {
  std::string html = "<div class=\"counts\">";
  for (Status status : kAllStatuses) {
    html += fmt::format("<div class=\"count s-{0}\"><b>{1}</b>{0}</div>", status_name(status),
                        counts[status]);
  }
  return html + "</div>";
}

std::vector<std::string> ordered_dtypes(const std::set<std::string>& present) {
  std::vector<std::string> columns;
  for (const char* dtype : kDtypeOrder) {
    if (present.count(dtype)) columns.push_back(dtype);
  }
  for (const auto& dtype : present) {
    if (std::find(columns.begin(), columns.end(), dtype) == columns.end()) columns.push_back(dtype);
  }
  return columns;
}

std::string coverage_matrix(const std::vector<TestResult>& results) {
  // op -> dtype ("-" when none) -> counts
  std::map<std::string, std::map<std::string, Counts>> cells;
  std::set<std::string> dtypes;
  for (const auto& result : results) {
    if (result.op.empty()) continue;
    const std::string dtype = result.dtype.empty() ? "-" : result.dtype;
    cells[result.op][dtype].by_status[size_t(result.status)]++;
    dtypes.insert(dtype);
  }
  if (cells.empty()) return "<p>No operator tests were run.</p>";
  const std::vector<std::string> columns = ordered_dtypes(dtypes);
  std::string html = "<table class=\"matrix\"><tr><th>op</th>";
  for (const auto& dtype : columns) html += "<th>" + h(dtype) + "</th>";
  html += "</tr>\n";
  for (const auto& [op, by_dtype] : cells) {
    html += "<tr><th>" + h(op) + "</th>";
    for (const auto& dtype : columns) {
      auto cell = by_dtype.find(dtype);
      if (cell == by_dtype.end()) {
        html += "<td class=\"none\"></td>";
        continue;
      }
      const Counts& counts = cell->second;
      Status worst = Status::kPassed;
      std::string tooltip;
      for (Status status : kAllStatuses) {
        if (counts[status] == 0) continue;
        if (severity(status) > severity(worst)) worst = status;
        tooltip += fmt::format("{}{} {}", tooltip.empty() ? "" : ", ", counts[status],
                               status_name(status));
      }
      html += fmt::format("<td class=\"s-{}\" title=\"{} {}: {}\">{}/{}</td>", status_name(worst),
                          h(op), h(dtype), h(tooltip), counts[Status::kPassed], counts.total());
    }
    html += "</tr>\n";
  }
  return html + "</table>";
}

std::string results_table(const std::vector<const TestResult*>& results) {
  std::string html = "<table><tr><th>test</th><th>status</th><th>ms</th><th>message</th></tr>\n";
  for (const TestResult* result : results) {
    html +=
        fmt::format("<tr><td class=\"mono\">{}</td><td>{}</td><td>{:.1f}</td><td>{}</td></tr>\n",
                    h(result->id), status_badge(result->status), result->duration_ms,
                    result->message.empty() ? "" : "<pre>" + h(result->message) + "</pre>");
  }
  return html + "</table>";
}

std::vector<const TestResult*> with_status(const std::vector<TestResult>& results,
                                           std::initializer_list<Status> statuses) {
  std::vector<const TestResult*> selected;
  for (const auto& result : results) {
    if (std::find(statuses.begin(), statuses.end(), result.status) != statuses.end()) {
      selected.push_back(&result);
    }
  }
  return selected;
}

}  // namespace

size_t Counts::total() const {
  size_t sum = 0;
  for (size_t n : by_status) sum += n;
  return sum;
}

size_t Counts::failures() const {
  return (*this)[Status::kFailed] + (*this)[Status::kCrashed] + (*this)[Status::kTimeout];
}

Counts count(const std::vector<TestResult>& results) {
  Counts counts;
  for (const auto& result : results) counts.by_status[size_t(result.status)]++;
  return counts;
}

std::string xml_escape(const std::string& text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    const size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      escaped += "\xEF\xBF\xBD";  // U+FFFD for a byte that is not UTF-8
      ++i;
      continue;
    }
    if (length > 1) {
      escaped.append(text, i, length);
      i += length;
      continue;
    }
    ++i;
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&apos;";
        break;
      default:
        // XML 1.0 allows no control characters but tab, newline and return.
        if (uint8_t(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          escaped += "\xEF\xBF\xBD";
        } else {
          escaped += c;
        }
    }
  }
  return escaped;
}

nlohmann::json report_json(const Report& report) {
  const Counts counts = count(report.results);
  json tests = json::array();
  for (const auto& result : report.results) {
    tests.push_back({{"id", result.id},
                     {"area", result.area},
                     {"op", result.op},
                     {"dtype", result.dtype},
                     {"group", result.group},
                     {"status", status_name(result.status)},
                     {"unsupported", result.unsupported},
                     {"message", result.message},
                     {"duration_ms", result.duration_ms}});
  }
  const Judgement& judgement = report.judgement;
  const DeviceSpeed& speed = report.target.speed;
  return {{"schema_version", kReportSchemaVersion},
          {"suite_version", kSuiteVersion},
          {"verdict", verdict_name(judgement.verdict)},
          {"profile", profile_json(judgement)},
          {"requested_profile", profile_request_name(judgement.request)},
          {"partial", judgement.partial},
          {"headline", judgement.headline()},
          {"reasons", judgement.reasons},
          {"coverage",
           {{"core", coverage_json(judgement.core)}, {"full", coverage_json(judgement.full)}}},
          {"timeouts",
           {{"base_ms", report.base_timeout.count()},
            {"per_test_ms", report.test_timeout.count()},
            {"round_trips_per_test", kRoundTripsPerTest},
            {"copy_round_trip_ms", speed.copy_round_trip_ms},
            {"kernel_round_trip_ms", speed.kernel_round_trip_ms},
            {"note", speed.note}}},
          {"plugin", plugin_section(report)},
          {"device",
           {{"name", report.target.device_name},
            {"index", report.target.device_index},
            {"properties",
             cli::properties_json(report.target.properties, report.target.plugin.abi_minor)}}},
          {"host", host_json()},
          {"expectations", report.expectations_path},
          {"filter", report.filter},
          {"duration_ms", report.duration_ms},
          {"counts", counts_json(counts)},
          {"tests", tests}};
}

std::string junit_xml(const Report& report) {
  std::map<std::string, std::vector<const TestResult*>> by_area;
  std::map<std::string, Counts> area_counts;
  std::map<std::string, double> area_ms;
  for (const auto& result : report.results) {
    by_area[result.area].push_back(&result);
    area_counts[result.area].by_status[size_t(result.status)]++;
    area_ms[result.area] += result.duration_ms;
  }
  const Counts all = count(report.results);
  auto errors = [](const Counts& c) { return c[Status::kCrashed] + c[Status::kTimeout]; };
  auto skips = [](const Counts& c) { return c[Status::kSkipped] + c[Status::kKnownFailure]; };

  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format(
      "<testsuites name=\"oar-conform {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
      "skipped=\"{}\" time=\"{}\">\n",
      h(report.target.plugin.name), all.total(), all[Status::kFailed], errors(all), skips(all),
      seconds(report.duration_ms));
  // The verdict, in every testsuite (JUnit has no properties on testsuites).
  const Judgement& judgement = report.judgement;
  std::string properties = "    <properties>\n";
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"verdict", verdict_name(judgement.verdict)},
           {"profile", judgement.profile ? profile_name(*judgement.profile) : ""},
           {"partial", judgement.partial ? "true" : "false"},
           {"headline", judgement.headline()},
           {"coverage.core", Judgement::coverage_text(judgement.core)},
           {"coverage.full", Judgement::coverage_text(judgement.full)},
           {"suite_version", kSuiteVersion},
           {"library_sha256", report.library_sha256}}) {
    properties += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", h(name), h(value));
  }
  properties += "    </properties>\n";
  for (const auto& [area, results] : by_area) {
    const Counts& c = area_counts[area];
    xml += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
        "time=\"{}\">\n",
        h(area), c.total(), c[Status::kFailed], errors(c), skips(c), seconds(area_ms[area]));
    xml += properties;
    for (const TestResult* result : results) {
      xml += fmt::format("    <testcase name=\"{}\" classname=\"oar.{}\" time=\"{}\"",
                         h(result->id), h(area), seconds(result->duration_ms));
      const std::string message = h(result->message);
      switch (result->status) {
        case Status::kPassed:
          xml += "/>\n";
          continue;
        case Status::kFailed:
          xml += fmt::format(">\n      <failure message=\"{0}\">{0}</failure>\n", message);
          break;
        case Status::kCrashed:
        case Status::kTimeout:
          xml += fmt::format(">\n      <error type=\"{0}\" message=\"{1}\">{1}</error>\n",
                             status_name(result->status), message);
          break;
        case Status::kSkipped:
        case Status::kKnownFailure:
          xml += fmt::format(">\n      <skipped message=\"{}{}\"/>\n",
                             result->status == Status::kKnownFailure ? "known failure: " : "",
                             message);
          break;
      }
      xml += "    </testcase>\n";
    }
    xml += "  </testsuite>\n";
  }
  return xml + "</testsuites>\n";
}

std::string report_html(const Report& report) {
  const Counts counts = count(report.results);
  const Judgement& judgement = report.judgement;
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  html += fmt::format("<title>oar-conform: {} {}</title>\n<style>{}</style></head><body>\n",
                      h(report.target.plugin.name), verdict_name(judgement.verdict), kStyle);
  html += fmt::format(
      "<div class=\"banner {}\"><h1>{}</h1><p class=\"coverage\">{}</p><p>plugin {} {} on {} "
      "&middot; {} of {} tests failed, crashed or timed out</p></div>\n<main>\n",
      verdict_name(judgement.verdict), banner_title(judgement), h(judgement.headline()),
      h(report.target.plugin.name), h(report.target.plugin.version), h(report.target.device_name),
      counts.failures(), counts.total());
  html += "<h2>Plugin, device and run</h2>\n" + summary_tables(report);
  html += "<h2>Profiles and coverage</h2>\n" + coverage_html(judgement);
  html += "<h2>Results</h2>\n" + counts_html(counts);
  html +=
      "<h2>Operator &times; dtype coverage</h2>\n"
      "<p class=\"legend\">Cell: passed/total, coloured by the worst status; hover for "
      "counts. ";
  for (Status status : kAllStatuses) {
    html += fmt::format("<span class=\"s-{0}\">{0}</span>", status_name(status));
  }
  html += "</p>\n" + coverage_matrix(report.results);

  const auto failures =
      with_status(report.results, {Status::kFailed, Status::kCrashed, Status::kTimeout});
  html += fmt::format("<h2>Failures ({})</h2>\n", failures.size());
  html += failures.empty() ? "<p>None.</p>\n" : results_table(failures);
  const auto known = with_status(report.results, {Status::kKnownFailure});
  html += fmt::format("<details><summary>Known failures ({})</summary>{}</details>\n", known.size(),
                      results_table(known));
  const auto skipped = with_status(report.results, {Status::kSkipped});
  html += fmt::format("<details><summary>Skipped ({})</summary>{}</details>\n", skipped.size(),
                      results_table(skipped));
  std::vector<const TestResult*> all;
  for (const auto& result : report.results) all.push_back(&result);
  html += fmt::format("<details><summary>All tests ({})</summary>{}</details>\n", all.size(),
                      results_table(all));
  return html + "</main></body></html>\n";
}

void write_report(const Report& report, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    throw std::runtime_error("cannot create report folder " + dir + ": " + error.message());
  auto write = [&](const char* name, const std::string& text) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << text;
    if (!file.flush()) throw std::runtime_error("cannot write " + path);
  };
  write("report.json",
        report_json(report).dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  write("junit.xml", junit_xml(report));
  write("report.html", report_html(report));
}

}  // namespace oar::conformance
