// The local backend's task journal (plugins/local/task_journal.h) on its own, without processes:
// records that come back after a reopen and ended ones that do not, the rewrite that keeps the
// file short, lines it cannot read (a torn last one among them), exit status slots handed out
// and reused, and records of the layout before the journal. local_plugin_test.cc drives the same
// code through the plugin with real tasks.
#include "task_journal.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace tessera::local {
namespace {

TaskRecord Record(uint64_t job, pid_t pid = 4242) {
  TaskRecord record;
  record.ref.set_job(job);
  record.ref.set_attempt(1);
  record.ref.set_task(0);
  record.pid = pid;
  record.pgid = pid;
  record.start_ticks = 1000 + job;
  record.started_us = 2000 + static_cast<int64_t>(job);
  record.log_path = "/some dir/with spaces/" + std::to_string(job) + ".log";
  return record;
}

std::unique_ptr<TaskJournal> MustOpen(const testing::TempDir& dir, std::vector<TaskRecord>* records,
                                      std::vector<std::string>* problems = nullptr) {
  std::vector<std::string> ignored;
  std::unique_ptr<TaskJournal> journal;
  plugin::PluginStatus status = TaskJournal::Open(dir.path().string(), &journal, records,
                                                  problems != nullptr ? problems : &ignored);
  REQUIRE_MESSAGE(status.ok(), status.message);
  return journal;
}

// Claims a slot and journals the start, as the plugin does around a spawn.
void Start(TaskJournal& journal, TaskRecord* record) {
  REQUIRE(journal.ClaimExitSlot(record).ok());
  REQUIRE(journal.Started(*record).ok());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int64_t LinesOf(const std::string& path) {
  const std::string text = ReadFile(path);
  return std::count(text.begin(), text.end(), '\n');
}

ino_t InodeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

std::vector<uint64_t> Jobs(const std::vector<TaskRecord>& records) {
  std::vector<uint64_t> jobs;
  for (const TaskRecord& record : records) jobs.push_back(record.ref.job());
  return jobs;
}

TEST_CASE("task journal: a reopened journal gives back the live records, whole, not ended ones") {
  testing::TempDir dir("task-journal");
  std::vector<TaskRecord> records;
  {
    std::unique_ptr<TaskJournal> journal = MustOpen(dir, &records);
    CHECK(records.empty());
    for (uint64_t job : {1, 2, 3}) {
      TaskRecord record = Record(job);
      if (job == 3) record.share = "vgpu:0:0000:10:00.4";
      Start(*journal, &record);
    }
    REQUIRE(journal->Ended(Record(2)).ok());
  }
  std::unique_ptr<TaskJournal> journal = MustOpen(dir, &records);
  REQUIRE(Jobs(records) == std::vector<uint64_t>{1, 3});
  const TaskRecord& third = records[1];
  CHECK(third.pid == 4242);
  CHECK(third.pgid == 4242);
  CHECK(third.start_ticks == 1003);
  CHECK(third.started_us == 2003);
  CHECK(third.exit_slot == 2);  // 0, 1, 2 in launch order; 1 was job 2's.
  CHECK(third.log_path == "/some dir/with spaces/3.log");
  CHECK(third.share == "vgpu:0:0000:10:00.4");  // the GPU share it holds, taken back on adoption.
  CHECK(records[0].share == "-");
  // Open rewrote the journal without the ended task's lines.
  CHECK(LinesOf(dir.File("tasks.journal")) == 2);
  CHECK(journal->lines() == 2);
}

TEST_CASE("task journal: rewritten once ended tasks dominate, keeping the live ones") {
  testing::TempDir dir("task-journal");
  std::vector<TaskRecord> records;
  std::unique_ptr<TaskJournal> journal = MustOpen(dir, &records);
  TaskRecord long_running = Record(1);
  Start(*journal, &long_running);
  const ino_t first_inode = InodeOf(dir.File("tasks.journal"));
  int64_t most_lines = 0;
  constexpr int kTasks = 1000;
  for (int i = 0; i < kTasks; ++i) {
    TaskRecord record = Record(100 + i);
    Start(*journal, &record);
    REQUIRE(journal->Ended(record).ok());
    most_lines = std::max(most_lines, journal->lines());
  }
  // Without a rewrite the file would hold 2 lines per task; it never passes the threshold.
  CHECK(most_lines <= TaskJournal::kCompactAfterDeadLines + 2);
  CHECK(journal->lines() == LinesOf(dir.File("tasks.journal")));
  CHECK(first_inode !=
        InodeOf(dir.File("tasks.journal")));  // a new file was renamed over the old one.
  CHECK_FALSE(std::filesystem::exists(dir.File("tasks.journal.tmp")));
  journal.reset();
  journal = MustOpen(dir, &records);
  CHECK(Jobs(records) == std::vector<uint64_t>{1});
}

TEST_CASE("task journal: a torn last line and unreadable lines are skipped and named") {
  testing::TempDir dir("task-journal");
  std::vector<TaskRecord> records;
  {
    std::unique_ptr<TaskJournal> journal = MustOpen(dir, &records);
    TaskRecord record = Record(1);
    Start(*journal, &record);
  }
  {
    std::ofstream out(dir.File("tasks.journal"), std::ios::app);
    out << "start 2 1 0 77 77 5 6 1 /x.log\n"  // fine
        << "begin 3 1 0\n"                     // no such kind
        << "start 4 1 0 -5 77 5 6 2 /x.log\n"  // no such pid
        << "end 9 1\n"                         // too short
        << "start 5 1 0 88 88 5 6 3 /x.log";   // torn: no newline, perhaps cut short
  }
  std::vector<std::string> problems;
  std::unique_ptr<TaskJournal> journal = MustOpen(dir, &records, &problems);
  CHECK(Jobs(records) == std::vector<uint64_t>{1, 2});
  REQUIRE(problems.size() == 4);
  CHECK(problems[0].find("line 3: ignoring 'begin 3 1 0'") != std::string::npos);
  CHECK(problems[3].find("unfinished last line 'start 5 1 0 88") != std::string::npos);
  // The rewrite leaves only whole lines, so the next one appended stands on its own.
  TaskRecord next = Record(6);
  Start(*journal, &next);
  journal.reset();
  problems.clear();
  journal = MustOpen(dir, &records, &problems);
  CHECK(problems.empty());
  CHECK(Jobs(records) == std::vector<uint64_t>{1, 2, 6});
}

TEST_CASE("task journal: exit status slots are the lowest free, and a reopen keeps them taken") {
  testing::TempDir dir("task-journal");
  std::vector<TaskRecord> records;
  {
    std::unique_ptr<TaskJournal> journal = MustOpen(dir, &records);
    TaskRecord a = Record(1), b = Record(2), c = Record(3);
    Start(*journal, &a);
    Start(*journal, &b);
    Start(*journal, &c);
    CHECK(c.exit_slot == 2);
    REQUIRE(journal->Ended(a).ok());
    TaskRecord d = Record(4);
    Start(*journal, &d);
    CHECK(d.exit_slot == 0);  // a's, free again.
    TaskRecord unstarted = Record(5);
    REQUIRE(journal->ClaimExitSlot(&unstarted).ok());
    CHECK(unstarted.exit_slot == 3);
    journal->ReleaseExitSlot(unstarted);  // its spawn failed.
  }
  // Slots 0, 1, 2 belong to tasks 4, 2, 3, which a new instance may adopt: a new task gets 3.
  std::unique_ptr<TaskJournal> journal = MustOpen(dir, &records);
  REQUIRE(records.size() == 3);
  TaskRecord e = Record(6);
  Start(*journal, &e);
  CHECK(e.exit_slot == 3);
  // Only as many files as tasks ran at once.
  int slot_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() / "exit-status")) {
    (void)entry;
    ++slot_files;
  }
  CHECK(slot_files == 4);
}

TEST_CASE("task journal: a slot's status counts only when its wrapper's pid wrote it") {
  testing::TempDir dir("task-journal");
  std::vector<TaskRecord> records;
  std::unique_ptr<TaskJournal> journal = MustOpen(dir, &records);
  TaskRecord record = Record(1, 12345);
  REQUIRE(journal->ClaimExitSlot(&record).ok());
  const std::string path = journal->ExitStatusPath(record);
  CHECK(path == dir.File("exit-status/0"));
  CHECK_FALSE(journal->ExitStatus(record));  // reset: no status yet.
  const auto write = [&path](const std::string& line) {
    std::fstream out(path, std::ios::in | std::ios::out);  // over it, as the wrapper's <>.
    out << line;
  };
  write("0000012345 003\n");
  CHECK(journal->ExitStatus(record) == 3);
  write("0000054321 000\n");  // a former occupant's
  CHECK_FALSE(journal->ExitStatus(record));
  write("0000012345 2x3\n");
  CHECK_FALSE(journal->ExitStatus(record));
  write("0000012345 143\n");
  CHECK(journal->ExitStatus(record) == 143);
  // Claimed again (after the task ended), the slot says nothing until the next wrapper writes.
  REQUIRE(journal->Ended(record).ok());
  TaskRecord next = Record(2, 12345);  // even with the same pid
  REQUIRE(journal->ClaimExitSlot(&next).ok());
  CHECK(next.exit_slot == 0);
  CHECK_FALSE(journal->ExitStatus(next));
}

TEST_CASE("task journal: records of the layout before the journal are taken over") {
  testing::TempDir dir("task-journal");
  std::filesystem::create_directories(dir.path() / "tasks");
  std::ofstream(dir.File("tasks/8-1-0.task"))
      << "job=8\nattempt=1\ntask=0\npid=321\npgid=321\nstart_ticks=55\nstarted_us=66\nlog=/l\n";
  std::ofstream(dir.File("tasks/8-1-0.exit")) << "7\n";
  std::ofstream(dir.File("tasks/9-1-0.exit")) << "0\n";  // a leftover with no record
  std::ofstream(dir.File("tasks/bad.task")) << "job=x\n";
  std::vector<TaskRecord> records;
  std::vector<std::string> problems;
  std::unique_ptr<TaskJournal> journal = MustOpen(dir, &records, &problems);
  REQUIRE(Jobs(records) == std::vector<uint64_t>{8});
  CHECK(records[0].exit_slot == TaskJournal::kLegacyExitSlot);
  CHECK(records[0].start_ticks == 55);
  CHECK(journal->ExitStatus(records[0]) == 7);  // the old wrapper's format.
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("bad.task") != std::string::npos);
  // Journaled now; only the exit status file of the adopted task is left of the old layout.
  CHECK_FALSE(std::filesystem::exists(dir.File("tasks/8-1-0.task")));
  CHECK_FALSE(std::filesystem::exists(dir.File("tasks/9-1-0.exit")));
  CHECK(std::filesystem::exists(dir.File("tasks/8-1-0.exit")));
  {
    std::vector<TaskRecord> reopened;
    journal.reset();
    journal = MustOpen(dir, &reopened);
    REQUIRE(Jobs(reopened) == std::vector<uint64_t>{8});
    CHECK(reopened[0].exit_slot == TaskJournal::kLegacyExitSlot);
  }
  REQUIRE(journal->Ended(records[0]).ok());
  CHECK_FALSE(std::filesystem::exists(dir.path() / "tasks"));
}

}  // namespace
}  // namespace tessera::local
