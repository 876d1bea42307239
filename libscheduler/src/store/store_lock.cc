#include "store/store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tessera::store {

StatusOr<std::unique_ptr<StoreLock>> StoreLock::Acquire(const std::string& store_path) {
  // Named after the file itself, so a second path to it (a symlink) finds the same lock.
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(store_path, ec);
  const std::string lock_path = (ec ? store_path : canonical.string()) + ".lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return UnavailableError("cannot create lock file '" + lock_path + "': " + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return UnavailableError("store '" + store_path +
                              "' is in use by another scheduler process (lock file '" + lock_path +
                              "')");
    }
    return UnavailableError("cannot lock '" + lock_path + "': " + std::strerror(err));
  }
  return std::unique_ptr<StoreLock>(new StoreLock(fd));
}

StoreLock::~StoreLock() {
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

}  // namespace tessera::store
