#include "core/loader/library.h"

#include <dlfcn.h>
#include <elf.h>

#include <cstring>
#include <utility>

#include "core/loader/elf.h"
#include "core/loader/file.h"
#include "core/loader/text.h"

namespace oar::loader {
namespace {

// Turns the loader's message into a status whose text says what kind of
// problem it is before quoting the loader.
Status open_failure(const std::string& path, const char* loader_message) {
  std::string text =
      printable(loader_message != nullptr ? loader_message : "unknown dlopen failure");
  auto has = [&](const char* needle) { return text.find(needle) != std::string::npos; };
  if (has("No such file")) {
    // The plugin's own file exists and is for this machine (check_library_file
    // ran first): a library it links against is what the system loader cannot find.
    return Status(
        OAR_STATUS_NOT_FOUND,
        "a library it depends on is missing (install it or fix the plugin's rpath): " + text);
  }
  if (has("undefined symbol")) {
    const char* marker = "undefined symbol: ";
    size_t at = text.find(marker);
    std::string symbol = at == std::string::npos ? "?" : text.substr(at + std::strlen(marker));
    symbol = symbol.substr(0, symbol.find_first_of(" \t("));
    return Status(OAR_STATUS_FAILED_PRECONDITION,
                  "undefined symbol '" + symbol + "' (link the plugin with everything it uses; " +
                      "the loader said: " + text + ")");
  }
  if (has("wrong ELF class") || has("ELF file's machine") || has("ELF file OS ABI") ||
      has("ELF file data encoding")) {
    return Status(OAR_STATUS_FAILED_PRECONDITION, "built for another architecture: " + text);
  }
  if (has("invalid ELF header") || has("file too short") || has("not in ELF")) {
    return Status(OAR_STATUS_INVALID_ARGUMENT, "not a shared library: " + text);
  }
  return Status(OAR_STATUS_UNAVAILABLE, "cannot load " + printable(path) + ": " + text);
}

}  // namespace

Status check_library_file(const std::string& path) {
  auto file = open_regular_file(path, "library file");
  if (!file.ok()) {
    const Status& status = file.status();
    if (status.code() == OAR_STATUS_NOT_FOUND) {
      return Status(OAR_STATUS_NOT_FOUND, "library file missing: " + printable(path) +
                                              " (fix the manifest's library_path)");
    }
    return status;
  }
  auto head = read_head(file.value(), 64);
  if (!head.ok()) return head.status();
  std::optional<ElfHeader> header = parse_elf_header(head.value());
  if (!header) {
    return Status(OAR_STATUS_INVALID_ARGUMENT, "not a shared library: " + printable(path) + " is " +
                                                   describe_non_elf(head.value()) +
                                                   ", not an ELF file");
  }
  if (auto mismatch = elf_mismatch(*header, host_elf_header())) {
    // Right machine, wrong kind of file (an executable, an object file): not a
    // shared library. Anything else is a library for another machine.
    ElfHeader as_library = *header;
    as_library.type = ET_DYN;
    bool machine_fits = !elf_mismatch(as_library, host_elf_header());
    return Status(machine_fits ? OAR_STATUS_INVALID_ARGUMENT : OAR_STATUS_FAILED_PRECONDITION,
                  *mismatch);
  }
  return Status();
}

SharedLibrary::~SharedLibrary() { close(); }

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    close();
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Result<SharedLibrary> SharedLibrary::open(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return open_failure(path, dlerror());
  SharedLibrary library;
  library.handle_ = handle;
  library.path_ = path;
  return library;
}

Result<void*> SharedLibrary::symbol(const char* name) const {
  dlerror();
  void* address = dlsym(handle_, name);
  const char* error = dlerror();
  if (error != nullptr || address == nullptr) {
    return Status(OAR_STATUS_NOT_FOUND, std::string("no entry symbol '") + name + "' in " + path_ +
                                            " (a plugin exports it with OAR_PLUGIN_DEFINE)");
  }
  return address;
}

void SharedLibrary::close() {
  if (handle_ != nullptr) dlclose(handle_);
  handle_ = nullptr;
}

}  // namespace oar::loader
