// A shared library opened with the system loader. A thin dlopen wrapper rather
// than Boost.DLL: Boost.DLL (1.74) replaces dlerror()'s text with a generic
// "bad file descriptor", and the loader's job is to say exactly why a plugin
// did not load ("undefined symbol: foo", "wrong ELF class", ...).
#pragma once

#include <string>

#include "core/util/status.h"

namespace oar::loader {

// Checks, before dlopen sees it, that |path| is a regular file holding an ELF
// shared library this process can load: FAILED_PRECONDITION names the class,
// byte order and machine of one built for another, INVALID_ARGUMENT says what
// a file that is no shared library is instead (file.h's codes for a file that
// cannot be opened, NOT_FOUND for one that is not there).
Status check_library_file(const std::string& path);

class SharedLibrary {
 public:
  SharedLibrary() = default;
  ~SharedLibrary();
  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // Opens |path| resolving every symbol now (RTLD_NOW), so that a missing
  // symbol is found here and not in the middle of a call.
  static Result<SharedLibrary> open(const std::string& path);

  // The address of |name|, or NOT_FOUND with the loader's message.
  Result<void*> symbol(const char* name) const;

  void close();
  bool is_open() const { return handle_ != nullptr; }

 private:
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace oar::loader
