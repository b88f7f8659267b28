#include "core/loader/manifest.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace oar::loader {
namespace {

using nlohmann::json;

Status bad(const std::string& path, const std::string& what) {
  return Status(OAR_STATUS_INVALID_ARGUMENT, "bad manifest " + path + ": " + what);
}

// Parses "MAJOR.MINOR" or "MAJOR.MINOR.PATCH" (digits only); false otherwise.
bool parse_version(const std::string& text, int* major, int* minor) {
  int parts[3] = {0, 0, 0};
  int count = 0;
  size_t i = 0;
  while (count < 3) {
    size_t start = i;
    long value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - start < 6) {
      value = value * 10 + (text[i++] - '0');
    }
    if (i == start) return false;
    parts[count++] = int(value);
    if (i == text.size()) break;
    if (text[i++] != '.') return false;
  }
  if (i != text.size() || count < 2) return false;
  *major = parts[0];
  *minor = parts[1];
  return true;
}

Result<std::string> string_field(const json& object, const char* key, const std::string& path,
                                 const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) return bad(path, "missing \"" + where + key + "\"");
  if (!it->is_string()) {
    return bad(path, "\"" + where + key + "\" must be a string, not " + it->type_name());
  }
  std::string value = it->get<std::string>();
  if (value.empty()) return bad(path, "\"" + where + key + "\" is empty");
  return value;
}

}  // namespace

Result<Manifest> parse_manifest(const std::string& text, const std::string& path) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return bad(path, "the file is empty");
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& e) {
    return bad(path, std::string("not valid JSON (") + e.what() + ")");
  }
  if (!document.is_object()) return bad(path, "the top level must be an object");

  OAR_ASSIGN_OR_RETURN(std::string format, string_field(document, "file_format_version", path, ""));
  int format_major = 0;
  int format_minor = 0;
  if (!parse_version(format, &format_major, &format_minor)) {
    return bad(path, "\"file_format_version\" must look like \"1.0.0\", not \"" + format + "\"");
  }
  if (format_major != kManifestFormatMajor) {
    return Status(OAR_STATUS_FAILED_PRECONDITION,
                  "manifest " + path + " has file_format_version " + format +
                      "; this OAR reads 1.x manifests (upgrade OAR or rewrite the manifest)");
  }

  auto plugin = document.find("plugin");
  if (plugin == document.end()) return bad(path, "missing \"plugin\" object");
  if (!plugin->is_object()) {
    return bad(path, std::string("\"plugin\" must be an object, not ") + plugin->type_name());
  }

  Manifest manifest;
  manifest.path = path;
  OAR_ASSIGN_OR_RETURN(manifest.name, string_field(*plugin, "name", path, "plugin."));
  OAR_ASSIGN_OR_RETURN(std::string library, string_field(*plugin, "library_path", path, "plugin."));
  OAR_ASSIGN_OR_RETURN(std::string abi, string_field(*plugin, "abi_version", path, "plugin."));
  if (!parse_version(abi, &manifest.abi_major, &manifest.abi_minor)) {
    return bad(path, "\"plugin.abi_version\" must look like \"1.0\", not \"" + abi + "\"");
  }

  std::filesystem::path library_path(library);
  if (library_path.is_relative()) {
    library_path = std::filesystem::path(path).parent_path() / library_path;
  }
  manifest.library_path = library_path.lexically_normal().string();
  return manifest;
}

Result<Manifest> read_manifest(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status(OAR_STATUS_NOT_FOUND, "cannot read manifest " + path);
  std::stringstream text;
  text << file.rdbuf();
  return parse_manifest(text.str(), path);
}

}  // namespace oar::loader
