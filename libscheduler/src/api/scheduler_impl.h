// SchedulerImpl: the Scheduler behind the public API. It owns the store, the engine, the
// executor and the decision thread, and turns API calls into strand tasks and store writes.
//
// Threads: API callers (any), the decision thread (runs the Asio strand: every engine call),
// the store writer (GroupCommit). Ordering rule: anything that follows a commit is posted to
// the strand from the writer's done-callback, so the engine sees changes in commit order.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "api/event_watches.h"
#include "api/plugin_capacity_providers.h"
#include "api/retention_sweeper.h"
#include "api/waiting_reasons.h"
#include "backends/backend_set.h"
#include "backends/plugin_backend.h"
#include "elastic/cloud_burst.h"
#include "engine/engine.h"
#include "engine/simulated_executor.h"
#include "store/store.h"
#include "tessera/scheduler.h"

namespace tessera {

// What every call answers once Close has begun.
inline Status ShuttingDown() { return UnavailableError("scheduler is shutting down"); }

// A value handed from one thread to another that waits for it.
template <typename T>
class Waiter {
 public:
  void Set(T value) {
    std::lock_guard<std::mutex> lock(mu_);
    value_.emplace(std::move(value));
    cv_.notify_all();
  }
  T Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return value_.has_value(); });
    return std::move(*value_);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<T> value_;
};

class SchedulerImpl final : public Scheduler, private EngineHost {
 public:
  static StatusOr<std::unique_ptr<Scheduler>> Create(const Options& options);
  ~SchedulerImpl() override;
  void Close() override;

  StatusOr<v1::Job> Submit(const v1::JobSpec& spec, const SubmitOptions& options) override;
  void SubmitAsync(const v1::JobSpec& spec, const SubmitOptions& options,
                   std::function<void(StatusOr<v1::Job>)> done) override;
  StatusOr<v1::Job> Cancel(JobId id) override;
  StatusOr<v1::Job> GetJob(JobId id) override;
  StatusOr<v1::Job> GetJobByIdempotencyKey(const std::string& idempotency_key,
                                           const std::string& idempotency_scope) override;
  StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListJobsRequest& request) override;
  StatusOr<v1::DryRunResult> DryRun(const v1::JobSpec& spec) override;
  StatusOr<std::vector<v1::Event>> WatchEvents(uint64_t after_seq, int max_events,
                                               std::chrono::milliseconds wait) override;
  uint64_t WatchEventsAsync(uint64_t after_seq, int max_events, std::chrono::milliseconds wait,
                            std::function<void(StatusOr<std::vector<v1::Event>>)> done) override;
  void CancelEventWatch(uint64_t id) override;

  Status CreateQueue(const v1::QueueSpec& spec) override;
  Status UpdateQueue(const v1::QueueSpec& spec) override;
  Status DeleteQueue(const std::string& name) override;
  StatusOr<v1::Queue> GetQueue(const std::string& name) override;
  StatusOr<std::vector<v1::Queue>> ListQueues() override;

  StatusOr<std::vector<v1::Node>> ListNodes() override;
  StatusOr<std::vector<v1::Backend>> ListBackends() override;
  Status CordonNode(const std::string& name, bool cordoned) override;
  Status DrainNode(const std::string& name) override;
  Status ReportTelemetry(const v1::GpuTelemetry& reading) override;

  v1::SchedulerStats GetStats() override;
  Status Backup(const std::string& path) override;
  Status CheckStore(StoreCheck level) override;
  void PauseDecisions() override;
  void ResumeDecisions() override;
  void WaitIdle() override;
  std::optional<TimestampUs> NextWakeupUs() override;

 private:
  SchedulerImpl(const Options& options, std::shared_ptr<Clock> clock,
                std::unique_ptr<store::Store> store);

  // Start-up: inventory (from the backends when Options names any, else the simulated
  // `nodes`), queues, live jobs; then the decision thread.
  Status Recover(const std::vector<v1::NodeSpec>& nodes);
  // Opens every backend Options lists and puts them in one set, the engine's executor.
  Status OpenBackends();
  // Cloud burst (scheduler_burst.cc), when a backend is a capacity provider and
  // ElasticOptions::enabled: the providers behind CapacityProviders, and CloudBurst with the
  // spend the store kept.
  Status OpenBurst();
  // Saves the burst accounts (a store write; strand).
  void SaveBurstAccounts(const std::map<std::string, SpendLedger::Account>& accounts);
  // Labels the burst nodes among `nodes` of backend `member`, joining (`added`) or reported
  // again (strand, or before it runs).
  void TakeBurstNodes(BackendSet::Member member, std::vector<v1::NodeSpec>& nodes, bool added);
  // After a queue change took effect (`applied` OK): its burst budget (strand).
  Status ApplyQueueSpec(const v1::QueueSpec& spec, Status applied);
  // The queue with its burst spend (strand).
  v1::Queue WithBurstSpend(v1::Queue queue) const;
  // How backend `member` reaches the scheduler: its reports, its loss and its restart.
  PluginBackend::Host BackendHost(BackendSet::Member member);
  // Strand: a backend's nodes changed; the engine takes the change, and nodes that join get the
  // flags an operator stored for them.
  void TakeInventoryChange(const InventoryDiff& diff, const std::string& backend);
  // A job source's work (BackendEvent SUBMIT_JOB, WITHDRAW_JOB; backend_job_intake.cc): submitted
  // with its external id as idempotency key in the backend's scope (model/job_source.h), and
  // cancelled by it. Strand; neither blocks.
  void SubmitFromBackend(const std::string& backend, const v1::JobSpec& job,
                         const std::string& external_id);
  void WithdrawFromBackend(const std::string& backend, const std::string& external_id);

  // EngineHost.
  void Persist(JobUpdate update, std::function<void(const Status&)> durable) override;
  void RequestDecisions() override;
  void PersistEvent(v1::Event event) override;
  void InventoryChanged(std::shared_ptr<const FeasibilityChecker> feasibility) override;
  void WaitingReasonChanged(uint64_t job, std::string_view reason) override {
    waiting_reasons_.Set(job, reason);
  }

  // Runs `fn` on the decision strand, then AfterStrandTask.
  void Post(std::function<void()> fn);
  // What every strand task does last: run due timers soon (or arm the timer when no other task
  // is queued), and make sure the engine writes it gathered reach the store.
  void AfterStrandTask();
  // Sends the engine writes gathered so far to the store as one write (strand only).
  void FlushPersists();
  // Hands a committed submit to the engine; submits committed together reach the strand in one
  // task, in commit order (any thread).
  void HandToEngine(std::shared_ptr<const v1::Job> job);
  // Runs `fn` on the strand and returns its result, or `if_closed` once Close has stopped the
  // strand (a call that was already waiting on it gets its answer first). Never call it from
  // the strand itself.
  template <typename R>
  R Call(std::function<R()> fn, R if_closed);
  void RunDecisionPass();
  void ArmTimer();
  // Applies a queue or node change to the engine after it is durable, then replies.
  Status WriteThenApply(store::WriteFn write, std::function<Status()> apply);
  // OK, or UNAVAILABLE "scheduler is shutting down" once Close has begun.
  Status CheckOpen() const;
  // Cordon and drain: durable flag, event, then the engine.
  Status SetNodeFlags(const std::string& name, bool cordoned, bool draining,
                      const std::string& reason);

  const Options options_;
  const std::shared_ptr<Clock> clock_;
  std::unique_ptr<store::Store> store_;
  // The open WatchEventsAsync calls; destroyed before the store they read.
  std::unique_ptr<EventWatches> event_watches_;
  // Why pending jobs wait, as the engine last published it; shown over the stored reason.
  WaitingReasons waiting_reasons_;

  boost::asio::io_context io_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;
  std::optional<TimestampUs> armed_deadline_;  // strand only.
  bool time_post_pending_ = false;             // strand only.
  bool decisions_posted_ = false;              // strand only.
  std::thread decision_thread_;
  int clock_listener_ = 0;

  std::unique_ptr<Engine> engine_;
  // What runs tasks: the built-in simulation, or a set of plugin backends.
  std::unique_ptr<SimulatedExecutor> simulation_;
  std::vector<std::unique_ptr<PluginBackend>> backends_;  // the set's members, in its order.
  std::unique_ptr<BackendSet> backend_set_;
  Executor* executor_ = nullptr;                 // simulation_ or backend_set_.
  std::unique_ptr<RetentionSweeper> retention_;  // when Options::retention sets a bound.
  std::unique_ptr<PluginCapacityProviders> burst_providers_;  // with a capacity provider.
  std::unique_ptr<CloudBurst> burst_;                         // strand only.

  // Engine writes gathered on the strand, sent to the store as one write after the strand task
  // that made them and the tasks already queued behind it (transitions of one job in quick
  // succession, STARTING then RUNNING say, then share a write and a status row). Each keeps its
  // own events, in order; `durable` callbacks run in order after the commit.
  struct PendingPersist {
    JobUpdate update;  // job_id 0: events that concern no job.
    std::function<void(const Status&)> durable;
  };
  // Past this many, a strand task sends them at once rather than at its end.
  static constexpr size_t kMaxGatheredPersists = 1024;
  std::vector<PendingPersist> gathered_persists_;  // strand only.
  // Buffers of sent writes come back (emptied, on the strand) once their callbacks have run, so
  // that gathering reuses their capacity instead of allocating large blocks per write.
  static constexpr size_t kMaxSparePersistBuffers = 32;
  static constexpr size_t kFreshPersistBuffer = 64;  // updates a new buffer has room for.
  std::vector<std::vector<PendingPersist>> spare_persist_buffers_;  // strand only.
  bool persist_flush_posted_ = false;                               // strand only.
  // Submits committed but not yet handed to the engine; a task to drain them is posted when
  // the first arrives.
  std::mutex arrivals_mu_;
  std::vector<std::shared_ptr<const v1::Job>> arrivals_;

  std::atomic<bool> closing_{false};
  // Calls waiting on the strand hold this shared; Close takes it exclusively to set
  // strand_stopped_, so it stops the strand only once they have their answers.
  std::shared_mutex strand_calls_mu_;
  bool strand_stopped_ = false;     // guarded by strand_calls_mu_.
  std::atomic<int64_t> posted_{0};  // strand tasks not yet finished.
  std::mutex feasibility_mu_;
  std::shared_ptr<const FeasibilityChecker> feasibility_;
};

template <typename R>
R SchedulerImpl::Call(std::function<R()> fn, R if_closed) {
  std::shared_lock<std::shared_mutex> lock(strand_calls_mu_);
  if (strand_stopped_) return if_closed;
  std::promise<R> promise;
  std::future<R> result = promise.get_future();
  Post([&promise, &fn] { promise.set_value(fn()); });
  return result.get();
}

}  // namespace tessera
