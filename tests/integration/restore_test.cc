// RestoreStore (tessera/restore.h): a backup put back in place of a store opens with the jobs
// it held, the replaced store is kept aside, and every documented refusal changes nothing.
#include <sqlite3.h>

#include <fstream>
#include <vector>

#include "integration/fixture.h"
#include "tessera/restore.h"

namespace tessera {
namespace {

using namespace testing;

Options StoreAt(const std::string& path) {
  Options options;
  options.store.path = path;
  options.clock = std::make_shared<ManualClock>();
  options.simulated_cluster = OneNode(4);
  return options;
}

int JobCount(const std::string& store_path) {
  auto t = Open(StoreAt(store_path));
  v1::ListJobsRequest request;
  request.set_page_size(1000);
  auto jobs = t->ListJobs(request);
  REQUIRE(jobs.ok());
  return jobs->jobs_size();
}

void ExecSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  CHECK(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
}

TEST_CASE("restore: a backup replaces the store, which is kept as .pre-restore") {
  ScratchDir dir;
  const std::string store = dir.File("state.db");
  const std::string backup = dir.File("backup.db");
  {
    auto t = Open(StoreAt(store));
    for (int i = 0; i < 20; ++i) MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Build());
    t->WaitIdle();
    REQUIRE(t->Backup(backup).ok());
    for (int i = 0; i < 5; ++i) MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Build());
    t->WaitIdle();
  }

  std::vector<RestoreProgress> seen;
  RestoreOptions options;
  options.progress = [&seen](const RestoreProgress& p) { seen.push_back(p); };
  Status status = RestoreStore(backup, store, options);
  REQUIRE_MESSAGE(status.ok(), status.ToString());

  CHECK(JobCount(store) == 20);
  // The replaced store, with the writes its WAL held, is a store of its own.
  CHECK(JobCount(store + ".pre-restore") == 25);
  CHECK_FALSE(std::filesystem::exists(store + ".restore-partial"));
  REQUIRE(seen.size() >= 2);
  CHECK(seen.front().phase == "saving the current store");
  CHECK(seen.back().phase == "restoring");
  CHECK(seen.back().pages_total > 0);
  CHECK(seen.back().pages_done == seen.back().pages_total);

  // Restoring the kept store undoes the restore.
  REQUIRE(RestoreStore(store + ".pre-restore", store, {}).ok());
  CHECK(JobCount(store) == 25);
}

TEST_CASE("restore: into a path with no store yet, without keeping a copy") {
  ScratchDir dir;
  const std::string backup = dir.File("backup.db");
  {
    auto t = Open(StoreAt(dir.File("live.db")));
    MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Build());
    t->WaitIdle();
    REQUIRE(t->Backup(backup).ok());
  }
  RestoreOptions options;
  options.discard_current = true;
  REQUIRE(RestoreStore(backup, dir.File("fresh.db"), options).ok());
  CHECK(JobCount(dir.File("fresh.db")) == 1);
  CHECK_FALSE(std::filesystem::exists(dir.File("fresh.db.pre-restore")));
}

TEST_CASE("restore: refusals name the problem and leave the store as it was") {
  ScratchDir dir;
  const std::string store = dir.File("state.db");
  const std::string backup = dir.File("backup.db");
  auto t = Open(StoreAt(store));
  MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Build());
  t->WaitIdle();
  REQUIRE(t->Backup(backup).ok());

  SUBCASE("the store is open in a scheduler") {
    Status s = RestoreStore(backup, store);
    CHECK(s.code() == StatusCode::kUnavailable);
    CHECK(s.message().find("in use by another scheduler process") != std::string::npos);
  }
  SUBCASE("paths") {
    CHECK(RestoreStore("", store).code() == StatusCode::kInvalidArgument);
    CHECK(RestoreStore(backup, "").code() == StatusCode::kInvalidArgument);
    Status missing = RestoreStore(dir.File("nope.db"), store);
    CHECK(missing.code() == StatusCode::kNotFound);
    CHECK(missing.message().find("nope.db") != std::string::npos);
    t.scheduler.reset();
    CHECK(RestoreStore(store, store).code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("not a database") {
    t.scheduler.reset();
    std::ofstream(dir.File("text.db")) << "these are not the pages you are looking for\n";
    Status s = RestoreStore(dir.File("text.db"), store);
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(s.message().find("is not a SQLite database") != std::string::npos);
  }
  SUBCASE("a SQLite database that is not a store") {
    t.scheduler.reset();
    ExecSql(dir.File("other.db"), "CREATE TABLE notes (text TEXT)");
    Status s = RestoreStore(dir.File("other.db"), store);
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(s.message().find("is not a Tessera store") != std::string::npos);
  }
  SUBCASE("a store from a newer Tessera") {
    t.scheduler.reset();
    ExecSql(backup, "PRAGMA user_version = 99");
    Status s = RestoreStore(backup, store);
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(s.message().find("schema version 99, newer than this build's") != std::string::npos);
  }
  t.scheduler.reset();
  CHECK(JobCount(store) == 1);
  CHECK_FALSE(std::filesystem::exists(store + ".pre-restore"));
}

}  // namespace
}  // namespace tessera
