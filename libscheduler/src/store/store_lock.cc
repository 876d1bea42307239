#include "store/store_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tessera::store {
namespace {

// SQLite locks bytes 0x40000000 to 0x400001ff (its PENDING, RESERVED and SHARED bytes); this
// one is past them and no SQLite connection ever locks it.
constexpr off_t kSchedulerLockByte = 0x40000000 + 1024;

std::string Errno(int err) { return std::strerror(err); }

std::string DirectoryOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// Makes a new name in `dir` durable.
void SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

StatusOr<std::unique_ptr<StoreLock>> StoreLock::Acquire(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFoundError("store '" + path + "' does not exist");
    return UnavailableError("cannot open store '" + path + "': " + Errno(err));
  }
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = kSchedulerLockByte;
  lock.l_len = 1;
  if (::fcntl(fd, F_OFD_SETLK, &lock) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EAGAIN || err == EACCES) {
      return UnavailableError("store '" + path +
                              "' is in use by another scheduler process (it holds the store "
                              "file's lock)");
    }
    return UnavailableError("cannot lock store '" + path + "': " + Errno(err));
  }
  return std::unique_ptr<StoreLock>(new StoreLock(fd));
}

StatusOr<std::unique_ptr<StoreLock>> StoreLock::AcquireOrCreate(
    const std::string& path, const std::function<Status(const std::string&)>& create) {
  static std::atomic<int> counter{0};
  // A second try covers another scheduler creating the store between our two looks.
  for (int attempt = 0; attempt < 2; ++attempt) {
    StatusOr<std::unique_ptr<StoreLock>> existing = Acquire(path);
    if (existing.ok() || existing.status().code() != StatusCode::kNotFound) return existing;
    const std::string dir = DirectoryOf(path);
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      return UnavailableError("cannot open store '" + path + "': directory '" + dir +
                              "' does not exist");
    }
    const std::string temp =
        path + ".creating-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    auto remove_temp = [&temp] {
      std::error_code ignored;
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        std::filesystem::remove(temp + suffix, ignored);
      }
    };
    Status made = create(temp);
    if (!made.ok()) {
      remove_temp();
      return made;
    }
    StatusOr<std::unique_ptr<StoreLock>> lock = Acquire(temp);
    if (!lock.ok()) {
      remove_temp();
      return lock.status();
    }
    Status linked = LinkNew(temp, path);
    remove_temp();
    if (linked.ok()) return lock;
    if (linked.code() != StatusCode::kAlreadyExists) return linked;
  }
  return UnavailableError("store '" + path +
                          "' keeps appearing and vanishing; is another "
                          "process removing it?");
}

Status StoreLock::LinkNew(const std::string& temp_path, const std::string& path) {
  if (::link(temp_path.c_str(), path.c_str()) != 0) {
    const int err = errno;
    if (err == EEXIST) return AlreadyExistsError("store '" + path + "' already exists");
    return UnavailableError("cannot create store '" + path + "': " + Errno(err));
  }
  ::unlink(temp_path.c_str());
  SyncDirectory(DirectoryOf(path));
  return Status::Ok();
}

StoreLock::~StoreLock() { ::close(fd_); }

}  // namespace tessera::store
