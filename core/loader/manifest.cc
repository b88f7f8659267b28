#include "core/loader/manifest.h"

#include <climits>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/loader/file.h"
#include "core/loader/text.h"

namespace oar::loader {
namespace {

using nlohmann::json;

Status bad(const std::string& path, const std::string& what) {
  return Status(OAR_STATUS_INVALID_ARGUMENT, "bad manifest " + printable(path) + ": " + what);
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

// The fields a manifest has, read with nlohmann's SAX interface rather than
// into a DOM: the DOM's destructor allocates (it flattens nested values onto a
// heap stack) and so ends the process when memory runs out, and a manifest
// needs four strings, not a tree of whatever else the file holds.
class ManifestReader : public nlohmann::json_sax<json> {
 public:
  struct Field {
    bool present = false;
    const char* type = nullptr;  // the JSON type when it is not a string
    std::string value;
  };

  Field format;  // file_format_version
  Field plugin;  // value unused; type set when not an object
  Field name;
  Field library;
  Field abi;
  const char* top_type = nullptr;  // set when the top level is not an object
  std::string failure;             // the parser's message, or a repeated key

  bool null() override { return scalar("null", nullptr); }
  bool boolean(bool) override { return scalar("boolean", nullptr); }
  bool number_integer(number_integer_t) override { return scalar("number", nullptr); }
  bool number_unsigned(number_unsigned_t) override { return scalar("number", nullptr); }
  bool number_float(number_float_t, const string_t&) override { return scalar("number", nullptr); }
  bool string(string_t& value) override { return scalar("string", &value); }
  bool binary(binary_t&) override { return scalar("binary", nullptr); }

  bool start_object(std::size_t) override {
    if (depth_ > 0) {
      if (pending_ == &plugin) {
        plugin.present = true;
        plugin_depth_ = depth_ + 1;
      } else if (pending_ != nullptr) {
        pending_->present = true;
        pending_->type = "object";
      }
    }
    pending_ = nullptr;
    ++depth_;
    return true;
  }
  bool end_object() override {
    if (plugin_depth_ == depth_) plugin_depth_ = 0;
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) top_type = "array";
    if (pending_ != nullptr) {
      pending_->present = true;
      pending_->type = "array";
    }
    pending_ = nullptr;
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }

  bool key(string_t& key) override {
    pending_ = nullptr;
    std::string where;
    if (depth_ == 1) {
      if (key == "file_format_version") pending_ = &format;
      if (key == "plugin") pending_ = &plugin;
    } else if (plugin_depth_ != 0 && depth_ == plugin_depth_) {
      where = "plugin.";
      if (key == "name") pending_ = &name;
      if (key == "library_path") pending_ = &library;
      if (key == "abi_version") pending_ = &abi;
    }
    if (pending_ != nullptr && pending_->present) {
      // Which of two values counts is the parser's choice: refuse to guess.
      failure = "\"" + where + key + "\" appears twice";
      return false;
    }
    return true;
  }

  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& error) override {
    // The message quotes the bytes the parser stopped at, which need not be
    // UTF-8; a number beyond a double's range (out_of_range 406) lands here too.
    failure = "not valid JSON (" + printable(error.what()) + ")";
    return false;
  }

 private:
  bool scalar(const char* type, string_t* value) {
    if (depth_ == 0) top_type = type;
    if (pending_ != nullptr) {
      pending_->present = true;
      if (value != nullptr && pending_ != &plugin) {
        pending_->value = std::move(*value);
      } else {
        pending_->type = type;
      }
    }
    pending_ = nullptr;
    return true;
  }

  size_t depth_ = 0;          // containers open
  size_t plugin_depth_ = 0;   // the depth inside "plugin", 0 outside it
  Field* pending_ = nullptr;  // the field the next value fills
};

Result<std::string> string_field(const ManifestReader::Field& field, const char* key,
                                 const std::string& path, const std::string& where) {
  if (!field.present) return bad(path, "missing \"" + where + key + "\"");
  if (field.type != nullptr) {
    return bad(path, "\"" + where + key + "\" must be a string, not " + field.type);
  }
  if (field.value.empty()) return bad(path, "\"" + where + key + "\" is empty");
  // A C string would end at the NUL: dlopen would open a shorter path than the one checked.
  if (field.value.find('\0') != std::string::npos) {
    return bad(path, "\"" + where + key + "\" contains a NUL character (\\u0000)");
  }
  return field.value;
}

}  // namespace

Result<Manifest> parse_manifest(const std::string& text, const std::string& path) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return bad(path, "the file is empty");
  ManifestReader reader;
  bool parsed = false;
  try {
    parsed = json::sax_parse(text, &reader);
  } catch (const json::exception& e) {
    return bad(path, "not valid JSON (" + printable(e.what()) + ")");
  }
  if (!parsed) return bad(path, reader.failure.empty() ? "not valid JSON" : reader.failure);
  if (reader.top_type != nullptr) return bad(path, "the top level must be an object");

  OAR_ASSIGN_OR_RETURN(std::string format,
                       string_field(reader.format, "file_format_version", path, ""));
  int format_major = 0;
  int format_minor = 0;
  if (!parse_version(format, &format_major, &format_minor)) {
    return bad(path, "\"file_format_version\" must look like \"1.0.0\", not \"" +
                         clipped(format, 64) + "\"");
  }
  if (format_major != kManifestFormatMajor) {
    return Status(OAR_STATUS_FAILED_PRECONDITION,
                  "manifest " + printable(path) + " has file_format_version " +
                      clipped(format, 64) +
                      "; this OAR reads 1.x manifests (upgrade OAR or rewrite the manifest)");
  }

  if (!reader.plugin.present) return bad(path, "missing \"plugin\" object");
  if (reader.plugin.type != nullptr) {
    return bad(path, std::string("\"plugin\" must be an object, not ") + reader.plugin.type);
  }

  Manifest manifest;
  manifest.path = path;
  OAR_ASSIGN_OR_RETURN(manifest.name, string_field(reader.name, "name", path, "plugin."));
  if (manifest.name.size() > kMaxPluginNameBytes) {
    return bad(path, "\"plugin.name\" is " + std::to_string(manifest.name.size()) +
                         " bytes long; a plugin name has at most " +
                         std::to_string(kMaxPluginNameBytes));
  }
  if (printable(manifest.name) != manifest.name) {
    return bad(path,
               "\"plugin.name\" \"" + printable(manifest.name) + "\" contains control characters");
  }
  OAR_ASSIGN_OR_RETURN(std::string library,
                       string_field(reader.library, "library_path", path, "plugin."));
  if (library.size() >= PATH_MAX) {
    return bad(path, "\"plugin.library_path\" is " + std::to_string(library.size()) +
                         " bytes long; a path has fewer than " + std::to_string(PATH_MAX));
  }
  OAR_ASSIGN_OR_RETURN(std::string abi, string_field(reader.abi, "abi_version", path, "plugin."));
  if (!parse_version(abi, &manifest.abi_major, &manifest.abi_minor)) {
    return bad(path,
               "\"plugin.abi_version\" must look like \"1.0\", not \"" + clipped(abi, 64) + "\"");
  }

  // Absolute, so that dlopen opens this very file: given a bare name
  // ("liboar_plugin_x.so", from a manifest found through OAR_PLUGIN_PATH=.)
  // it would search the system's library paths instead.
  std::filesystem::path library_path(library);
  if (library_path.is_relative()) {
    library_path = std::filesystem::path(path).parent_path() / library_path;
  }
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(library_path, error);
  if (!error) library_path = absolute;
  manifest.library_path = library_path.lexically_normal().string();
  return manifest;
}

Result<Manifest> read_manifest(const std::string& path) {
  OAR_ASSIGN_OR_RETURN(std::string text, read_regular_file(path, "manifest", kMaxManifestBytes));
  return parse_manifest(text, path);
}

}  // namespace oar::loader
