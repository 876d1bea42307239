// FaultyVfs: a SQLite VFS that wraps the default one and fails chosen file operations, the way
// SQLite's own I/O-error tests do. Counted over every file of every connection, the Nth read,
// write (or truncate) or sync fails (and with `persistent` every later one of its kind too); a
// failing write may instead report the disk full. While the object lives it is the process's
// default VFS ("tessera-faulty"), so the library's connections use it without knowing; the
// previous default comes back when it is destroyed, which must be after every connection it
// served has closed.
//
// Thread safety: the counters and the plan may be used from any thread.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cstdint>

namespace tessera::testing {

class FaultyVfs {
 public:
  enum class Op { kRead = 0, kWrite = 1, kSync = 2 };
  enum class Failure { kIoError, kDiskFull };

  FaultyVfs();
  ~FaultyVfs();
  FaultyVfs(const FaultyVfs&) = delete;
  FaultyVfs& operator=(const FaultyVfs&) = delete;

  // Fails the `nth` (from 1) operation of kind `op` counted from now, and each later one when
  // `persistent`. Replaces the previous plan.
  void FailNth(Op op, int64_t nth, bool persistent, Failure failure = Failure::kIoError);
  // No more failures.
  void Disarm();

  // Operations of kind `op` since construction, and operations failed so far.
  int64_t count(Op op) const { return counts_[static_cast<int>(op)].load(); }
  int64_t failed() const { return failed_.load(); }

  // Whether the next operation of kind `op` fails, counting it (called by the VFS's files).
  bool ShouldFail(Op op);
  int WriteErrorCode() const;
  sqlite3_vfs* wrapped() const { return real_; }

 private:
  sqlite3_vfs vfs_{};
  sqlite3_vfs* real_ = nullptr;
  std::atomic<int64_t> counts_[3] = {0, 0, 0};
  std::atomic<int64_t> failed_{0};
  // The plan: fail operation number `fail_at_` of kind `op_` (absolute count), and later ones
  // when persistent. -1: none.
  std::atomic<int> op_{-1};
  std::atomic<int64_t> fail_at_{0};
  std::atomic<bool> persistent_{false};
  std::atomic<bool> disk_full_{false};
};

}  // namespace tessera::testing
