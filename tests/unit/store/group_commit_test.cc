// Group commit: concurrent writers share commits, writes apply in FIFO order (the engine's
// transitions ahead of waiting requests), Flush waits for them, and a failing write in a batch
// leaves no trace while its neighbours commit.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "store/store.h"
#include "store_test_util.h"

namespace tessera::store::testing {
namespace {

// A write that signals when it starts running and then blocks until released, so that tests can
// line up the next batch deterministically behind it.
class Gate {
 public:
  WriteFn Op() {
    return [this](WriteTransaction&) {
      started_.set_value();
      released_.wait();
      return Status::Ok();
    };
  }
  void WaitStarted() { started_future_.wait(); }
  void Release() { release_.set_value(); }

 private:
  std::promise<void> started_;
  std::future<void> started_future_ = started_.get_future();
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
};

TEST_CASE("store: concurrent writers all complete and share commits") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir, "store.db", /*durable=*/true));
  constexpr int kThreads = 8;
  constexpr int kWritesPerThread = 15;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWritesPerThread; ++i) {
        v1::Job job = MakeJob("q", v1::PENDING, "t" + std::to_string(t) + "-" + std::to_string(i));
        WriteFn insert = InsertJobOp(job, nullptr, /*with_event=*/true);
        Status status = store->WriteAndWait([&](WriteTransaction& txn) {
          // Slow enough that the other threads' writes queue up behind this one.
          std::this_thread::sleep_for(std::chrono::microseconds(500));
          return insert(txn);
        });
        if (!status.ok()) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  constexpr int kTotal = kThreads * kWritesPerThread;
  CHECK(failures.load() == 0);
  const GroupCommitStats stats = store->write_stats();
  CHECK(stats.committed_writes == kTotal);
  CHECK(stats.failed_writes == 0);
  CHECK(stats.commits >= 1);
  CHECK_MESSAGE(stats.commits < stats.committed_writes,
                "commits=" << stats.commits << " writes=" << stats.committed_writes);
  CHECK(store->commit_latency().count() == stats.commits);  // one sample per batch.
  CHECK(AllJobs(*store).size() == kTotal);
  CHECK(store->LastEventSeq() == kTotal);
  CHECK(QueryInt(store->path(), "SELECT COUNT(DISTINCT idempotency_key) FROM jobs") == kTotal);
}

TEST_CASE("store: writes are applied and acknowledged in FIFO order") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  constexpr int kWrites = 300;
  std::vector<int> applied;  // writer thread only until Flush returns.
  std::vector<int> acknowledged;
  std::vector<uint64_t> ids(kWrites, 0);
  for (int i = 0; i < kWrites; ++i) {
    WriteFn insert = InsertJobOp(MakeJob("q", v1::PENDING, std::to_string(i)), &ids[i], true);
    store->Write(
        [&applied, i, insert](WriteTransaction& txn) {
          applied.push_back(i);
          return insert(txn);
        },
        [&acknowledged, i](const Status& status) {
          if (status.ok()) acknowledged.push_back(i);
        });
  }
  store->Flush();
  REQUIRE(applied.size() == kWrites);
  REQUIRE(acknowledged.size() == kWrites);
  for (int i = 0; i < kWrites; ++i) {
    CHECK(applied[i] == i);
    CHECK(acknowledged[i] == i);
    if (i > 0) CHECK(ids[i] > ids[i - 1]);
  }
  // The stored order agrees: job ids and event sequence numbers follow submission order.
  std::vector<v1::Job> jobs = AllJobs(*store);
  std::vector<v1::Event> events = AllEvents(*store);
  REQUIRE(jobs.size() == kWrites);
  REQUIRE(events.size() == kWrites);
  for (int i = 0; i < kWrites; ++i) {
    CHECK(jobs[i].idempotency_key() == std::to_string(i));
    CHECK(events[i].job_id() == ids[i]);
  }
}

TEST_CASE("store: a transition goes ahead of the requests waiting before it") {
  TempDir dir;
  StoreOptions options = OptionsIn(dir);
  options.max_batch = 8;  // so that the requests need several batches.
  std::unique_ptr<Store> store = OpenStore(options);
  const uint64_t job = InsertJob(*store, MakeJob("q"));
  Gate gate;
  store->Write(gate.Op(), nullptr);
  gate.WaitStarted();

  // While the writer is held: 40 requests, then one transition (a job's status change).
  std::mutex mu;
  std::vector<std::string> acknowledged;
  auto record = [&](std::string name) {
    return [&, name](const Status& status) {
      std::lock_guard<std::mutex> lock(mu);
      acknowledged.push_back(status.ok() ? name : name + " failed");
    };
  };
  constexpr int kRequests = 40;
  for (int i = 0; i < kRequests; ++i) {
    store->Write(InsertJobOp(MakeJob("q", v1::PENDING, std::to_string(i))),
                 record("request " + std::to_string(i)));
  }
  v1::JobStatus running;
  running.set_state(v1::RUNNING);
  store->Write([&](WriteTransaction& txn) { return txn.UpdateJobStatus(job, running, 2); },
               record("transition"), WriteKind::kTransition);
  CHECK_FALSE(store->Idle());
  gate.Release();
  store->Flush();  // waits for both kinds.

  CHECK(store->Idle());
  REQUIRE(acknowledged.size() == kRequests + 1);
  // Without the two kinds it would have waited for five batches of requests.
  CHECK(acknowledged.front() == "transition");
  for (int i = 0; i < kRequests; ++i) {
    CHECK(acknowledged[static_cast<size_t>(i) + 1] == "request " + std::to_string(i));
  }
  StatusOr<v1::Job> stored = store->GetJob(job);
  REQUIRE(stored.ok());
  CHECK(stored->status().state() == v1::RUNNING);
  CHECK(AllJobs(*store).size() == kRequests + 1);
}

TEST_CASE("store: Flush waits for every write enqueued before it") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  CHECK(store->Idle());
  Gate gate;
  std::atomic<int> done{0};
  store->Write(gate.Op(), [&](const Status&) { done.fetch_add(1); });
  gate.WaitStarted();
  constexpr int kWrites = 20;
  for (int i = 0; i < kWrites; ++i) {
    store->Write(
        [](WriteTransaction& txn) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          return InsertJobOp(MakeJob("q"))(txn);
        },
        [&](const Status& status) {
          if (status.ok()) done.fetch_add(1);
        });
  }
  CHECK_FALSE(store->Idle());
  CHECK(done.load() == 0);

  std::atomic<bool> flushed{false};
  std::thread flusher([&] {
    store->Flush();
    flushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(flushed.load());  // still held up by the gate.
  gate.Release();
  flusher.join();
  // Everything, done-callbacks included, finished before Flush returned.
  CHECK(done.load() == kWrites + 1);
  CHECK(store->Idle());
  CHECK(AllJobs(*store).size() == kWrites);

  // Flush with nothing queued returns at once.
  const auto start = std::chrono::steady_clock::now();
  store->Flush();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
}

TEST_CASE("store: a failing write leaves no trace and does not fail its batch") {
  TempDir dir;
  std::unique_ptr<Store> store = OpenStore(OptionsIn(dir));
  Gate gate;
  Status gate_status = InternalError("not called");
  store->Write(gate.Op(), [&](const Status& s) { gate_status = s; });
  gate.WaitStarted();

  // These three queue up behind the gate and run as one batch.
  uint64_t id_a = 0, id_b = 0, id_c = 0;
  Status status_a = InternalError("not called"), status_b = status_a, status_c = status_a;
  store->Write(InsertJobOp(MakeJob("q", v1::PENDING, "a"), &id_a, true),
               [&](const Status& s) { status_a = s; });
  const Status failure = FailedPreconditionError("queue 'q' is closed");
  store->Write(
      [&](WriteTransaction& txn) -> Status {
        Status inserted = InsertJobOp(MakeJob("q", v1::PENDING, "b"), &id_b, true)(txn);
        if (!inserted.ok()) return inserted;
        TESSERA_RETURN_IF_ERROR(txn.PutQueue(v1::QueueSpec()));
        TESSERA_RETURN_IF_ERROR(txn.PutNodeFlags("node-b", true, true));
        return failure;
      },
      [&](const Status& s) { status_b = s; });
  store->Write(InsertJobOp(MakeJob("q", v1::PENDING, "c"), &id_c, true),
               [&](const Status& s) { status_c = s; });
  gate.Release();
  store->Flush();

  CHECK(gate_status.ok());
  CHECK(status_a.ok());
  CHECK(status_b == failure);  // its own error, code and message.
  CHECK(status_c.ok());
  const GroupCommitStats stats = store->write_stats();
  CHECK(stats.commits == 2);  // the gate's batch, then a, b and c together.
  CHECK(stats.committed_writes == 3);
  CHECK(stats.failed_writes == 1);

  std::vector<v1::Job> jobs = AllJobs(*store);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].idempotency_key() == "a");
  CHECK(jobs[1].idempotency_key() == "c");
  CHECK(jobs[0].id() == id_a);
  CHECK(jobs[1].id() == id_c);
  std::optional<uint64_t> b_found = 1;
  REQUIRE(store
              ->WriteAndWait([&](WriteTransaction& txn) -> Status {
                TESSERA_ASSIGN_OR_RETURN(b_found, txn.FindJobByIdempotencyKey("b"));
                return Status::Ok();
              })
              .ok());
  CHECK_FALSE(b_found.has_value());
  std::vector<v1::QueueSpec> queues;
  REQUIRE(store->LoadQueues(&queues).ok());
  CHECK(queues.empty());
  std::vector<NodeFlags> flags;
  REQUIRE(store->LoadNodeFlags(&flags).ok());
  CHECK(flags.empty());

  // b's event was rolled back and its sequence number reused: c's event is 2, right after a's.
  std::vector<v1::Event> events = AllEvents(*store);
  REQUIRE(events.size() == 2);
  CHECK(events[0].seq() == 1);
  CHECK(events[0].job_id() == id_a);
  CHECK(events[1].seq() == 2);
  CHECK(events[1].job_id() == id_c);
  CHECK(store->LastEventSeq() == 2);
}

TEST_CASE("store: max_batch bounds the writes per commit") {
  TempDir dir;
  StoreOptions options = OptionsIn(dir);
  options.max_batch = 4;
  std::unique_ptr<Store> store = OpenStore(options);
  Gate gate;
  store->Write(gate.Op(), nullptr);
  gate.WaitStarted();
  for (int i = 0; i < 10; ++i) store->Write(InsertJobOp(MakeJob("q")), nullptr);
  gate.Release();
  store->Flush();
  const GroupCommitStats stats = store->write_stats();
  CHECK(stats.committed_writes == 11);
  CHECK(stats.commits == 1 + 3);  // the gate, then 4 + 4 + 2.
  CHECK(AllJobs(*store).size() == 10);
}

}  // namespace
}  // namespace tessera::store::testing
