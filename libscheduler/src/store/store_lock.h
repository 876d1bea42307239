// StoreLock: an advisory lock on "<store>.lock" so that two schedulers never open one store.
// Held for the life of the object; the kernel drops it if the process dies.
#pragma once

#include <memory>
#include <string>

#include "tessera/status.h"

namespace tessera::store {

class StoreLock {
 public:
  // Errors: UNAVAILABLE when another process holds the lock or the file cannot be created.
  static StatusOr<std::unique_ptr<StoreLock>> Acquire(const std::string& store_path);
  ~StoreLock();

 private:
  explicit StoreLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace tessera::store
