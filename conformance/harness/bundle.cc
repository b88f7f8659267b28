#include "conformance/harness/bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "conformance/harness/signing.h"

namespace oar::conformance {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kManifest = "MANIFEST";
constexpr const char* kSignature = "MANIFEST.sig";
constexpr const char* kSigner = "signer.pub";
constexpr const char* kCertificate = "certificate.json";
// The report's files, as write_report and oar-conform leave them.
constexpr const char* kReportFiles[] = {"report.json", "junit.xml", "report.html",
                                        "test-output.log"};
// No member of a bundle comes near this; a larger one is not ours.
constexpr int64_t kMaxMemberBytes = int64_t(1) << 30;

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path.string());
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

struct ArchiveWriterDeleter {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct ArchiveReaderDeleter {
  void operator()(archive* a) const { archive_read_free(a); }
};

// certificate.json: the record a certification body reads, from report.json.
json certificate(const json& report, const std::string& library_path,
                 const std::string& signer_pem) {
  json plugin = report.at("plugin");
  std::error_code error;
  const auto size = fs::file_size(library_path, error);
  return {{"format", "oar-conform-bundle"},
          {"format_version", kBundleFormatVersion},
          {"suite_version", report.at("suite_version")},
          {"verdict", report.at("verdict")},
          {"profile", report.at("profile")},
          {"partial", report.at("partial")},
          {"headline", report.at("headline")},
          {"coverage",
           {{"core",
             {{"pairs", report["coverage"]["core"]["pairs"]},
              {"pairs_covered", report["coverage"]["core"]["pairs_covered"]}}},
            {"full",
             {{"pairs", report["coverage"]["full"]["pairs"]},
              {"pairs_covered", report["coverage"]["full"]["pairs_covered"]}}}}},
          {"plugin",
           {{"name", plugin.at("name")},
            {"version", plugin.at("version")},
            {"vendor", plugin.at("vendor")},
            {"abi_version", plugin.at("abi_version")},
            {"library_file", fs::path(library_path).filename().string()},
            {"library_size", error ? json(nullptr) : json(size)},
            {"library_sha256", plugin.at("library_sha256")}}},
          {"device", report.at("device")},
          {"host", report.at("host")},
          {"counts", report.at("counts")},
          {"signer",
           {{"algorithm", "Ed25519"}, {"public_key_sha256", public_key_fingerprint(signer_pem)}}}};
}

// The members of the archive at |path|, by name. Throws when it cannot be
// read as a tar archive; odd entries become |problems|.
std::map<std::string, std::string> read_members(const std::string& path,
                                                std::vector<std::string>& problems) {
  std::unique_ptr<archive, ArchiveReaderDeleter> reader(archive_read_new());
  archive_read_support_filter_all(reader.get());
  archive_read_support_format_tar(reader.get());
  if (archive_read_open_filename(reader.get(), path.c_str(), 1 << 16) != ARCHIVE_OK) {
    throw std::runtime_error(
        fmt::format("cannot open {}: {}", path, archive_error_string(reader.get())));
  }
  std::map<std::string, std::string> members;
  archive_entry* entry = nullptr;
  int status;
  while ((status = archive_read_next_header(reader.get(), &entry)) == ARCHIVE_OK) {
    const std::string name = archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "";
    if (archive_entry_filetype(entry) != AE_IFREG || name.empty() ||
        name.find('/') != std::string::npos) {
      problems.push_back(
          fmt::format("the bundle holds '{}', which is not a plain top-level file "
                      "(added after signing)",
                      name));
      continue;
    }
    if (archive_entry_size(entry) > kMaxMemberBytes) {
      problems.push_back(fmt::format("member {} is larger than any bundle member can be", name));
      continue;
    }
    std::string data;
    char chunk[1 << 16];
    la_ssize_t n;
    while ((n = archive_read_data(reader.get(), chunk, sizeof(chunk))) > 0) {
      data.append(chunk, size_t(n));
    }
    if (n < 0) {
      throw std::runtime_error(fmt::format("cannot read {} from {}: {}", name, path,
                                           archive_error_string(reader.get())));
    }
    if (!members.emplace(name, std::move(data)).second) {
      problems.push_back(
          fmt::format("member {} appears twice (one was added after signing)", name));
    }
  }
  if (status != ARCHIVE_EOF) {
    throw std::runtime_error(
        fmt::format("{} is not a readable bundle: {}", path, archive_error_string(reader.get())));
  }
  return members;
}

// MANIFEST: "<64 hex digits>  <name>" per line. Malformed lines become
// |problems|.
std::map<std::string, std::string> parse_manifest(const std::string& text,
                                                  std::vector<std::string>& problems) {
  std::map<std::string, std::string> sums;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const bool well_formed = line.size() > 66 && line.compare(64, 2, "  ") == 0 &&
                             line.find_first_not_of("0123456789abcdef") >= 64;
    if (!well_formed) {
      problems.push_back(fmt::format("MANIFEST has a malformed line: '{}'", line));
      continue;
    }
    sums[line.substr(66)] = line.substr(0, 64);
  }
  return sums;
}

// The library a plugin file names: itself, or a manifest's library_path.
std::string library_of(const std::string& path) {
  if (fs::path(path).extension() != ".json") return path;
  const json manifest = json::parse(read_file(path));
  const fs::path library = manifest.at("plugin").at("library_path").get<std::string>();
  return library.is_absolute()
             ? library.string()
             : (fs::path(path).parent_path() / library).lexically_normal().string();
}

}  // namespace

void write_bundle(const Report& report, const std::string& report_dir, const std::string& path,
                  const std::string& key_path) {
  const SigningKey key(key_path);
  const std::string signer = key.public_key_pem();
  std::map<std::string, std::string> members;  // sorted: MANIFEST lists them in order
  for (const char* name : kReportFiles) {
    const fs::path file = fs::path(report_dir) / name;
    // test-output.log is written by oar-conform, not by write_report.
    if (std::string(name) != "test-output.log" || fs::exists(file)) members[name] = read_file(file);
  }
  const json report_record = json::parse(members["report.json"]);
  members[kCertificate] =
      certificate(report_record, report.target.plugin.library_path, signer).dump(2) + "\n";
  members[kSigner] = signer;
  std::string manifest;
  for (const auto& [name, data] : members) manifest += sha256_hex(data) + "  " + name + "\n";
  const std::string signature = key.sign(manifest) + "\n";
  members[kManifest] = manifest;
  members[kSignature] = signature;

  std::unique_ptr<archive, ArchiveWriterDeleter> writer(archive_write_new());
  auto check = [&](int status, const char* what) {
    if (status != ARCHIVE_OK) {
      throw std::runtime_error(
          fmt::format("cannot write {} ({}): {}", path, what, archive_error_string(writer.get())));
    }
  };
  check(archive_write_add_filter_gzip(writer.get()), "gzip");
  check(archive_write_set_format_pax_restricted(writer.get()), "tar format");
  check(archive_write_open_filename(writer.get(), path.c_str()), "open");
  const std::time_t now = std::time(nullptr);
  // The manifest first, then what it lists, then the signature.
  std::vector<std::string> order = {kManifest};
  for (const auto& [name, data] : members) {
    if (name != kManifest && name != kSignature) order.push_back(name);
  }
  order.push_back(kSignature);
  for (const std::string& name : order) {
    const std::string& data = members[name];
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> entry(archive_entry_new(),
                                                                   archive_entry_free);
    archive_entry_set_pathname(entry.get(), name.c_str());
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_perm(entry.get(), 0644);
    archive_entry_set_size(entry.get(), la_int64_t(data.size()));
    archive_entry_set_mtime(entry.get(), now, 0);
    check(archive_write_header(writer.get(), entry.get()), name.c_str());
    if (archive_write_data(writer.get(), data.data(), data.size()) != la_ssize_t(data.size())) {
      check(ARCHIVE_FATAL, name.c_str());
    }
  }
  check(archive_write_close(writer.get()), "close");
}

BundleCheck verify_bundle(const std::string& path,
                          const std::optional<std::string>& trusted_public_key,
                          const std::optional<std::string>& plugin_library) {
  BundleCheck result;
  std::vector<std::string>& problems = result.problems;
  std::map<std::string, std::string> members = read_members(path, problems);
  for (const char* name : {kManifest, kSignature, kSigner, kCertificate, "report.json"}) {
    if (!members.count(name)) problems.push_back(fmt::format("member {} is missing", name));
  }
  if (!members.count(kManifest) || !members.count(kSignature)) return result;
  const std::string& manifest = members[kManifest];

  // Who signed, and whether the signature holds.
  std::string key = members.count(kSigner) ? members[kSigner] : "";
  result.trusted_key = trusted_public_key.has_value();
  try {
    if (trusted_public_key) {
      const std::string trusted = public_key_fingerprint(*trusted_public_key);
      if (!key.empty() && public_key_fingerprint(key) != trusted) {
        problems.push_back(fmt::format(
            "signer.pub is the key {}, not the trusted key {} (--key): signed by someone else",
            public_key_fingerprint(key), trusted));
      }
      key = *trusted_public_key;
    }
    if (!key.empty()) {
      result.signer_fingerprint = public_key_fingerprint(key);
      if (!verify_signature(key, manifest, members[kSignature])) {
        problems.push_back(
            fmt::format("the signature does not match MANIFEST: MANIFEST or MANIFEST.sig was "
                        "altered{}",
                        trusted_public_key ? ", or another key signed it" : ""));
      }
    }
  } catch (const std::exception& e) {
    problems.push_back(fmt::format("signer.pub or the trusted key: {}", e.what()));
  }

  // Every member against the manifest.
  const std::map<std::string, std::string> sums = parse_manifest(manifest, problems);
  for (const auto& [name, sum] : sums) {
    auto member = members.find(name);
    if (member == members.end()) {
      problems.push_back(fmt::format("member {} is listed in MANIFEST but missing", name));
      continue;
    }
    const std::string actual = sha256_hex(member->second);
    if (actual != sum) {
      problems.push_back(fmt::format("member {} was altered: its SHA-256 is {}, MANIFEST says {}",
                                     name, actual, sum));
    }
  }
  for (const auto& [name, data] : members) {
    if (name != kManifest && name != kSignature && !sums.count(name)) {
      problems.push_back(fmt::format("member {} is not in MANIFEST (added after signing)", name));
    }
  }
  for (const char* name : {kSigner, kCertificate, "report.json"}) {
    if (members.count(name) && !sums.count(name)) {
      problems.push_back(fmt::format("MANIFEST does not list {}", name));
    }
  }

  // What is certified, and for which library.
  json cert;
  try {
    cert = json::parse(members.at(kCertificate));
    const json report = json::parse(members.at("report.json"));
    const json& plugin = cert.at("plugin");
    result.summary = fmt::format(
        "{} {} ({}, SHA-256 {}) on {} ({}): {}; suite {}", plugin.at("name").get<std::string>(),
        plugin.at("version").get<std::string>(), plugin.at("library_file").get<std::string>(),
        plugin.at("library_sha256").get<std::string>(),
        cert.at("device").at("name").get<std::string>(),
        cert.at("device").at("properties").at("name").get<std::string>(),
        cert.at("headline").get<std::string>(), cert.at("suite_version").get<std::string>());
    if (report.at("plugin").at("library_sha256") != plugin.at("library_sha256") ||
        report.at("verdict") != cert.at("verdict") || report.at("profile") != cert.at("profile")) {
      problems.push_back("certificate.json and report.json disagree (library, verdict or profile)");
    }
  } catch (const std::exception& e) {
    problems.push_back(fmt::format("certificate.json or report.json is unreadable: {}", e.what()));
  }
  if (plugin_library) {
    try {
      const std::string library = library_of(*plugin_library);
      const std::string actual = sha256_file_hex(library);
      const std::string certified = cert.at("plugin").at("library_sha256").get<std::string>();
      if (actual != certified) {
        problems.push_back(fmt::format(
            "the library {} is not the one certified: its SHA-256 is {}, the certified {} has {}",
            library, actual, cert.at("plugin").at("library_file").get<std::string>(), certified));
      }
    } catch (const std::exception& e) {
      problems.push_back(fmt::format("cannot compare the plugin library: {}", e.what()));
    }
  }
  return result;
}

}  // namespace oar::conformance
