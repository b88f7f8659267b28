// Certification bundles: one signed archive (tar + gzip, written and read
// with libarchive) that a certification body can accept and check.
//
// Members, all at the top level:
//   report.json, junit.xml, report.html, test-output.log   the run's report
//   certificate.json   the verdict, profile and coverage, the plugin (name,
//                      version, library file name, size and SHA-256), the
//                      suite version, the device and its properties, the host
//   signer.pub         the signer's Ed25519 public key (PEM)
//   MANIFEST           "<sha256>  <member>" per member above, as sha256sum
//                      writes it (`sha256sum -c MANIFEST` checks an unpacked
//                      bundle)
//   MANIFEST.sig       the Ed25519 signature of MANIFEST, base64
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "conformance/harness/report.h"

namespace oar::conformance {

inline constexpr int kBundleFormatVersion = 1;

// Writes the bundle of |report| (already written to |report_dir| by
// write_report) to |path|, signed with the private key at |key_path|.
// Throws std::runtime_error naming what failed.
void write_bundle(const Report& report, const std::string& report_dir, const std::string& path,
                  const std::string& key_path);

struct BundleCheck {
  // Empty when the bundle is intact, its signature valid and the library (if
  // one was given) the one certified; otherwise one line per finding, each
  // naming what was altered or does not match.
  std::vector<std::string> problems;
  // What the bundle certifies, for the success line: "cpu 0.1.0 on cpu:0 ...".
  std::string summary;
  std::string signer_fingerprint;  // of signer.pub, or of the trusted key
  bool trusted_key = false;        // checked against a key given by the caller

  bool ok() const { return problems.empty(); }
};

// Checks the bundle at |path|: the signature of MANIFEST (with the public key
// PEM in |trusted_public_key| when given, else with the bundle's own
// signer.pub, which proves integrity but not who signed), every member
// against MANIFEST, certificate.json against report.json, and, when
// |plugin_library| is given, that its SHA-256 is the certified library's (a
// manifest .json is followed to its library). Throws std::runtime_error when
// |path| is not a readable tar archive at all.
BundleCheck verify_bundle(const std::string& path,
                          const std::optional<std::string>& trusted_public_key,
                          const std::optional<std::string>& plugin_library);

}  // namespace oar::conformance
