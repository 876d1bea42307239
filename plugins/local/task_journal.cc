#include "task_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <utility>

namespace tessera::local {
namespace {

using plugin::PluginStatus;

constexpr const char* kJournalName = "tasks.journal";
constexpr const char* kExitStatusDir = "exit-status";
// The layout before the journal: <stem>.task records and <stem>.exit statuses.
constexpr const char* kLegacyDir = "tasks";
constexpr const char* kLegacyRecordSuffix = ".task";
constexpr const char* kLegacyExitSuffix = ".exit";

PluginStatus Internal(const std::string& what, const std::string& path) {
  return PluginStatus::Error(TESSERA_INTERNAL,
                             "cannot " + what + " " + path + ": " + std::strerror(errno));
}

// The next space-separated field of *rest, which loses it and the space after it.
bool NextField(std::string_view* rest, std::string_view* field) {
  const size_t space = rest->find(' ');
  *field = rest->substr(0, space);
  *rest = space == std::string_view::npos ? std::string_view() : rest->substr(space + 1);
  return !field->empty();
}

template <typename Int>
bool ParseField(std::string_view* rest, Int* out) {
  std::string_view field;
  if (!NextField(rest, &field)) return false;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), *out);
  return error == std::errc() && end == field.data() + field.size();
}

bool ParseRef(std::string_view* rest, v1::TaskRef* ref) {
  uint64_t job = 0;
  int32_t attempt = 0;
  int32_t task = 0;
  if (!ParseField(rest, &job) || !ParseField(rest, &attempt) || !ParseField(rest, &task)) {
    return false;
  }
  ref->set_job(job);
  ref->set_attempt(attempt);
  ref->set_task(task);
  return true;
}

std::string RefFields(const v1::TaskRef& ref) {
  return std::to_string(ref.job()) + " " + std::to_string(ref.attempt()) + " " +
         std::to_string(ref.task());
}

std::string StartLine(const TaskRecord& r) {
  return "start " + RefFields(r.ref) + " " + std::to_string(r.pid) + " " + std::to_string(r.pgid) +
         " " + std::to_string(r.start_ticks) + " " + std::to_string(r.started_us) + " " +
         std::to_string(r.exit_slot) + " " + (r.share.empty() ? "-" : r.share) + " " + r.log_path +
         "\n";
}

std::string EndLine(const v1::TaskRef& ref) { return "end " + RefFields(ref) + "\n"; }

// One line without its newline: a start (*record filled, *started true) or an end (*record's
// ref filled). False when it is neither.
bool ParseLine(std::string_view line, TaskRecord* record, bool* started) {
  std::string_view kind;
  if (!NextField(&line, &kind)) return false;
  if (kind == "end") {
    *started = false;
    return ParseRef(&line, &record->ref) && line.empty();
  }
  if (kind != "start") return false;
  *started = true;
  if (!ParseRef(&line, &record->ref) || !ParseField(&line, &record->pid) ||
      !ParseField(&line, &record->pgid) || !ParseField(&line, &record->start_ticks) ||
      !ParseField(&line, &record->started_us) || !ParseField(&line, &record->exit_slot)) {
    return false;
  }
  std::string_view share;
  if (!NextField(&line, &share)) return false;
  record->share = std::string(share);
  record->log_path = std::string(line);
  return record->pid > 0 && record->pgid > 0 && record->exit_slot >= TaskJournal::kLegacyExitSlot &&
         record->exit_slot < TaskJournal::kMaxExitSlots;
}

// A record file of the old layout ("key=value" lines), or nothing when it does not read.
std::optional<TaskRecord> ReadLegacyRecord(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::map<std::string, std::string> fields;
  std::string line;
  while (std::getline(in, line)) {
    const size_t equals = line.find('=');
    if (equals != std::string::npos) fields[line.substr(0, equals)] = line.substr(equals + 1);
  }
  try {
    TaskRecord record;
    record.ref.set_job(std::stoull(fields.at("job")));
    record.ref.set_attempt(std::stoi(fields.at("attempt")));
    record.ref.set_task(std::stoi(fields.at("task")));
    record.pid = static_cast<pid_t>(std::stol(fields.at("pid")));
    record.pgid = static_cast<pid_t>(std::stol(fields.at("pgid")));
    record.start_ticks = std::stoull(fields.at("start_ticks"));
    record.started_us = std::stoll(fields.at("started_us"));
    record.log_path = fields["log"];
    record.exit_slot = TaskJournal::kLegacyExitSlot;
    if (record.pid <= 0 || record.pgid <= 0) return std::nullopt;
    return record;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The old wrapper's exit status file: the status alone, "<n>\n".
std::optional<int32_t> ReadLegacyExitStatus(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!std::getline(in, text)) return std::nullopt;
  int32_t code = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), code);
  if (error != std::errc() || end != text.data() + text.size() || code < 0 || code > 255) {
    return std::nullopt;
  }
  return code;
}

}  // namespace

TaskJournal::TaskJournal(std::string state_dir)
    : state_dir_(std::move(state_dir)), path_(state_dir_ + "/" + kJournalName) {}

TaskJournal::~TaskJournal() {
  if (fd_ >= 0) ::close(fd_);
}

PluginStatus TaskJournal::Open(const std::string& state_dir, std::unique_ptr<TaskJournal>* out,
                               std::vector<TaskRecord>* records,
                               std::vector<std::string>* problems) {
  std::unique_ptr<TaskJournal> journal(new TaskJournal(state_dir));
  const std::string slots = state_dir + "/" + kExitStatusDir;
  std::error_code error;
  std::filesystem::create_directories(slots, error);
  if (error) {
    return PluginStatus::Error(TESSERA_INTERNAL, "cannot create " + slots + ": " + error.message());
  }

  std::string text;
  if (std::filesystem::exists(journal->path_, error)) {
    std::ifstream in(journal->path_, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    if (!in) return Internal("read", journal->path_);
    text = content.str();
  }
  int64_t complete_lines = 0;
  bool unreadable = false;
  size_t begin = 0;
  for (size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    ++complete_lines;
    const std::string_view line(text.data() + begin, end - begin);
    TaskRecord record;
    bool started = false;
    if (!ParseLine(line, &record, &started)) {
      unreadable = true;
      problems->push_back(journal->path_ + " line " + std::to_string(complete_lines) +
                          ": ignoring '" + std::string(line) + "'");
      continue;
    }
    const Key key{record.ref.job(), record.ref.attempt(), record.ref.task()};
    if (started) {
      journal->live_[key] = std::move(record);
    } else {
      journal->live_.erase(key);
    }
  }
  if (begin < text.size()) {
    unreadable = true;
    problems->push_back(journal->path_ + ": ignoring an unfinished last line '" +
                        text.substr(begin) + "'");
  }
  const size_t journaled = journal->live_.size();
  journal->ImportLegacyRecords(problems);

  for (const auto& [key, record] : journal->live_) {
    if (record.exit_slot < 0) continue;
    if (journal->slot_taken_.size() <= static_cast<size_t>(record.exit_slot)) {
      journal->slot_taken_.resize(record.exit_slot + 1, false);
    }
    journal->slot_taken_[record.exit_slot] = true;
  }
  // Start from a journal of live tasks only when this one holds anything else; a legacy
  // import is journaled the same way.
  PluginStatus status;
  if (unreadable || complete_lines > static_cast<int64_t>(journaled) ||
      journal->live_.size() > journaled) {
    status = journal->Rewrite();
  } else {
    journal->fd_ = ::open(journal->path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (journal->fd_ < 0) status = Internal("open", journal->path_);
    journal->lines_ = complete_lines;
  }
  if (!status.ok()) return status;
  if (journal->legacy_dir_) journal->RemoveLegacyLeftovers();
  records->clear();
  for (const auto& [key, record] : journal->live_) records->push_back(record);
  *out = std::move(journal);
  return PluginStatus::Ok();
}

void TaskJournal::ImportLegacyRecords(std::vector<std::string>* problems) {
  const std::filesystem::path dir = state_dir_ + "/" + kLegacyDir;
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) return;
  legacy_dir_ = true;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().extension() != kLegacyRecordSuffix) continue;
    std::optional<TaskRecord> record = ReadLegacyRecord(entry.path());
    if (!record) {
      problems->push_back("ignoring unreadable task record " + entry.path().string());
      continue;
    }
    const Key key{record->ref.job(), record->ref.attempt(), record->ref.task()};
    live_.emplace(key, std::move(*record));  // a journaled record of the same task wins.
  }
}

// Once the old layout's records are journaled: everything in tasks/ but the exit status files
// of the imported tasks goes, and tasks/ itself once none of them lives (their wrappers will
// write there).
void TaskJournal::RemoveLegacyLeftovers() {
  const std::filesystem::path dir = state_dir_ + "/" + kLegacyDir;
  std::error_code error;
  bool legacy_live = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    bool keep = false;
    for (const auto& [key, record] : live_) {
      keep |= record.exit_slot == kLegacyExitSlot && entry.path() == LegacyExitPath(record);
    }
    if (!keep) std::filesystem::remove(entry.path(), error);
  }
  for (const auto& [key, record] : live_) legacy_live |= record.exit_slot == kLegacyExitSlot;
  if (!legacy_live && std::filesystem::remove(dir, error)) legacy_dir_ = false;
}

PluginStatus TaskJournal::ClaimExitSlot(TaskRecord* record) {
  size_t slot = 0;
  while (slot < slot_taken_.size() && slot_taken_[slot]) ++slot;
  PluginStatus status = ResetExitStatus(SlotPath(static_cast<int>(slot)));
  if (!status.ok()) return status;
  if (slot == slot_taken_.size()) slot_taken_.push_back(false);
  slot_taken_[slot] = true;
  record->exit_slot = static_cast<int>(slot);
  return PluginStatus::Ok();
}

void TaskJournal::ReleaseExitSlot(const TaskRecord& record) {
  if (record.exit_slot >= 0 && static_cast<size_t>(record.exit_slot) < slot_taken_.size()) {
    slot_taken_[record.exit_slot] = false;
  }
}

std::string TaskJournal::ExitStatusPath(const TaskRecord& record) const {
  return record.exit_slot == kLegacyExitSlot ? LegacyExitPath(record) : SlotPath(record.exit_slot);
}

std::optional<int32_t> TaskJournal::ExitStatus(const TaskRecord& record) const {
  if (record.exit_slot == kLegacyExitSlot) return ReadLegacyExitStatus(LegacyExitPath(record));
  return ReadExitStatus(SlotPath(record.exit_slot), record.pid);
}

PluginStatus TaskJournal::Started(const TaskRecord& record) {
  live_[Key{record.ref.job(), record.ref.attempt(), record.ref.task()}] = record;
  return Append(StartLine(record));
}

PluginStatus TaskJournal::Ended(const TaskRecord& record) {
  live_.erase(Key{record.ref.job(), record.ref.attempt(), record.ref.task()});
  ReleaseExitSlot(record);
  if (record.exit_slot == kLegacyExitSlot) {
    std::error_code error;
    std::filesystem::remove(LegacyExitPath(record), error);
    if (legacy_dir_) RemoveLegacyLeftovers();
  }
  PluginStatus status = Append(EndLine(record.ref));
  const int64_t live = static_cast<int64_t>(live_.size());
  const int64_t dead = lines_ - live;
  if (dead > kCompactAfterDeadLines && dead > kCompactDeadPerLive * live) {
    PluginStatus rewritten = Rewrite();
    if (status.ok()) status = rewritten;
  }
  return status;
}

PluginStatus TaskJournal::Append(const std::string& line) {
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) return Internal("open", path_);
  }
  const std::string text = needs_newline_ ? "\n" + line : line;
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      needs_newline_ = needs_newline_ || done > 0;
      return Internal("append to", path_);
    }
    done += static_cast<size_t>(n);
  }
  needs_newline_ = false;
  ++lines_;
  return PluginStatus::Ok();
}

// The live tasks' start lines into a temporary file renamed over the journal. Until the rename
// the old journal stays whole, so a host that dies meanwhile loses nothing.
PluginStatus TaskJournal::Rewrite() {
  const std::string temporary = path_ + ".tmp";
  std::string text;
  for (const auto& [key, record] : live_) text += StartLine(record);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Internal("create", temporary);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      PluginStatus status = Internal("write", temporary);
      ::close(fd);
      std::remove(temporary.c_str());
      return status;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (std::rename(temporary.c_str(), path_.c_str()) != 0) {
    PluginStatus status = Internal("rename " + temporary + " to", path_);
    std::remove(temporary.c_str());
    return status;
  }
  // The old descriptor names the replaced file: appending there would be lost.
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) return Internal("open", path_);
  lines_ = static_cast<int64_t>(live_.size());
  needs_newline_ = false;
  return PluginStatus::Ok();
}

std::string TaskJournal::SlotPath(int slot) const {
  return state_dir_ + "/" + kExitStatusDir + "/" + std::to_string(slot);
}

std::string TaskJournal::LegacyExitPath(const TaskRecord& record) const {
  return state_dir_ + "/" + kLegacyDir + "/" + TaskStem(record.ref) + kLegacyExitSuffix;
}

}  // namespace tessera::local
