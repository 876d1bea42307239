// The store under injected I/O faults (support/faulty_vfs.h), through the public API only, the
// way SQLite's own I/O-error tests sweep: a workload of submits, cancels, engine transitions and
// a restart runs with the Nth read, write or sync failing (that one only, or it and every later
// one; a failing write may report the disk full), for N spread over the whole workload. After
// each run, with the faults gone, the test checks that
//   - every call returned within its deadline (support/deadline.h aborts the run otherwise);
//   - the store reopens (Open runs SQLite's quick check) and passes the full integrity check;
//   - every acknowledged submit is there with its spec, every acknowledged cancel holds;
//   - nothing is half-applied: every job has its submit event, the event log has no gap, and
//     each job's last event names the state stored for it.
// TESSERA_STORE_FAULT_POINTS sets how many N each kind of fault gets (default 12; "all": every N
// from 1 to the count of that operation in a fault-free run).
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "integration/fixture.h"
#include "support/deadline.h"
#include "support/faulty_vfs.h"

namespace tessera {
namespace {

using namespace testing;
using std::chrono::milliseconds;

constexpr milliseconds kCallDeadline{10000};
constexpr int kDefaultPoints = 12;

// What the workload was told succeeded.
struct Ledger {
  std::map<uint64_t, std::string> submitted;  // id -> job name.
  std::set<uint64_t> cancelled;               // pending when cancelled.
  std::set<uint64_t> stopping;                // running when cancelled.
  int calls = 0;
  int refused = 0;
};

Options SweepOptions(const std::string& path, std::shared_ptr<ManualClock> clock) {
  Options options;
  options.store.path = path;
  options.store.durable = true;  // so that commits sync, and syncs can fail.
  options.clock = std::move(clock);
  options.simulated_cluster = OneNode(4);
  options.engine.store_retry = milliseconds(100);
  return options;
}

class Workload {
 public:
  Workload(const Options& options, ManualClock& clock, Ledger& ledger)
      : options_(options), clock_(clock), ledger_(ledger) {}

  void Run() {
    if (!Start()) return;
    CreateQueue();
    const auto short_a = Submit("short-a", 1, 1000);
    const auto short_b = Submit("short-b", 1, 1000);
    const auto long_c = Submit("long-c", 2, 0);
    const auto wait_d = Submit("wait-d", 4, 0);
    const auto wait_e = Submit("wait-e", 4, 0);
    Settle(0);
    Settle(1'000'000);  // the short ones finish.
    Cancel(wait_d, false);
    Cancel(long_c, true);
    Settle(200'000);
    Stop();
    if (!Start()) return;  // a restart: reload and reconcile.
    CreateQueue();         // again, in case the first was refused.
    Submit("after-f", 1, 500);
    Submit("after-g", 4, 0);
    Cancel(wait_e, false);
    Settle(1'000'000);
    (void)short_a;
    (void)short_b;
    Stop();
  }

 private:
  bool Start() {
    auto opened = Within(kCallDeadline, "Open", [&] { return Scheduler::Open(options_); });
    Count(opened.status());
    if (opened.ok()) s_ = std::move(*opened);
    return opened.ok();
  }
  void Stop() {
    Within(kCallDeadline, "closing the scheduler", [&] { s_.reset(); });
  }
  void CreateQueue() {
    Status status =
        Within(kCallDeadline, "CreateQueue", [&] { return s_->CreateQueue(QueueSpec("team")); });
    Count(status.code() == StatusCode::kAlreadyExists ? Status::Ok() : status);
  }
  void Count(const Status& status) {
    ++ledger_.calls;
    if (!status.ok()) ++ledger_.refused;
  }
  std::optional<uint64_t> Submit(const std::string& name, int gpus, int64_t duration_ms) {
    JobSpecBuilder builder("team");
    builder.Name(name).Gpus(gpus);
    if (duration_ms > 0) builder.SimulatedDurationMs(duration_ms);
    auto job = Within(kCallDeadline, "Submit", [&] { return s_->Submit(builder.Build()); });
    Count(job.status());
    if (!job.ok()) return std::nullopt;
    ledger_.submitted[job->id()] = name;
    return job->id();
  }
  void Cancel(std::optional<uint64_t> id, bool running) {
    if (!id) return;
    auto job = Within(kCallDeadline, "Cancel", [&] { return s_->Cancel(*id); });
    Count(job.status());
    if (!job.ok()) return;
    (running && job->status().state() != v1::CANCELLED ? ledger_.stopping : ledger_.cancelled)
        .insert(*id);
  }
  void Settle(int64_t advance_us) {
    clock_.AdvanceUs(advance_us);
    Within(kCallDeadline, "WaitIdle", [&] { s_->WaitIdle(); });
    Count(Within(kCallDeadline, "ListJobs", [&] { return s_->ListJobs({}); }).status());
    Count(Within(kCallDeadline, "WatchEvents", [&] {
            return s_->WatchEvents(0, 100, milliseconds(0));
          }).status());
  }

  const Options& options_;
  ManualClock& clock_;
  Ledger& ledger_;
  std::unique_ptr<Scheduler> s_;
};

// Reopens the store without faults and checks what it holds against the ledger.
void Verify(const Options& options, ManualClock& clock, const Ledger& ledger) {
  auto opened = Scheduler::Open(options);
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  Scheduler* s = opened->get();
  Status check = s->CheckStore(StoreCheck::kFull);
  CHECK_MESSAGE(check.ok(), check.ToString());
  clock.AdvanceUs(1'000'000);
  s->WaitIdle();

  for (const auto& entry : ledger.submitted) {
    // Not a structured binding: clang (the sanitizer builds) cannot capture one in a message.
    const uint64_t id = entry.first;
    const std::string& name = entry.second;
    auto job = s->GetJob(id);
    REQUIRE_MESSAGE(job.ok(), "acknowledged job ", id, ": ", job.status().ToString());
    CHECK(job->spec().name() == name);
  }
  for (uint64_t id : ledger.cancelled) {
    CHECK_MESSAGE(s->GetJob(id)->status().state() == v1::CANCELLED, "job ", id);
  }
  for (uint64_t id : ledger.stopping) {
    const v1::JobStatus status = s->GetJob(id)->status();
    CHECK_MESSAGE((status.state() == v1::CANCELLED || status.cancel_requested()), "job ", id);
  }

  std::vector<v1::Event> events;
  while (true) {
    auto batch = s->WatchEvents(events.empty() ? 0 : events.back().seq(), 1000, milliseconds(0));
    REQUIRE_MESSAGE(batch.ok(), batch.status().ToString());
    if (batch->empty()) break;
    events.insert(events.end(), batch->begin(), batch->end());
  }
  std::map<uint64_t, const v1::Event*> first_event, last_event;
  for (size_t i = 0; i < events.size(); ++i) {
    CHECK(events[i].seq() == i + 1);
    const uint64_t job = events[i].job_id();
    if (job == 0) continue;
    first_event.emplace(job, &events[i]);
    last_event[job] = &events[i];
  }
  v1::ListJobsRequest request;
  request.set_page_size(1000);
  auto jobs = s->ListJobs(request);
  REQUIRE_MESSAGE(jobs.ok(), jobs.status().ToString());
  for (const v1::Job& job : jobs->jobs()) {
    CAPTURE(job.id());
    REQUIRE(first_event.count(job.id()) == 1);
    CHECK(first_event[job.id()]->to_state() == v1::PENDING);
    CHECK(first_event[job.id()]->reason().rfind("submitted", 0) == 0);
    CHECK(last_event[job.id()]->to_state() == job.status().state());
  }
}

int PointsPerKind() {
  const char* env = std::getenv("TESSERA_STORE_FAULT_POINTS");
  if (env == nullptr) return kDefaultPoints;
  if (std::string(env) == "all") return 0;
  return std::max(1, std::atoi(env));
}

TEST_CASE(
    "store faults: every call answers and nothing acknowledged is lost or half-applied, "
    "whichever read, write or sync fails") {
  struct Kind {
    const char* name;
    FaultyVfs::Op op;
    bool persistent;
    FaultyVfs::Failure failure = FaultyVfs::Failure::kIoError;
  };
  const Kind kinds[] = {
      {"read", FaultyVfs::Op::kRead, false},
      {"reads from then on", FaultyVfs::Op::kRead, true},
      {"write", FaultyVfs::Op::kWrite, false},
      {"writes from then on", FaultyVfs::Op::kWrite, true},
      {"write, disk full", FaultyVfs::Op::kWrite, false, FaultyVfs::Failure::kDiskFull},
      {"disk full from then on", FaultyVfs::Op::kWrite, true, FaultyVfs::Failure::kDiskFull},
      {"sync", FaultyVfs::Op::kSync, false},
      {"syncs from then on", FaultyVfs::Op::kSync, true},
  };

  // A fault-free run counts the operations the workload makes.
  int64_t totals[3] = {0, 0, 0};
  {
    ScratchDir dir;
    auto clock = std::make_shared<ManualClock>();
    const Options options = SweepOptions(dir.File("state.db"), clock);
    FaultyVfs vfs;
    Ledger ledger;
    Workload(options, *clock, ledger).Run();
    for (FaultyVfs::Op op : {FaultyVfs::Op::kRead, FaultyVfs::Op::kWrite, FaultyVfs::Op::kSync}) {
      totals[static_cast<int>(op)] = vfs.count(op);
    }
    REQUIRE(ledger.refused == 0);
    REQUIRE(ledger.submitted.size() == 7);
    Verify(options, *clock, ledger);
  }

  const int points = PointsPerKind();
  int runs = 0;
  int64_t faults = 0;
  for (const Kind& kind : kinds) {
    const int64_t total = totals[static_cast<int>(kind.op)];
    REQUIRE(total > 0);
    std::vector<int64_t> nths;
    if (points == 0 || points >= total) {
      for (int64_t n = 1; n <= total; ++n) nths.push_back(n);
    } else {
      for (int i = 0; i < points; ++i)
        nths.push_back(1 + i * (total - 1) / std::max(1, points - 1));
    }
    for (int64_t nth : nths) {
      CAPTURE(kind.name);
      CAPTURE(nth);
      ScratchDir dir;
      auto clock = std::make_shared<ManualClock>();
      const Options options = SweepOptions(dir.File("state.db"), clock);
      FaultyVfs vfs;
      vfs.FailNth(kind.op, nth, kind.persistent, kind.failure);
      Ledger ledger;
      Workload(options, *clock, ledger).Run();
      vfs.Disarm();
      faults += vfs.failed();
      Verify(options, *clock, ledger);
      ++runs;
    }
  }
  MESSAGE("swept ", runs, " fault points (", faults, " operations failed); a fault-free run makes ",
          totals[0], " reads, ", totals[1], " writes, ", totals[2], " syncs");
}

}  // namespace
}  // namespace tessera
