// Opening the files the loader is pointed at without trusting them: only
// regular files are read (a FIFO would block forever, /dev/zero never ends, a
// directory is no manifest), the type is taken from the opened descriptor
// (fstat), not from a separate stat that a rename could overtake, and reads
// are capped.
#pragma once

#include <string>

#include "core/util/status.h"

namespace oar::loader {

// A descriptor that closes itself.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor();
  FileDescriptor(FileDescriptor&& other) noexcept;
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

struct RegularFile {
  FileDescriptor fd;
  uint64_t size = 0;
};

// Opens |path| for reading if it is a regular file (symlinks followed).
// Without blocking: a FIFO with no writer is refused, not waited on. The
// message says what |path| is instead, as "<what> <path> is a FIFO ...":
//   NOT_FOUND          no such file, or a dangling symlink
//   PERMISSION_DENIED  not readable
//   INVALID_ARGUMENT   a directory, FIFO, socket, device, or a symlink loop
Result<RegularFile> open_regular_file(const std::string& path, const std::string& what);

// The whole of regular file |path|, refused when longer than |max_bytes|.
Result<std::string> read_regular_file(const std::string& path, const std::string& what,
                                      uint64_t max_bytes);

// Up to |count| bytes from the start of |file| (fewer if it is shorter).
Result<std::string> read_head(const RegularFile& file, size_t count);

}  // namespace oar::loader
