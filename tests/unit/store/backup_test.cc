// Store::Backup: an online copy that opens as a store, is consistent while writes go on, and
// refuses destinations it must not write.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"
#include "store_test_util.h"

namespace tessera::store::testing {
namespace {

TEST_CASE("store: a backup opens as a store with the same jobs and events") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  for (int i = 0; i < 30; ++i) {
    InsertJob(*store,
              MakeJob("q" + std::to_string(i % 3), i % 4 ? v1::PENDING : v1::SUCCEEDED,
                      "key-" + std::to_string(i), {{"i", std::to_string(i)}}),
              /*with_event=*/true);
  }
  REQUIRE(store
              ->WriteAndWait([](WriteTransaction& txn) -> Status {
                v1::QueueSpec spec;
                spec.set_name("q0");
                TESSERA_RETURN_IF_ERROR(txn.PutQueue(spec));
                return txn.PutNodeFlags("n", true, true);
              })
              .ok());

  const std::string copy_path = dir.File("copy.db");
  Status status = store->Backup(copy_path);
  REQUIRE_MESSAGE(status.ok(), status.ToString());
  CHECK(std::filesystem::exists(copy_path));
  CHECK_FALSE(std::filesystem::exists(copy_path + ".partial"));

  // Writes after the backup are not in it.
  InsertJob(*store, MakeJob("after"), true);

  StoreOptions copy_options;
  copy_options.path = copy_path;
  std::unique_ptr<Store> copy = OpenStore(copy_options);
  std::vector<v1::Job> original_jobs = AllJobs(*store);
  std::vector<v1::Job> copied_jobs = AllJobs(*copy);
  REQUIRE(original_jobs.size() == 31);
  REQUIRE(copied_jobs.size() == 30);
  for (size_t i = 0; i < copied_jobs.size(); ++i) {
    CAPTURE(i);
    CHECK(copied_jobs[i].SerializeAsString() == original_jobs[i].SerializeAsString());
  }
  std::vector<v1::Event> original_events = AllEvents(*store);
  std::vector<v1::Event> copied_events = AllEvents(*copy);
  REQUIRE(copied_events.size() == 30);
  for (size_t i = 0; i < copied_events.size(); ++i) {
    CHECK(copied_events[i].SerializeAsString() == original_events[i].SerializeAsString());
  }
  CHECK(copy->LastEventSeq() == 30);
  CHECK(LiveJobs(*copy).size() == LiveJobs(*store).size() - 1);
  std::vector<v1::QueueSpec> queues;
  REQUIRE(copy->LoadQueues(&queues).ok());
  REQUIRE(queues.size() == 1);
  CHECK(queues[0].name() == "q0");
  std::vector<NodeFlags> flags;
  REQUIRE(copy->LoadNodeFlags(&flags).ok());
  REQUIRE(flags.size() == 1);
  CHECK(flags[0].draining);

  // A second backup to the same path replaces the first.
  copy.reset();
  REQUIRE(store->Backup(copy_path).ok());
  copy = OpenStore(copy_options);
  CHECK(AllJobs(*copy).size() == 31);
}

TEST_CASE("store: a backup taken while writes go on is consistent") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  // About 6 MiB: more pages than one slice of a sliced copy (1024), so that a copy which
  // restarts whenever the writer commits between slices would never finish here.
  REQUIRE(
      store
          ->WriteAndWait([](WriteTransaction& txn) -> Status {
            for (int i = 0; i < 90; ++i) {
              v1::Job job = MakeJob("q", v1::PENDING, "", {{"pad", std::string(64 * 1024, 'p')}});
              TESSERA_ASSIGN_OR_RETURN(uint64_t id, txn.InsertJob(job, 0, 0));
              v1::Event event = JobEvent(id);
              TESSERA_RETURN_IF_ERROR(txn.AppendEvent(event).status());
            }
            return Status::Ok();
          })
          .ok());

  // Each write inserts a job and its event together; a consistent copy never has one without
  // the other.
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::thread writer([&] {
    while (!stop.load()) {
      if (store->WriteAndWait(InsertJobOp(MakeJob("w"), nullptr, /*with_event=*/true)).ok()) {
        written.fetch_add(1);
      }
    }
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (written.load() < 20 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  // No REQUIRE until the writer is joined: a test that stops here must not leave it running.
  std::vector<std::string> copies;
  std::vector<Status> statuses;
  bool finished_during_writes = true;
  const int written_before = written.load();
  for (int i = 0; i < 3; ++i) {
    copies.push_back(dir.File("copy-" + std::to_string(i) + ".db"));
    std::future<Status> backup =
        std::async(std::launch::async, [&, path = copies.back()] { return store->Backup(path); });
    // A backup must finish while the writer keeps writing, not only once it pauses.
    if (backup.wait_for(std::chrono::seconds(15)) != std::future_status::ready) {
      finished_during_writes = false;
      stop = true;
    }
    statuses.push_back(backup.get());
  }
  const int written_during = written.load();
  stop = true;
  writer.join();
  CHECK(finished_during_writes);
  CHECK(written_before >= 20);
  CHECK(written_during > written_before);  // the writer was not held up by the backups.
  for (const Status& status : statuses) REQUIRE_MESSAGE(status.ok(), status.ToString());

  size_t previous = 0;
  for (const std::string& path : copies) {
    CAPTURE(path);
    StoreOptions options;
    options.path = path;
    std::unique_ptr<Store> copy = OpenStore(options);
    std::vector<v1::Job> jobs = AllJobs(*copy);
    std::vector<v1::Event> events = AllEvents(*copy);
    CHECK(jobs.size() >= 90 + 20);
    CHECK(jobs.size() >= previous);  // later copies are not older.
    previous = jobs.size();
    REQUIRE(events.size() == jobs.size());
    std::map<uint64_t, int> events_per_job;
    size_t misnumbered = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i].seq() != i + 1) ++misnumbered;
      ++events_per_job[events[i].job_id()];
    }
    CHECK(misnumbered == 0);
    size_t without_one_event = 0;
    for (const v1::Job& job : jobs) {
      if (events_per_job[job.id()] != 1) ++without_one_event;
    }
    CHECK(without_one_event == 0);
    CHECK(QueryText(path, "PRAGMA integrity_check") == "ok");
  }
}

TEST_CASE("store: Backup refuses an empty path and the store's own file") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  InsertJob(*store, MakeJob("q"), true);

  Status empty = store->Backup("");
  CHECK(empty.code() == StatusCode::kInvalidArgument);

  Status self = store->Backup(store->path());
  CHECK(self.code() == StatusCode::kInvalidArgument);

  // The same file under another name is still the store itself.
  Status respelled = store->Backup((dir.path() / "." / "store.db").string());
  CHECK_MESSAGE(respelled.code() == StatusCode::kInvalidArgument, respelled.ToString());
  std::filesystem::create_symlink(store->path(), dir.File("link.db"));
  Status linked = store->Backup(dir.File("link.db"));
  CHECK_MESSAGE(linked.code() == StatusCode::kInvalidArgument, linked.ToString());

  // None of that disturbed the store: later writes, enough to be checkpointed into the file and
  // restart the WAL, survive a reopen (a copy renamed over the live file would lose them or
  // leave the file malformed).
  for (int i = 0; i < 300; ++i) {
    InsertJob(*store, MakeJob("q", v1::PENDING, "", {{"pad", std::string(20000, 'x')}}), true);
  }
  const StoreOptions options = OptionsIn(dir);
  store.reset();
  store = OpenStore(options);
  CHECK(LiveJobs(*store).size() == 301);
  CHECK(store->LastEventSeq() == 301);
  CHECK(QueryText(options.path, "PRAGMA integrity_check") == "ok");
  for (const char* name : {"store.db.partial", "link.db.partial"}) {
    CHECK_FALSE(std::filesystem::exists(dir.File(name)));
  }
}

TEST_CASE("store: a backup into a missing directory fails and leaves nothing behind") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  InsertJob(*store, MakeJob("q"), true);
  const std::string target = dir.File("missing/copy.db");
  Status status = store->Backup(target);
  CHECK_FALSE(status.ok());
  CHECK(status.message().find(target) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(target));
  CHECK_FALSE(std::filesystem::exists(target + ".partial"));
  CHECK_FALSE(std::filesystem::exists(dir.File("missing")));
  // The store is unaffected.
  CHECK(AllJobs(*store).size() == 1);
  REQUIRE(store->Backup(dir.File("copy.db")).ok());
}

TEST_CASE("store: a temporary store can be backed up") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(StoreOptions{});
  const uint64_t id = InsertJob(*store, MakeJob("q", v1::RUNNING, "k"), true);
  REQUIRE(store->Backup(dir.File("copy.db")).ok());
  store.reset();
  StoreOptions options;
  options.path = dir.File("copy.db");
  std::unique_ptr<Store> copy = OpenStore(options);
  StatusOr<v1::Job> job = copy->GetJob(id);
  REQUIRE(job.ok());
  CHECK(job->idempotency_key() == "k");
  CHECK(copy->LastEventSeq() == 1);
}

}  // namespace
}  // namespace tessera::store::testing
