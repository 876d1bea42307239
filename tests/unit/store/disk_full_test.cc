// A store that runs out of room (StoreOptions.max_size_mib): failed writes report
// RESOURCE_EXHAUSTED, change nothing, and never damage what was acknowledged.
#include <doctest/doctest.h>

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "store/store.h"
#include "store_test_util.h"

namespace tessera::store::testing {
namespace {

v1::Job BigJob(int i) {
  return MakeJob("q", v1::PENDING, "big-" + std::to_string(i),
                 {{"blob", std::string(64 * 1024, static_cast<char>('a' + i % 26))}});
}

// What the store holds must be exactly the acknowledged jobs, each with its one event, and the
// event numbers must be 1..n without gaps.
void CheckHoldsExactly(Store& store, const std::set<uint64_t>& acked) {
  std::vector<v1::Job> live = LiveJobs(store);
  std::set<uint64_t> live_ids;
  for (const v1::Job& job : live) live_ids.insert(job.id());
  CHECK(live.size() == acked.size());
  CHECK(live_ids == acked);
  std::vector<v1::Event> events = AllEvents(store);
  CHECK(events.size() == acked.size());
  std::set<uint64_t> event_jobs;
  for (size_t i = 0; i < events.size(); ++i) {
    CHECK(events[i].seq() == i + 1);
    event_jobs.insert(events[i].job_id());
  }
  CHECK(event_jobs == acked);
  CHECK(store.LastEventSeq() == acked.size());
  CHECK(QueryInt(store.path(), "SELECT COUNT(*) FROM jobs") == static_cast<int64_t>(acked.size()));
  CHECK(QueryInt(store.path(), "SELECT COUNT(*) FROM events") ==
        static_cast<int64_t>(acked.size()));
}

TEST_CASE("store: a full store refuses writes cleanly and keeps what it acknowledged") {
  TempDir dir;
  StoreOptions options = OptionsIn(dir, "store.db", /*durable=*/true);
  options.max_size_mib = 1;
  std::set<uint64_t> acked;
  std::vector<Status> failures;
  {
    std::unique_ptr<Store> store = OpenStore(options);

    // One at a time until the first refusal.
    for (int i = 0; i < 100 && failures.empty(); ++i) {
      uint64_t id = 0;
      Status status = store->WriteAndWait(InsertJobOp(BigJob(i), &id, /*with_event=*/true));
      if (status.ok()) {
        acked.insert(id);
      } else {
        failures.push_back(status);
      }
    }
    REQUIRE(failures.size() == 1);
    CHECK_MESSAGE(failures[0].code() == StatusCode::kResourceExhausted, failures[0].ToString());
    // 1 MiB holds more than a few 64 KiB jobs, and fewer than 16.
    CHECK(acked.size() >= 5);
    CHECK(acked.size() < 16);
    CheckHoldsExactly(*store, acked);

    // A burst that shares commits: every write either fully lands or reports the limit.
    std::mutex mu;
    std::vector<uint64_t> burst_ids(20, 0);
    int burst_ok = 0;
    for (int i = 0; i < 20; ++i) {
      // Mix small and big jobs so that some may still fit.
      v1::Job job =
          i % 2 ? BigJob(100 + i) : MakeJob("q", v1::PENDING, "small-" + std::to_string(i));
      store->Write(InsertJobOp(job, &burst_ids[i], true), [&, i](const Status& status) {
        std::lock_guard<std::mutex> lock(mu);
        if (status.ok()) {
          acked.insert(burst_ids[i]);
          ++burst_ok;
        } else {
          failures.push_back(status);
        }
      });
    }
    store->Flush();
    for (const Status& failure : failures) {
      CHECK_MESSAGE(failure.code() == StatusCode::kResourceExhausted, failure.ToString());
    }
    CHECK(failures.size() > 1);  // the big ones cannot fit.
    INFO("acknowledged ", acked.size(), " jobs, ", burst_ok, " of them in the burst");
    CheckHoldsExactly(*store, acked);

    // A small write afterwards may fit or not, but is all or nothing; reads keep working.
    uint64_t small_id = 0;
    Status small =
        store->WriteAndWait(InsertJobOp(MakeJob("q", v1::RUNNING, "small"), &small_id, true));
    if (small.ok()) {
      acked.insert(small_id);
    } else {
      CHECK_MESSAGE(small.code() == StatusCode::kResourceExhausted, small.ToString());
    }
    CheckHoldsExactly(*store, acked);
    CHECK(store->GetJob(*acked.begin()).ok());
  }

  // Reopened (with and without the limit) it holds exactly the acknowledged writes, and the
  // file is sound.
  {
    std::unique_ptr<Store> store = OpenStore(options);
    CheckHoldsExactly(*store, acked);
  }
  CHECK(QueryText(options.path, "PRAGMA integrity_check") == "ok");
  options.max_size_mib = 0;
  std::unique_ptr<Store> store = OpenStore(options);
  CheckHoldsExactly(*store, acked);
  // Without the limit, big writes fit again and numbering continues without a gap.
  const uint64_t id = InsertJob(*store, BigJob(1000), true);
  CHECK(id > *acked.rbegin());
  CHECK(store->LastEventSeq() == acked.size() + 1);
}

}  // namespace
}  // namespace tessera::store::testing
