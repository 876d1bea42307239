// What Scheduler::Open refuses to start on, and how calls answer when the store fails under
// them: a store another scheduler has open under another name (a hard link), an empty file, a
// damaged file; a store that refuses writes (CheckStore, store_errors, Cancel).
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "integration/fixture.h"
#include "support/deadline.h"
#include "support/faulty_vfs.h"

namespace tessera {
namespace {

using namespace testing;
using std::chrono::milliseconds;

constexpr milliseconds kAnswerWithin{5000};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Options StoreAt(const std::string& path) {
  Options options;
  options.store.path = path;
  options.simulated_cluster = OneNode(4);
  return options;
}

TEST_CASE("store safety: a second scheduler on a hard link to the store is refused") {
  ScratchDir dir;
  const Options options = StoreAt(dir.File("state.db"));
  auto first = Open(options);
  CreateQueue(first.scheduler.get(), QueueSpec("team"));
  const uint64_t id =
      MustSubmit(first.scheduler.get(), JobSpecBuilder("team").Gpus(2).Build()).id();
  first->WaitIdle();
  REQUIRE(MustGet(first.scheduler.get(), id).status().state() == v1::RUNNING);

  Options linked = options;
  linked.store.path = dir.File("linked.db");
  std::filesystem::create_hard_link(options.store.path, linked.store.path);
  auto second = Scheduler::Open(linked);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == StatusCode::kUnavailable);
  CHECK_MESSAGE(Contains(second.status().message(),
                         "'" + linked.store.path + "' is in use by another scheduler process"),
                second.status().ToString());

  // The refused scheduler touched nothing: the job runs on as its first attempt.
  first->WaitIdle();
  const v1::Job job = MustGet(first.scheduler.get(), id);
  CHECK(job.status().state() == v1::RUNNING);
  CHECK(job.status().attempt() == 1);

  // Once the first is gone, the store opens under either name.
  first.scheduler.reset();
  CHECK(Scheduler::Open(linked).ok());
}

TEST_CASE("store safety: an empty (0-byte) store file is refused, and left as it is") {
  ScratchDir dir;
  const Options options = StoreAt(dir.File("state.db"));
  std::ofstream(options.store.path).close();
  auto opened = Scheduler::Open(options);
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.status().code() == StatusCode::kFailedPrecondition);
  CHECK_MESSAGE(Contains(opened.status().message(),
                         "store '" + options.store.path + "' is an empty file (0 bytes)"),
                opened.status().ToString());
  CHECK(std::filesystem::file_size(options.store.path) == 0);
}

TEST_CASE("store safety: a SQLite database that is not a store is refused") {
  ScratchDir dir;
  const Options options = StoreAt(dir.File("other.db"));
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(options.store.path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "CREATE TABLE notes (text TEXT)", nullptr, nullptr, nullptr) ==
          SQLITE_OK);
  sqlite3_close(db);
  auto opened = Scheduler::Open(options);
  CHECK(opened.status().code() == StatusCode::kFailedPrecondition);
  CHECK_MESSAGE(Contains(opened.status().message(), "is not a Tessera store"),
                opened.status().ToString());
}

// Overwrites the b-tree header of the page holding `marker` (a page no start-up read touches).
void DamagePageHolding(const std::string& path, const std::string& marker) {
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = bytes.find(marker);
  REQUIRE(at != std::string::npos);
  constexpr size_t kPageSize = 4096;
  const size_t page = at / kPageSize;
  REQUIRE(page > 0);
  std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
  out.seekp(static_cast<std::streamoff>(page * kPageSize));
  const char garbage[8] = {0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f};
  out.write(garbage, sizeof(garbage));
}

TEST_CASE("store safety: a damaged store is refused at open, and found by CheckStore") {
  ScratchDir dir;
  Options options = StoreAt(dir.File("state.db"));
  uint64_t damaged_job = 0;
  {
    auto t = Open(options);
    CreateQueue(t.scheduler.get(), QueueSpec("team"));
    for (int i = 0; i < 80; ++i) {
      const v1::Job job = MustSubmit(t.scheduler.get(), JobSpecBuilder("team")
                                                            .Name("finished-" + std::to_string(i))
                                                            .Gpus(1)
                                                            .SimulatedDurationMs(10)
                                                            .Build());
      if (i == 40) damaged_job = job.id();
      t->WaitIdle();
      t.clock->AdvanceUs(10'000);
    }
    t->WaitIdle();
    REQUIRE(MustGet(t.scheduler.get(), damaged_job).status().state() == v1::SUCCEEDED);
  }
  DamagePageHolding(options.store.path, "finished-40");

  auto refused = Scheduler::Open(options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
  CHECK_MESSAGE(Contains(refused.status().message(),
                         "store '" + options.store.path + "' fails SQLite's quick check: "),
                refused.status().ToString());
  CHECK(Contains(refused.status().message(), "restore a backup"));

  // Without the check it opens (nothing at start-up reads the page), and the damage shows as
  // failed reads, counted as store errors, and through CheckStore.
  options.store.check_at_open = StoreCheck::kNone;
  auto t = Open(options);
  CHECK(t->GetStats().store_errors() == 0);
  auto job = t->GetJob(damaged_job);
  CHECK(job.status().code() == StatusCode::kFailedPrecondition);
  CHECK(t->GetStats().store_errors() >= 1);
  Status quick = t->CheckStore(StoreCheck::kQuick);
  CHECK(quick.code() == StatusCode::kFailedPrecondition);
  CHECK_MESSAGE(Contains(quick.message(), "fails SQLite's quick check"), quick.ToString());
  Status full = t->CheckStore(StoreCheck::kFull);
  CHECK(full.code() == StatusCode::kFailedPrecondition);
  CHECK_MESSAGE(Contains(full.message(), "fails SQLite's integrity check"), full.ToString());
}

TEST_CASE(
    "store safety: a sound store passes CheckStore, and refused requests are not store "
    "errors") {
  auto t = Open(StoreAt(""));
  CHECK(t->CheckStore(StoreCheck::kQuick).ok());
  CHECK(t->CheckStore(StoreCheck::kFull).ok());
  CHECK(t->CheckStore(StoreCheck::kNone).ok());
  CHECK(t->Submit(JobSpecBuilder("no-such-queue").Build()).status().code() ==
        StatusCode::kNotFound);
  CHECK(t->GetStats().store_errors() == 0);
}

TEST_CASE("store safety: on a store that refuses every write, each call answers at once") {
  ScratchDir dir;
  FaultyVfs vfs;  // outlives the scheduler's connections.
  Options options = StoreAt(dir.File("state.db"));
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, QueueSpec("team"));
  const uint64_t running = MustSubmit(s, JobSpecBuilder("team").Gpus(4).Build()).id();
  const uint64_t pending = MustSubmit(s, JobSpecBuilder("team").Gpus(4).Build()).id();
  t->WaitIdle();
  REQUIRE(MustGet(s, running).status().state() == v1::RUNNING);

  vfs.FailNth(FaultyVfs::Op::kWrite, 1, /*persistent=*/true, FaultyVfs::Failure::kDiskFull);
  auto submit =
      Within(kAnswerWithin, "Submit", [&] { return s->Submit(JobSpecBuilder("team").Build()); });
  CHECK(submit.status().code() == StatusCode::kResourceExhausted);

  auto cancel = Within(kAnswerWithin, "Cancel", [&] { return s->Cancel(pending); });
  CHECK(cancel.status().code() == StatusCode::kResourceExhausted);
  CHECK_MESSAGE(Contains(cancel.status().message(), "job " + std::to_string(pending) +
                                                        ": cancelled, but the store has not "
                                                        "recorded it yet"),
                cancel.status().ToString());
  // Asked again while the store still refuses, it answers the same.
  auto again = Within(kAnswerWithin, "Cancel", [&] { return s->Cancel(pending); });
  CHECK(again.status().code() == StatusCode::kResourceExhausted);
  CHECK_MESSAGE(Contains(again.status().message(), ": ended, but the store has not recorded it"),
                again.status().ToString());
  auto stop = Within(kAnswerWithin, "Cancel", [&] { return s->Cancel(running); });
  CHECK(stop.status().code() == StatusCode::kResourceExhausted);
  auto stop_again = Within(kAnswerWithin, "Cancel", [&] { return s->Cancel(running); });
  CHECK(stop_again.status().code() == StatusCode::kResourceExhausted);
  CHECK_MESSAGE(Contains(stop_again.status().message(), "but the store has not recorded it"),
                stop_again.status().ToString());
  CHECK(Within(kAnswerWithin, "CreateQueue", [&] {
          return s->CreateQueue(QueueSpec("more"));
        }).code() == StatusCode::kResourceExhausted);
  CHECK(Within(kAnswerWithin, "CordonNode", [&] { return s->CordonNode("node-0", true); }).code() ==
        StatusCode::kResourceExhausted);
  Within(kAnswerWithin, "WaitIdle", [&] { t->WaitIdle(); });
  CHECK(t->GetStats().store_errors() > 0);
  // Reads keep working.
  CHECK(MustGet(s, pending).status().state() == v1::PENDING);

  // Once the store takes writes again, the retried writes land and the cancels hold.
  vfs.Disarm();
  t.clock->AdvanceUs(2'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, pending).status().state() == v1::CANCELLED);
  CHECK(MustGet(s, running).status().state() == v1::CANCELLED);
  auto finished = s->Cancel(pending);
  CHECK(finished.status().code() == StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tessera
