// Plugin manifests: one small JSON file per plugin that names its library, so
// that the core can find plugins without opening every library on disk.
//
//   {
//     "file_format_version": "1.0.0",
//     "plugin": { "name": "cpu", "library_path": "liboar_plugin_cpu.so",
//                 "abi_version": "1.0" }
//   }
//
// library_path is relative to the manifest's folder unless absolute.
// A manifest is a regular file of at most kMaxManifestBytes (core/loader/file.h).
#pragma once

#include <cstdint>
#include <string>

#include "core/util/status.h"

namespace oar::loader {

// The manifest format versions this core reads: 1.x.
inline constexpr int kManifestFormatMajor = 1;
// A manifest is a few hundred bytes; anything this large is not one.
inline constexpr uint64_t kMaxManifestBytes = uint64_t(1) << 20;
// Plugin names show in device names and listings; the table's name obeys it too.
inline constexpr uint64_t kMaxPluginNameBytes = 128;

struct Manifest {
  std::string path;          // the manifest file itself
  std::string name;          // the plugin's name
  std::string library_path;  // absolute (made so against the working directory if need be)
  int abi_major = 0;
  int abi_minor = 0;
};

// Parses the manifest at |path|; every failure names the file and the field.
// Only a regular file is read (core/loader/file.h says what else is refused).
Result<Manifest> read_manifest(const std::string& path);

// Parses manifest text; |path| is used for messages and relative paths.
Result<Manifest> parse_manifest(const std::string& text, const std::string& path);

}  // namespace oar::loader
