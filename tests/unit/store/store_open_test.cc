// Store::Open on fresh and existing files: schema, WAL, and what survives a reopen.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "store/schema.h"
#include "store/store.h"
#include "store_test_util.h"

namespace tessera::store::testing {
namespace {

TEST_CASE("store: opening a fresh path creates the schema in WAL mode") {
  TempDir dir;
  const StoreOptions options = OptionsIn(dir);
  REQUIRE_FALSE(std::filesystem::exists(options.path));
  {
    std::unique_ptr<Store> store = OpenStore(options);
    CHECK(store->path() == options.path);
    CHECK(std::filesystem::exists(options.path));
    CHECK(store->LastEventSeq() == 0);
    CHECK(LiveJobs(*store).empty());
    std::vector<v1::QueueSpec> queues;
    REQUIRE(store->LoadQueues(&queues).ok());
    CHECK(queues.empty());
    // Inspected through a second connection while the store is open.
    CHECK(QueryInt(options.path, "PRAGMA user_version") == kSchemaVersion);
    CHECK(QueryText(options.path, "PRAGMA journal_mode") == "wal");
    for (const char* table : {"jobs", "queues", "nodes", "events"}) {
      CAPTURE(table);
      CHECK(QueryInt(options.path, std::string("SELECT COUNT(*) FROM sqlite_master WHERE "
                                               "type = 'table' AND name = '") +
                                       table + "'") == 1);
    }
  }
  // WAL is a property of the file: it is still set after the store is closed.
  CHECK(QueryText(options.path, "PRAGMA journal_mode") == "wal");
  CHECK(QueryInt(options.path, "PRAGMA user_version") == kSchemaVersion);
}

TEST_CASE("store: reopening keeps jobs, queues, node flags and events") {
  TempDir dir;
  const StoreOptions options = OptionsIn(dir, "store.db", /*durable=*/true);

  // One job per state; the terminal ones must not come back as live jobs.
  const std::vector<v1::JobState> states = {v1::PENDING,   v1::ADMITTED,   v1::SUCCEEDED,
                                            v1::STARTING,  v1::FAILED,     v1::RUNNING,
                                            v1::CANCELLED, v1::PREEMPTING, v1::LOST};
  std::vector<uint64_t> live_ids;
  uint64_t finished_later = 0;
  {
    std::unique_ptr<Store> store = OpenStore(options);
    for (size_t i = 0; i < states.size(); ++i) {
      v1::Job job = MakeJob("q" + std::to_string(i), states[i], "key-" + std::to_string(i),
                            {{"index", std::to_string(i)}});
      const uint64_t id = InsertJob(*store, job, /*with_event=*/true);
      if (states[i] != v1::SUCCEEDED && states[i] != v1::FAILED && states[i] != v1::CANCELLED) {
        live_ids.push_back(id);
      }
    }
    // A live job that finishes afterwards: its state column must follow its status.
    finished_later = InsertJob(*store, MakeJob("q-late", v1::RUNNING), true);
    REQUIRE(store
                ->WriteAndWait([&](WriteTransaction& txn) {
                  v1::JobStatus status;
                  status.set_state(v1::SUCCEEDED);
                  status.set_reason("done");
                  return txn.UpdateJobStatus(finished_later, status, 4'000'000);
                })
                .ok());

    REQUIRE(store
                ->WriteAndWait([](WriteTransaction& txn) -> Status {
                  for (const char* name : {"team", "team/b", "team/a", "other"}) {
                    v1::QueueSpec spec;
                    spec.set_name(name);
                    spec.set_weight(name[0] == 'o' ? 3.0 : 1.5);
                    spec.mutable_guarantee()->set_gpu_milli(2000);
                    TESSERA_RETURN_IF_ERROR(txn.PutQueue(spec));
                  }
                  TESSERA_RETURN_IF_ERROR(txn.PutNodeFlags("node-1", true, false));
                  TESSERA_RETURN_IF_ERROR(txn.PutNodeFlags("node-2", true, true));
                  return Status::Ok();
                })
                .ok());
    CHECK(store->LastEventSeq() == states.size() + 1);
  }

  std::unique_ptr<Store> store = OpenStore(options);
  CHECK(store->LastEventSeq() == states.size() + 1);

  std::vector<v1::Job> live = LiveJobs(*store);
  REQUIRE(live.size() == live_ids.size());
  for (size_t i = 0; i < live.size(); ++i) {
    CAPTURE(i);
    CHECK(live[i].id() == live_ids[i]);  // id order.
    CHECK(live[i].status().state() != v1::SUCCEEDED);
    CHECK(live[i].status().state() != v1::FAILED);
    CHECK(live[i].status().state() != v1::CANCELLED);
  }
  // The records come back whole: spec, status and idempotency key.
  CHECK(live[0].idempotency_key() == "key-0");
  CHECK(live[0].spec().queue() == "q0");
  CHECK(live[0].spec().labels().at("index") == "0");
  CHECK(live[0].spec().task().memory_mib() == 512);
  CHECK(live[0].status().state() == v1::PENDING);
  CHECK(live[0].status().submit_time_us() == 1'000'000);
  CHECK(live.back().status().state() == v1::LOST);

  // Terminal jobs are still readable one by one.
  StatusOr<v1::Job> late = store->GetJob(finished_later);
  REQUIRE(late.ok());
  CHECK(late->status().state() == v1::SUCCEEDED);
  CHECK(late->status().reason() == "done");

  std::vector<v1::QueueSpec> queues;
  REQUIRE(store->LoadQueues(&queues).ok());
  REQUIRE(queues.size() == 4);
  CHECK(queues[0].name() == "other");  // by name.
  CHECK(queues[0].weight() == 3.0);
  CHECK(queues[1].name() == "team");
  CHECK(queues[2].name() == "team/a");
  CHECK(queues[3].name() == "team/b");
  CHECK(queues[3].guarantee().gpu_milli() == 2000);

  std::vector<NodeFlags> flags;
  REQUIRE(store->LoadNodeFlags(&flags).ok());
  REQUIRE(flags.size() == 2);
  std::sort(flags.begin(), flags.end(),
            [](const NodeFlags& a, const NodeFlags& b) { return a.name < b.name; });
  CHECK(flags[0].name == "node-1");
  CHECK(flags[0].cordoned);
  CHECK_FALSE(flags[0].draining);
  CHECK(flags[1].name == "node-2");
  CHECK(flags[1].cordoned);
  CHECK(flags[1].draining);

  std::vector<v1::Event> events = AllEvents(*store);
  REQUIRE(events.size() == states.size() + 1);
  for (size_t i = 0; i < events.size(); ++i) {
    CHECK(events[i].seq() == i + 1);
    CHECK(events[i].kind() == v1::JOB_STATE_CHANGED);
  }
  CHECK(events[2].to_state() == v1::SUCCEEDED);

  // New writes continue where the old ones left off.
  const uint64_t next = InsertJob(*store, MakeJob("q-new"), true);
  CHECK(next == finished_later + 1);
  CHECK(store->LastEventSeq() == states.size() + 2);
}

TEST_CASE("store: a version 1 store is migrated, and its finished jobs stay finished") {
  TempDir dir;
  const StoreOptions options = OptionsIn(dir);
  uint64_t running = 0;
  uint64_t succeeded = 0;
  {
    std::unique_ptr<Store> store = OpenStore(options);
    running = InsertJob(*store, MakeJob("q", v1::RUNNING));
    succeeded = InsertJob(*store, MakeJob("q", v1::SUCCEEDED));
  }
  {
    // Back to the version 1 layout: no `finished` column, jobs_live defined by state, no
    // index of pending jobs, nothing of retention's or of burst spend's.
    StatusOr<std::unique_ptr<Database>> db = Database::Open(options.path);
    REQUIRE(db.ok());
    for (const char* sql : {"DROP TABLE burst_accounts", "DROP INDEX jobs_finished_by_time",
                            "DROP INDEX events_by_job", "DROP TABLE event_log_end",
                            "DROP INDEX jobs_pending_by_queue", "DROP INDEX jobs_live",
                            "ALTER TABLE jobs DROP COLUMN finished",
                            "CREATE INDEX jobs_live ON jobs(id) WHERE state NOT BETWEEN 6 AND 8",
                            "PRAGMA user_version = 1"}) {
      CAPTURE(sql);
      Status status = (*db)->Exec(sql);
      REQUIRE_MESSAGE(status.ok(), status.ToString());
    }
  }
  std::unique_ptr<Store> store = OpenStore(options);
  CHECK(QueryInt(options.path, "PRAGMA user_version") == kSchemaVersion);
  std::vector<v1::Job> live = LiveJobs(*store);
  REQUIRE(live.size() == 1);
  CHECK(live[0].id() == running);
  CHECK(QueryInt(options.path,
                 "SELECT finished FROM jobs WHERE id = " + std::to_string(succeeded)) == 1);
  // The running job finishes after the migration: it leaves the live jobs.
  REQUIRE(store
              ->WriteAndWait([&](WriteTransaction& txn) {
                v1::JobStatus status;
                status.set_state(v1::FAILED);
                return txn.UpdateJobStatus(running, status, 1'000'000);
              })
              .ok());
  CHECK(LiveJobs(*store).empty());
}

TEST_CASE("store: writes still queued when the store is destroyed are applied") {
  TempDir dir;
  const StoreOptions options = OptionsIn(dir);
  constexpr int kWrites = 50;
  std::atomic<int> ok{0};
  {
    std::unique_ptr<Store> store = OpenStore(options);
    for (int i = 0; i < kWrites; ++i) {
      store->Write(InsertJobOp(MakeJob("q"), nullptr, true), [&](const Status& status) {
        if (status.ok()) ok.fetch_add(1);
      });
    }
    // No Flush: the destructor must drain the queue.
  }
  CHECK(ok.load() == kWrites);
  std::unique_ptr<Store> store = OpenStore(options);
  CHECK(LiveJobs(*store).size() == kWrites);
  CHECK(store->LastEventSeq() == kWrites);
}

TEST_CASE("store: an empty path opens a temporary store whose files go away with it") {
  std::string path;
  {
    std::unique_ptr<Store> store = OpenStore(StoreOptions{});
    path = store->path();
    REQUIRE_FALSE(path.empty());
    CHECK(std::filesystem::exists(path));
    const uint64_t id = InsertJob(*store, MakeJob("q"), true);
    StatusOr<v1::Job> job = store->GetJob(id);
    REQUIRE(job.ok());
    CHECK(job->spec().queue() == "q");
    CHECK(store->LastEventSeq() == 1);
    CHECK(std::filesystem::exists(path + "-wal"));
  }
  for (const char* suffix : {"", "-wal", "-shm"}) {
    CAPTURE(suffix);
    CHECK_FALSE(std::filesystem::exists(path + suffix));
  }
}

TEST_CASE("store: two temporary stores are independent") {
  std::unique_ptr<Store> a = OpenStore(StoreOptions{});
  std::unique_ptr<Store> b = OpenStore(StoreOptions{});
  CHECK(a->path() != b->path());
  InsertJob(*a, MakeJob("only-in-a"));
  CHECK(LiveJobs(*a).size() == 1);
  CHECK(LiveJobs(*b).empty());
}

}  // namespace
}  // namespace tessera::store::testing
