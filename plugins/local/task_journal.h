// TaskJournal: where the local backend keeps its tasks' records, so that a restarted host finds
// them again, at a cost per task that does not grow with the number of tasks a disk has seen.
//
// Creating and deleting a few small files per task (a record, an exit status) is what made
// launches slow on ext4 (issue 15: a fifth of the CPU in ext4's search for a free inode, and a
// rate that fell from 1,192 to 460 launches/s over back-to-back runs, where tmpfs held 1,425).
// So nothing here creates a file per task:
//
//   <state_dir>/tasks.journal   one line per event, appended with one write(2) each:
//       start <job> <attempt> <task> <pid> <pgid> <start_ticks> <started_us> <slot> <share>
//             <log path>
//       end <job> <attempt> <task>
//     A task is live from its start line until its end line (written once its exit has been
//     reported, or it was found to have ended unwatched). When the lines of ended tasks number
//     more than kCompactAfterDeadLines and kCompactDeadPerLive times the live ones, the journal
//     is rewritten with the live tasks' start lines alone (a temporary file renamed over it):
//     one new inode per few hundred tasks, not several per task. Open rewrites it likewise
//     when it holds any ended task or unreadable line.
//   <state_dir>/exit-status/<slot>   a fixed-width line the task's wrapper writes over in place
//     (task_process.h). A slot is a small number, the lowest free one at launch and free again
//     once the task's end is journaled, so there are only as many of these files as tasks ever
//     ran at once, each reused without being truncated or recreated.
//
// Why the wrapper does not append its exit status to the journal too: the journal is rewritten
// by rename, and a wrapper that opened it just before a rename would write its line into the
// replaced file, where no one reads it; an exit status lost that way makes an adopted task that
// succeeded look failed. Only this class writes the journal, so a rename never races a writer,
// and a slot belongs to one task at a time, so its file never does either.
//
// Lines are appended with O_APPEND, one write(2) each, by one process. A line is counted only
// when complete: a last line without its newline (the host died in the middle of a write, or a
// disk filled) is ignored, as is any line that does not parse; they are named in the problems
// Open returns. A short write is followed by a newline before the next line so that the two
// are not read as one. Nothing is fsynced: a record matters only while its process lives, and
// an operating-system crash ends both.
//
// Records left by an older version of this backend (<state_dir>/tasks/<stem>.task, exit status
// in <stem>.exit beside it) are read by Open too, so tasks still running across an upgrade are
// adopted; they are journaled with slot kLegacyExitSlot, their exit status read from the old
// file, and tasks/ is removed once it is empty.
//
// One TaskJournal per state directory, in one process. Not thread-safe: the backend calls it
// with its own mutex held.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "task_process.h"
#include "tessera/plugin/plugin.h"

namespace tessera::local {

class TaskJournal {
 public:
  // Rewrite once the ended tasks' lines are more than this many ...
  static constexpr int64_t kCompactAfterDeadLines = 512;
  // ... and more than this many times the live tasks' lines.
  static constexpr int64_t kCompactDeadPerLive = 4;
  // TaskRecord::exit_slot of a task recorded by a backend from before the journal.
  static constexpr int kLegacyExitSlot = -1;
  // Slots are below this: a journal line naming another is unreadable.
  static constexpr int kMaxExitSlots = 1 << 16;

  // Opens (creating when missing) the journal of `state_dir`, which must exist. *records is set
  // to the live tasks, in TaskRef order (the old layout's among them); they count as started, and
  // each should get Ended once the caller finds it gone. *problems names lines and files that
  // could not be read (they are dropped). Errors: INTERNAL when the journal or the exit status
  // folder cannot be created, read or rewritten.
  static plugin::PluginStatus Open(const std::string& state_dir, std::unique_ptr<TaskJournal>* out,
                                   std::vector<TaskRecord>* records,
                                   std::vector<std::string>* problems);
  ~TaskJournal();
  TaskJournal(const TaskJournal&) = delete;
  TaskJournal& operator=(const TaskJournal&) = delete;

  // Gives a task about to be spawned the lowest free exit status slot (record->exit_slot) and
  // resets that slot's file, so nothing a former occupant wrote is read as this task's status.
  // The slot stays taken until Ended, or Release if the task does not start. Errors: INTERNAL
  // when the slot's file cannot be written.
  plugin::PluginStatus ClaimExitSlot(TaskRecord* record);
  // Frees the slot of a task that was claimed for but never started.
  void ReleaseExitSlot(const TaskRecord& record);
  // The file to hand the task's wrapper (SpawnTask's exit_status_path).
  std::string ExitStatusPath(const TaskRecord& record) const;
  // The status the task's wrapper wrote, once it has; nothing before, or when it never will
  // (SIGKILL ended the wrapper).
  std::optional<int32_t> ExitStatus(const TaskRecord& record) const;

  // Journals the start of a spawned task. Errors: INTERNAL when the line cannot be written
  // (the task is then known to this instance only; a restarted host will not find it).
  plugin::PluginStatus Started(const TaskRecord& record);
  // Journals the end of a task (reported, or found gone), frees its slot, and rewrites the
  // journal when it is due. Errors: INTERNAL when the end line or the rewrite fails (a restarted
  // host then finds the task's record, and drops it as ended).
  plugin::PluginStatus Ended(const TaskRecord& record);

  // Lines in the journal file now (for tests and the benchmark's curiosity).
  int64_t lines() const { return lines_; }

 private:
  using Key = std::tuple<uint64_t, int32_t, int32_t>;
  explicit TaskJournal(std::string state_dir);

  plugin::PluginStatus Append(const std::string& line);
  plugin::PluginStatus Rewrite();
  std::string SlotPath(int slot) const;
  std::string LegacyExitPath(const TaskRecord& record) const;
  void ImportLegacyRecords(std::vector<std::string>* problems);
  void RemoveLegacyLeftovers();

  const std::string state_dir_;
  const std::string path_;
  int fd_ = -1;                 // the journal, O_APPEND.
  int64_t lines_ = 0;           // complete lines in the file.
  bool needs_newline_ = false;  // the last write was cut short.
  std::map<Key, TaskRecord> live_;
  std::vector<bool> slot_taken_;
  bool legacy_dir_ = false;  // tasks/ of the old layout exists.
};

}  // namespace tessera::local
