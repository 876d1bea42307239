// StoreLock: keeps two schedulers off one store file, by whatever name each reaches it (another
// spelling, a symlink, a hard link). The lock is an open-file-description lock (Linux
// F_OFD_SETLK) on one byte of the database file itself, so it belongs to the inode, not to a
// path. The byte lies in SQLite's lock page past the bytes SQLite locks, so it never meets
// SQLite's own locks and other SQLite tools can still read a live store. Held for the life of
// the object; the kernel drops it if the process dies.
//
// A new store is made complete under a temporary name, locked, and only then linked to its
// path, so the path never names a half-made store and of two schedulers creating it at once one
// opens it and the other is refused.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "tessera/status.h"

namespace tessera::store {

class StoreLock {
 public:
  // Locks the existing file at `path`.
  // Errors: NOT_FOUND when there is no file; UNAVAILABLE when another scheduler holds it ("store
  // '...' is in use by another scheduler process") or it cannot be opened.
  static StatusOr<std::unique_ptr<StoreLock>> Acquire(const std::string& path);

  // Locks the file at `path`; when there is none, first has `create(temp_path)` make a complete
  // store at a temporary path in the same directory, then locks that and links it to `path`.
  // Errors: as Acquire, or create's; UNAVAILABLE when the directory does not exist.
  static StatusOr<std::unique_ptr<StoreLock>> AcquireOrCreate(
      const std::string& path, const std::function<Status(const std::string&)>& create);

  // Gives `temp_path`, a file this lock holder made, the name `path` unless something already
  // has it (then ALREADY_EXISTS), keeping the lock on it. Errors: UNAVAILABLE.
  static Status LinkNew(const std::string& temp_path, const std::string& path);

  ~StoreLock();
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  explicit StoreLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace tessera::store
