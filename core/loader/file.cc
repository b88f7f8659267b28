#include "core/loader/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/loader/text.h"

namespace oar::loader {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

Status open_failure(int error, const std::string& path, const std::string& what) {
  std::string subject = what + " " + printable(path);
  std::string cause = std::strerror(error);
  switch (error) {
    case ENOENT:
      return Status(OAR_STATUS_NOT_FOUND,
                    "cannot read " + subject + ": no such file (or a symlink to nothing)");
    case ELOOP:
      return Status(OAR_STATUS_INVALID_ARGUMENT,
                    "cannot read " + subject + ": a symlink loop (" + cause + ")");
    case EACCES:
    case EPERM:
      return Status(OAR_STATUS_PERMISSION_DENIED, "cannot read " + subject + ": " + cause);
    case ENOTDIR:
      return Status(OAR_STATUS_NOT_FOUND,
                    "cannot read " + subject + ": a part of the path is not a directory");
    case ENXIO:  // a socket, or a FIFO opened O_NONBLOCK for writing
      return Status(OAR_STATUS_INVALID_ARGUMENT,
                    "cannot read " + subject + ": not a regular file (" + cause + ")");
    default:
      return Status(OAR_STATUS_UNAVAILABLE, "cannot read " + subject + ": " + cause);
  }
}

}  // namespace

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

FileDescriptor::FileDescriptor(FileDescriptor&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Result<RegularFile> open_regular_file(const std::string& path, const std::string& what) {
  if (path.empty()) return Status(OAR_STATUS_INVALID_ARGUMENT, what + " path is empty");
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return open_failure(errno, path, what);
  RegularFile file;
  file.fd = FileDescriptor(fd);
  struct stat info {};
  if (::fstat(fd, &info) != 0) return open_failure(errno, path, what);
  if (!S_ISREG(info.st_mode)) {
    return Status(OAR_STATUS_INVALID_ARGUMENT, what + " " + printable(path) + " is " +
                                                   kind_of(info.st_mode) + ", not a regular file");
  }
  // Reads of a regular file never block; keep the flag off for clarity.
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  file.size = static_cast<uint64_t>(info.st_size);
  return file;
}

Result<std::string> read_head(const RegularFile& file, size_t count) {
  std::string bytes(count, '\0');
  size_t done = 0;
  while (done < count) {
    ssize_t n = ::pread(file.fd.get(), bytes.data() + done, count - done, off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Status(OAR_STATUS_UNAVAILABLE, std::string("read failed: ") + strerror(errno));
    if (n == 0) break;
    done += size_t(n);
  }
  bytes.resize(done);
  return bytes;
}

Result<std::string> read_regular_file(const std::string& path, const std::string& what,
                                      uint64_t max_bytes) {
  OAR_ASSIGN_OR_RETURN(RegularFile file, open_regular_file(path, what));
  auto too_large = [&](const std::string& size) {
    return Status(OAR_STATUS_INVALID_ARGUMENT,
                  what + " " + printable(path) + " is " + size + " bytes, more than the " +
                      std::to_string(max_bytes) + " bytes a " + what + " may have");
  };
  if (file.size > max_bytes) return too_large(std::to_string(file.size));
  // One byte more than allowed tells a file that grew since fstat.
  OAR_ASSIGN_OR_RETURN(std::string text, read_head(file, size_t(max_bytes) + 1));
  if (text.size() > max_bytes) return too_large("over " + std::to_string(max_bytes));
  return text;
}

}  // namespace oar::loader
