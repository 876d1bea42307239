// Store::Open refusing what it must not open, with the right status, and the SQLite error
// mapping behind those statuses.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "store/schema.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/store_lock.h"
#include "store_test_util.h"

namespace tessera::store::testing {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("store: a store with a newer schema version is refused") {
  TempDir dir;
  const StoreOptions options = OptionsIn(dir);
  {
    std::unique_ptr<Store> store = OpenStore(options);
    InsertJob(*store, MakeJob("q"));
  }
  const int newer = kSchemaVersion + 1;
  {
    StatusOr<std::unique_ptr<Database>> db = Database::Open(options.path);
    REQUIRE(db.ok());
    REQUIRE((*db)->Exec("PRAGMA user_version = " + std::to_string(newer)).ok());
  }
  StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == StatusCode::kFailedPrecondition);
  CHECK_MESSAGE(Contains(store.status().message(), "version " + std::to_string(newer)),
                store.status().ToString());
  // Refusing it changed nothing: the version and the data are still there.
  CHECK(QueryInt(options.path, "PRAGMA user_version") == newer);
  CHECK(QueryInt(options.path, "SELECT COUNT(*) FROM jobs") == 1);
}

TEST_CASE("store: a file of garbage bytes is refused, not crashed on") {
  TempDir dir;
  const StoreOptions options = OptionsIn(dir);
  {
    std::mt19937 random(20240611);
    std::ofstream out(options.path, std::ios::binary);
    for (int i = 0; i < 16384; ++i) out.put(static_cast<char>(random() & 0xff));
  }
  StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
  REQUIRE_FALSE(store.ok());
  CHECK_MESSAGE(store.status().code() == StatusCode::kFailedPrecondition,
                store.status().ToString());
  CHECK(Contains(store.status().message(), options.path));
  // The failed open released its lock.
  StatusOr<std::unique_ptr<StoreLock>> lock = StoreLock::Acquire(options.path);
  CHECK_MESSAGE(lock.ok(), lock.status().ToString());
}

TEST_CASE("store: a path in a directory that does not exist is unavailable") {
  TempDir dir;
  StoreOptions options;
  options.path = dir.File("missing/sub/store.db");
  StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
  REQUIRE_FALSE(store.ok());
  CHECK_MESSAGE(store.status().code() == StatusCode::kUnavailable, store.status().ToString());
  CHECK(store.status().message() == "cannot open store '" + options.path + "': directory '" +
                                        dir.File("missing/sub") + "' does not exist");
  CHECK_FALSE(std::filesystem::exists(dir.File("missing")));
}

TEST_CASE("store: a store already open elsewhere is refused as in use") {
  TempDir dir;
  const StoreOptions options = OptionsIn(dir);
  std::unique_ptr<Store> first = OpenStore(options);
  const uint64_t id = InsertJob(*first, MakeJob("q"));

  StatusOr<std::unique_ptr<Store>> second = Store::Open(options);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == StatusCode::kUnavailable);
  CHECK_MESSAGE(Contains(second.status().message(), "in use"), second.status().ToString());

  // The same file spelled differently is the same lock.
  StoreOptions respelled = options;
  respelled.path = (dir.path() / "." / "store.db").string();
  StatusOr<std::unique_ptr<Store>> third = Store::Open(respelled);
  REQUIRE_FALSE(third.ok());
  CHECK(third.status().code() == StatusCode::kUnavailable);

  // So is a symlink to it.
  StoreOptions linked = options;
  linked.path = dir.File("link.db");
  std::filesystem::create_symlink(options.path, linked.path);
  StatusOr<std::unique_ptr<Store>> fourth = Store::Open(linked);
  REQUIRE_FALSE(fourth.ok());
  CHECK(fourth.status().code() == StatusCode::kUnavailable);

  // And a hard link: another name for the same inode, which no path comparison can see.
  StoreOptions hard_linked = options;
  hard_linked.path = dir.File("hard.db");
  std::filesystem::create_hard_link(options.path, hard_linked.path);
  StatusOr<std::unique_ptr<Store>> fifth = Store::Open(hard_linked);
  REQUIRE_FALSE(fifth.ok());
  CHECK(fifth.status().code() == StatusCode::kUnavailable);
  CHECK_MESSAGE(Contains(fifth.status().message(), "in use by another scheduler process"),
                fifth.status().ToString());

  // The refused opens did not disturb the first store.
  InsertJob(*first, MakeJob("q"));
  CHECK(LiveJobs(*first).size() == 2);
  CHECK(first->GetJob(id).ok());

  // Once the first is closed, the store opens again.
  first.reset();
  std::unique_ptr<Store> reopened = OpenStore(options);
  CHECK(LiveJobs(*reopened).size() == 2);
}

TEST_CASE("store: SQLite result codes map to the documented status codes") {
  struct Case {
    int rc;
    StatusCode code;
  };
  const Case cases[] = {
      {SQLITE_FULL, StatusCode::kResourceExhausted},
      {SQLITE_BUSY, StatusCode::kUnavailable},
      {SQLITE_LOCKED, StatusCode::kUnavailable},
      {SQLITE_IOERR, StatusCode::kUnavailable},
      {SQLITE_IOERR_FSYNC, StatusCode::kUnavailable},  // extended codes map by their base.
      {SQLITE_CANTOPEN, StatusCode::kUnavailable},
      {SQLITE_READONLY, StatusCode::kUnavailable},
      {SQLITE_CORRUPT, StatusCode::kFailedPrecondition},
      {SQLITE_NOTADB, StatusCode::kFailedPrecondition},
      {SQLITE_CONSTRAINT_UNIQUE, StatusCode::kInternal},
      {SQLITE_MISUSE, StatusCode::kInternal},
  };
  for (const Case& c : cases) {
    CAPTURE(c.rc);
    Status status = SqliteStatus(c.rc, "detail", "context");
    CHECK(status.code() == c.code);
    CHECK(Contains(status.message(), "context: detail"));
  }
  CHECK(SqliteStatus(SQLITE_OK, "x", "y").ok());
  CHECK(SqliteStatus(SQLITE_DONE, "x", "y").ok());
}

}  // namespace
}  // namespace tessera::store::testing
