// Restoring a store from a backup. Scheduler::Backup writes a consistent copy of a live store
// (SQLite's online backup; tesserad serves it as GET /v1/admin/backup). RestoreStore puts such a
// copy back in place of a store while no scheduler has it open, the way etcd restores a
// snapshot: stop the daemon, restore, start it again. On the next Open the scheduler reloads
// the unfinished jobs of the backup and reconciles them with the backends, so a job that was
// running when the backup was taken is found again or requeued, never run twice.
//
// Before the store is replaced, the current one (if any) is copied to "<store>.pre-restore", so
// a restore can itself be undone with a second RestoreStore from that file.
//
// Thread safety: free function; it locks the store file against schedulers in any process.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

struct RestoreProgress {
  std::string phase;  // "saving the current store" or "restoring".
  int64_t pages_done = 0;
  int64_t pages_total = 0;
};

struct RestoreOptions {
  // Called after each slice of pages is copied (about every 4 MiB) and once at the end of each
  // phase. Default: none.
  std::function<void(const RestoreProgress&)> progress;
  // Skip the copy of the current store to "<store>.pre-restore". Default false.
  bool discard_current = false;
};

// Replaces the store at `store_path` with the backup at `backup_path`, after checking that the
// backup is a Tessera store this build can open and passes SQLite's integrity check. The new
// store is written next to the old one and renamed over it, so a crash leaves either the old
// store or the new one, never a mix.
// Errors: INVALID_ARGUMENT (empty or equal paths), NOT_FOUND (no backup file),
// FAILED_PRECONDITION (not a Tessera store, a newer schema, or an integrity check failure; the
// message says which), UNAVAILABLE (a scheduler has the store open: "store '...' is in use by
// another scheduler process"; or a file cannot be written), RESOURCE_EXHAUSTED (disk full).
TESSERA_EXPORT Status RestoreStore(const std::string& backup_path, const std::string& store_path,
                                   const RestoreOptions& options = {});

}  // namespace tessera
