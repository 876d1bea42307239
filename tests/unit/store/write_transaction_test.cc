// WriteTransaction: the job, queue and node-flag operations write operations are built from.
#include <doctest/doctest.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"
#include "store/write_transaction.h"
#include "store_test_util.h"

namespace tessera::store::testing {
namespace {

// Runs `fn` as one write and returns its outcome.
template <typename Fn>
Status Run(Store& store, Fn fn) {
  return store.WriteAndWait(WriteFn(std::move(fn)));
}

TEST_CASE("store: InsertJob assigns increasing ids and ReadJob returns the record") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  std::vector<uint64_t> ids;
  REQUIRE(Run(*store, [&](WriteTransaction& txn) -> Status {
            for (int i = 0; i < 5; ++i) {
              StatusOr<uint64_t> id = txn.InsertJob(MakeJob("q" + std::to_string(i)), i, 7);
              if (!id.ok()) return id.status();
              ids.push_back(*id);
            }
            // Visible to later statements of the same transaction.
            StatusOr<v1::Job> job = txn.ReadJob(ids[3]);
            if (!job.ok()) return job.status();
            if (job->spec().queue() != "q3" || job->id() != ids[3]) {
              return InternalError("ReadJob returned the wrong job");
            }
            return Status::Ok();
          }).ok());
  REQUIRE(ids.size() == 5);
  CHECK(ids[0] >= 1);
  for (size_t i = 1; i < ids.size(); ++i) CHECK(ids[i] > ids[i - 1]);
  // Ids keep increasing across writes.
  const uint64_t later = InsertJob(*store, MakeJob("q"));
  CHECK(later > ids.back());

  for (size_t i = 0; i < ids.size(); ++i) {
    StatusOr<v1::Job> job = store->GetJob(ids[i]);
    REQUIRE(job.ok());
    CHECK(job->id() == ids[i]);
    CHECK(job->spec().queue() == "q" + std::to_string(i));
  }
  CHECK(QueryInt(store->path(), "SELECT priority FROM jobs WHERE id = " + std::to_string(ids[4])) ==
        4);

  Status missing = Run(*store, [](WriteTransaction& txn) { return txn.ReadJob(999).status(); });
  CHECK(missing.code() == StatusCode::kNotFound);
  CHECK(store->GetJob(999).status().code() == StatusCode::kNotFound);
}

TEST_CASE("store: idempotency keys are found and unique") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  const uint64_t first = InsertJob(*store, MakeJob("q", v1::PENDING, "key-1"));
  const uint64_t second = InsertJob(*store, MakeJob("q", v1::PENDING, "key-2"));
  // Jobs without a key do not collide with each other.
  InsertJob(*store, MakeJob("q"));
  InsertJob(*store, MakeJob("q"));

  std::optional<uint64_t> found_1, found_2, found_unknown = 12345;
  REQUIRE(Run(*store, [&](WriteTransaction& txn) -> Status {
            TESSERA_ASSIGN_OR_RETURN(found_1, txn.FindJobByIdempotencyKey("key-1"));
            TESSERA_ASSIGN_OR_RETURN(found_2, txn.FindJobByIdempotencyKey("key-2"));
            TESSERA_ASSIGN_OR_RETURN(found_unknown, txn.FindJobByIdempotencyKey("key-3"));
            return Status::Ok();
          }).ok());
  CHECK(found_1 == std::optional<uint64_t>(first));
  CHECK(found_2 == std::optional<uint64_t>(second));
  CHECK_FALSE(found_unknown.has_value());

  // A second job with a used key is rejected by the unique index and leaves nothing behind.
  uint64_t duplicate_id = 0;
  Status duplicate = store->WriteAndWait(
      InsertJobOp(MakeJob("other", v1::PENDING, "key-1"), &duplicate_id, /*with_event=*/false));
  CHECK_FALSE(duplicate.ok());
  CHECK(duplicate_id == 0);
  CHECK(AllJobs(*store).size() == 4);
  StatusOr<v1::Job> original = store->GetJob(first);
  REQUIRE(original.ok());
  CHECK(original->spec().queue() == "q");
  CHECK(original->idempotency_key() == "key-1");
}

TEST_CASE("store: UpdateJobStatus replaces the status and needs an existing job") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  const uint64_t id = InsertJob(*store, MakeJob("q"));
  v1::JobStatus running;
  running.set_state(v1::RUNNING);
  running.set_attempt(2);
  running.add_placements()->set_node("node-7");
  REQUIRE(Run(*store, [&](WriteTransaction& txn) {
            return txn.UpdateJobStatus(id, running, 9'000'000);
          }).ok());
  StatusOr<v1::Job> job = store->GetJob(id);
  REQUIRE(job.ok());
  CHECK(job->status().state() == v1::RUNNING);
  CHECK(job->status().attempt() == 2);
  REQUIRE(job->status().placements_size() == 1);
  CHECK(job->status().placements(0).node() == "node-7");
  CHECK(job->spec().queue() == "q");  // the spec is untouched.
  CHECK(QueryInt(store->path(), "SELECT state FROM jobs WHERE id = " + std::to_string(id)) ==
        v1::RUNNING);
  CHECK(QueryInt(store->path(),
                 "SELECT update_time_us FROM jobs WHERE id = " + std::to_string(id)) == 9'000'000);

  Status missing =
      Run(*store, [&](WriteTransaction& txn) { return txn.UpdateJobStatus(id + 100, running, 1); });
  CHECK(missing.code() == StatusCode::kNotFound);
  // A missing id right after a successful update in the same write is still NOT_FOUND.
  Status after_update = Run(*store, [&](WriteTransaction& txn) -> Status {
    TESSERA_RETURN_IF_ERROR(txn.UpdateJobStatus(id, running, 2));
    return txn.UpdateJobStatus(id + 100, running, 3);
  });
  CHECK(after_update.code() == StatusCode::kNotFound);
}

TEST_CASE("store: deferred statuses: the last one of each job reaches its row") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  const uint64_t a = InsertJob(*store, MakeJob("q"));
  const uint64_t b = InsertJob(*store, MakeJob("q"));
  auto status_bytes = [](v1::JobState state, int32_t attempt) {
    v1::JobStatus status;
    status.set_state(state);
    status.set_attempt(attempt);
    return status.SerializeAsString();
  };
  // Bytes the write captures: deferred statuses are bound, not copied, until the commit.
  const std::vector<std::string> bytes = {status_bytes(v1::ADMITTED, 1),
                                          status_bytes(v1::STARTING, 1),
                                          status_bytes(v1::RUNNING, 1), status_bytes(v1::LOST, 2)};
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Status> outcome;
  store->Write(
      [&](WriteTransaction& txn) -> Status {
        txn.DeferJobStatus(b, v1::ADMITTED, bytes[0], 1);
        txn.DeferJobStatus(a, v1::STARTING, bytes[1], 2);
        txn.DeferJobStatus(b, v1::RUNNING, bytes[2], 3);
        txn.DeferJobStatus(a, v1::LOST, bytes[3], 4);
        return Status::Ok();
      },
      [&](const Status& status) {
        std::lock_guard<std::mutex> lock(mu);
        outcome = status;
        cv.notify_one();
      },
      WriteKind::kTransition);
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return outcome.has_value(); });
  }
  REQUIRE(outcome->ok());
  StatusOr<v1::Job> job_a = store->GetJob(a);
  StatusOr<v1::Job> job_b = store->GetJob(b);
  REQUIRE(job_a.ok());
  REQUIRE(job_b.ok());
  CHECK(job_a->status().state() == v1::LOST);
  CHECK(job_a->status().attempt() == 2);
  CHECK(job_b->status().state() == v1::RUNNING);
  CHECK(QueryInt(store->path(), "SELECT state FROM jobs WHERE id = " + std::to_string(a)) ==
        v1::LOST);
  CHECK(QueryInt(store->path(),
                 "SELECT update_time_us FROM jobs WHERE id = " + std::to_string(b)) == 3);
}

TEST_CASE("store: queue existence, children and unfinished job counts") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  REQUIRE(Run(*store, [](WriteTransaction& txn) -> Status {
            for (const char* name : {"a", "a/b", "ab", "a0", "a-c", "lonely"}) {
              v1::QueueSpec spec;
              spec.set_name(name);
              TESSERA_RETURN_IF_ERROR(txn.PutQueue(spec));
            }
            return Status::Ok();
          }).ok());
  for (v1::JobState state :
       {v1::PENDING, v1::RUNNING, v1::LOST, v1::SUCCEEDED, v1::FAILED, v1::CANCELLED}) {
    InsertJob(*store, MakeJob("a", state));
  }
  InsertJob(*store, MakeJob("a/b", v1::PENDING));  // a child's job is not "a"'s.
  InsertJob(*store, MakeJob("ab", v1::RUNNING));

  struct Answers {
    bool a_exists = false, missing_exists = true, a_b_exists = false;
    bool a_children = false, a_b_children = true, ab_children = true, a0_children = true;
    bool lonely_children = true, missing_children = true;
    int64_t a_count = -1, a_b_count = -1, ab_count = -1, none_count = -1;
  } got;
  REQUIRE(Run(*store, [&](WriteTransaction& txn) -> Status {
            TESSERA_ASSIGN_OR_RETURN(got.a_exists, txn.QueueExists("a"));
            TESSERA_ASSIGN_OR_RETURN(got.missing_exists, txn.QueueExists("a/c"));
            TESSERA_ASSIGN_OR_RETURN(got.a_b_exists, txn.QueueExists("a/b"));
            TESSERA_ASSIGN_OR_RETURN(got.a_children, txn.QueueHasChildren("a"));
            TESSERA_ASSIGN_OR_RETURN(got.a_b_children, txn.QueueHasChildren("a/b"));
            TESSERA_ASSIGN_OR_RETURN(got.ab_children, txn.QueueHasChildren("ab"));
            TESSERA_ASSIGN_OR_RETURN(got.a0_children, txn.QueueHasChildren("a0"));
            TESSERA_ASSIGN_OR_RETURN(got.lonely_children, txn.QueueHasChildren("lonely"));
            TESSERA_ASSIGN_OR_RETURN(got.missing_children, txn.QueueHasChildren("nope"));
            TESSERA_ASSIGN_OR_RETURN(got.a_count, txn.CountUnfinishedJobs("a"));
            TESSERA_ASSIGN_OR_RETURN(got.a_b_count, txn.CountUnfinishedJobs("a/b"));
            TESSERA_ASSIGN_OR_RETURN(got.ab_count, txn.CountUnfinishedJobs("ab"));
            TESSERA_ASSIGN_OR_RETURN(got.none_count, txn.CountUnfinishedJobs("lonely"));
            return Status::Ok();
          }).ok());
  CHECK(got.a_exists);
  CHECK_FALSE(got.missing_exists);
  CHECK(got.a_b_exists);
  CHECK(got.a_children);  // "a/b" is a child of "a"...
  CHECK_FALSE(got.a_b_children);
  CHECK_FALSE(got.ab_children);  // ...but "ab", "a0" and "a-c" are not, nor have children.
  CHECK_FALSE(got.a0_children);
  CHECK_FALSE(got.lonely_children);
  CHECK_FALSE(got.missing_children);
  CHECK(got.a_count == 3);  // PENDING, RUNNING, LOST; not the three terminal ones.
  // GetQueueShape answers both questions in one statement, the same way.
  REQUIRE(Run(*store, [&](WriteTransaction& txn) -> Status {
            for (const char* name : {"a", "a/b", "ab", "a0", "lonely", "nope", "a/c"}) {
              TESSERA_ASSIGN_OR_RETURN(WriteTransaction::QueueShape shape, txn.GetQueueShape(name));
              TESSERA_ASSIGN_OR_RETURN(bool exists, txn.QueueExists(name));
              TESSERA_ASSIGN_OR_RETURN(bool children, txn.QueueHasChildren(name));
              if (shape.exists != exists || shape.has_children != children) {
                return InternalError(std::string("GetQueueShape disagrees on ") + name);
              }
            }
            return Status::Ok();
          }).ok());
  CHECK(got.a_b_count == 1);
  CHECK(got.ab_count == 1);
  CHECK(got.none_count == 0);

  // Removing the only child leaves "a" childless ("ab", "a0" and "a-c" do not count).
  REQUIRE(Run(*store, [](WriteTransaction& txn) { return txn.DeleteQueue("a/b"); }).ok());
  bool a_children = true;
  REQUIRE(Run(*store, [&](WriteTransaction& txn) -> Status {
            TESSERA_ASSIGN_OR_RETURN(a_children, txn.QueueHasChildren("a"));
            return Status::Ok();
          }).ok());
  CHECK_FALSE(a_children);
}

TEST_CASE("store: PutQueue upserts and DeleteQueue needs an existing queue") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  auto put = [&](const std::string& name, double weight) {
    return Run(*store, [=](WriteTransaction& txn) {
      v1::QueueSpec spec;
      spec.set_name(name);
      spec.set_weight(weight);
      return txn.PutQueue(spec);
    });
  };
  REQUIRE(put("research", 1.0).ok());
  REQUIRE(put("ops", 2.0).ok());
  REQUIRE(put("research", 5.0).ok());  // replaces, does not add.

  std::vector<v1::QueueSpec> queues;
  REQUIRE(store->LoadQueues(&queues).ok());
  REQUIRE(queues.size() == 2);
  CHECK(queues[0].name() == "ops");
  CHECK(queues[0].weight() == 2.0);
  CHECK(queues[1].name() == "research");
  CHECK(queues[1].weight() == 5.0);

  Status missing = Run(*store, [](WriteTransaction& txn) { return txn.DeleteQueue("nope"); });
  CHECK(missing.code() == StatusCode::kNotFound);
  CHECK(missing.message().find("nope") != std::string::npos);
  REQUIRE(Run(*store, [](WriteTransaction& txn) { return txn.DeleteQueue("ops"); }).ok());
  Status again = Run(*store, [](WriteTransaction& txn) { return txn.DeleteQueue("ops"); });
  CHECK(again.code() == StatusCode::kNotFound);

  queues.clear();
  REQUIRE(store->LoadQueues(&queues).ok());
  REQUIRE(queues.size() == 1);
  CHECK(queues[0].name() == "research");
}

TEST_CASE("store: PutNodeFlags upserts") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  auto put = [&](const std::string& name, bool cordoned, bool draining) {
    return Run(*store,
               [=](WriteTransaction& txn) { return txn.PutNodeFlags(name, cordoned, draining); });
  };
  REQUIRE(put("n1", true, true).ok());
  REQUIRE(put("n2", false, true).ok());
  REQUIRE(put("n1", false, false).ok());

  std::vector<NodeFlags> flags;
  REQUIRE(store->LoadNodeFlags(&flags).ok());
  REQUIRE(flags.size() == 2);
  std::sort(flags.begin(), flags.end(),
            [](const NodeFlags& a, const NodeFlags& b) { return a.name < b.name; });
  CHECK(flags[0].name == "n1");
  CHECK_FALSE(flags[0].cordoned);
  CHECK_FALSE(flags[0].draining);
  CHECK(flags[1].name == "n2");
  CHECK_FALSE(flags[1].cordoned);
  CHECK(flags[1].draining);
}

}  // namespace
}  // namespace tessera::store::testing
