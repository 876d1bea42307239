// Scheduler: the entry point of Tessera. An embedding host opens one, submits jobs to queues,
// and watches them run; the scheduler decides which job runs where, fairly across queues, and
// remembers everything in its store.
//
//   tessera::Options options;
//   options.store.path = "/var/lib/tessera/state.db";
//   auto scheduler = tessera::Scheduler::Open(options);
//   if (!scheduler.ok()) return Fail(scheduler.status());
//   auto job = (*scheduler)->Submit(tessera::JobSpecBuilder("default").Gpus(1).Build());
//
// Durability: every call that changes state returns only after the change is committed to the
// store, so an acknowledged job survives a crash. Reads (GetJob, ListJobs, WatchEvents) see
// committed state.
//
// Thread safety: all members may be called concurrently from any thread. Decisions are made on
// one internal thread; calls never block it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/options.h"
#include "tessera/status.h"
#include "tessera/v1/dry_run.pb.h"
#include "tessera/v1/event.pb.h"
#include "tessera/v1/job.pb.h"
#include "tessera/v1/node.pb.h"
#include "tessera/v1/queue.pb.h"
#include "tessera/v1/stats.pb.h"

namespace tessera {

using JobId = uint64_t;

struct SubmitOptions {
  // A retried submit with the same key returns the job the first submit created instead of
  // creating another. Empty means no deduplication. Must not contain the byte 0x1f.
  std::string idempotency_key;
  // Whose key it is: keys are unique within one scope, so two tenants of a service embedding
  // the scheduler may use the same key without seeing each other's job (tesserad passes the
  // token's queue prefix). Empty (default) is a scope of its own. Must not contain 0x1f.
  // Job.idempotency_key reports the key without its scope.
  std::string idempotency_scope;
};

class TESSERA_EXPORT Scheduler {
 public:
  // Opens (or creates) the store, reloads queues and live jobs, reconciles them with the
  // executor, and starts deciding.
  // Errors: INVALID_ARGUMENT for bad options (the message names the field);
  // UNAVAILABLE if another process holds the store; FAILED_PRECONDITION if the store file is
  // corrupt or newer than this build; RESOURCE_EXHAUSTED if the disk is full.
  static StatusOr<std::unique_ptr<Scheduler>> Open(const Options& options);

  // Stops deciding, waits for writes in flight to commit, and closes the store (Close), then
  // frees the scheduler. Destroy it only once no other thread is inside one of its calls: Close
  // first is how those threads get out (a blocked WatchEvents among them).
  virtual ~Scheduler();

  // Shuts the scheduler down without freeing it: a WatchEvents blocked in its wait returns
  // UNAVAILABLE ("scheduler is shutting down") at once, as does every call made after Close
  // began, and open WatchEventsAsync watches are answered UNAVAILABLE. Then decisions stop and
  // writes in flight commit; Close returns when they are durable. The destructor releases the
  // executor and the store. Calling Close again does nothing; the destructor calls it.
  virtual void Close() = 0;

  // --- Jobs -------------------------------------------------------------------------------

  // Validates `spec`, commits it as PENDING and returns the job. A job no node could ever run is
  // accepted but marked infeasible (status.infeasible, with the reason) until the inventory
  // changes.
  // Errors: INVALID_ARGUMENT (names the field), NOT_FOUND (queue), FAILED_PRECONDITION (queue is
  // not a leaf), ALREADY_EXISTS (options.idempotency_key was used for a different spec),
  // RESOURCE_EXHAUSTED (store full), UNAVAILABLE (shutting down).
  virtual StatusOr<v1::Job> Submit(const v1::JobSpec& spec, const SubmitOptions& options = {}) = 0;

  // Like Submit, but returns at once; `done` runs on an internal thread once the job is durable
  // (or the submit failed). Lets one client keep many submits in flight.
  virtual void SubmitAsync(const v1::JobSpec& spec, const SubmitOptions& options,
                           std::function<void(StatusOr<v1::Job>)> done) = 0;

  // Cancels a job. A pending job becomes CANCELLED at once; a running one is stopped and becomes
  // CANCELLED when its tasks have ended (status.reason says so meanwhile).
  // Errors: NOT_FOUND, FAILED_PRECONDITION (already finished); when the store refuses the write
  // (RESOURCE_EXHAUSTED when full, UNAVAILABLE on an I/O error) the answer comes at once: the
  // job is cancelled in the scheduler but not yet recorded ("job 7: cancelled, but the store
  // has not recorded it yet: ..."); the scheduler keeps retrying the write, and a cancel
  // repeated after the store recovers answers as for a finished job.
  virtual StatusOr<v1::Job> Cancel(JobId id) = 0;

  // What Submit(spec) would do now, without submitting: the same errors as Submit for a spec it
  // would refuse, and otherwise whether the job could ever run here and why not, where it would
  // start now, or else why it would wait (quota, jobs ahead of it in its queue, capacity,
  // another job's reservation) and when it is expected to start from the reservations and the
  // time limits of running jobs (unknown when the room it needs is held by jobs without one),
  // and which running jobs it would preempt. The answer comes from the code that decides
  // (quotas, placement, preemption's victim rule and guards, reservation planning) and holds
  // for the cluster as it is now. Nothing is stored or changed: no job id is used, no event
  // logged, no idempotency key looked up. MIG re-partitioning for the job is not tried.
  // Errors: as Submit, but for ALREADY_EXISTS (no key is used).
  virtual StatusOr<v1::DryRunResult> DryRun(const v1::JobSpec& spec) = 0;

  // Errors: NOT_FOUND.
  virtual StatusOr<v1::Job> GetJob(JobId id) = 0;

  // The job that a Submit with this idempotency key in this scope created (SubmitOptions), so
  // that a client that lost a submit's answer finds its job without submitting again. A key is
  // remembered as long as its job is kept (Options::retention).
  // Errors: INVALID_ARGUMENT (empty key; key or scope holding 0x1f), NOT_FOUND (no job of that
  // scope has the key; the same answer whether another scope has it or not).
  virtual StatusOr<v1::Job> GetJobByIdempotencyKey(const std::string& idempotency_key,
                                                   const std::string& idempotency_scope = "") = 0;

  // Jobs ordered by id, filtered and paginated by `request`. A queue filter names an existing
  // queue, with or without a trailing "/", and means that queue's subtree ("org" lists org/a and
  // org/b; a leaf lists itself). A page token continues only the listing it was issued for: the
  // same queue, states and labels (the page size may change).
  // Errors: NOT_FOUND (the queue does not exist), INVALID_ARGUMENT (bad queue name, bad page
  // size, a token not returned by ListJobs or issued for another filter).
  virtual StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListJobsRequest& request) = 0;

  // Events with seq > `after_seq`, oldest first, at most `max_events`. Waits up to `wait` for the
  // first one when none is there yet; an empty result means none arrived in time.
  virtual StatusOr<std::vector<v1::Event>> WatchEvents(uint64_t after_seq, int max_events,
                                                       std::chrono::milliseconds wait) = 0;

  // WatchEvents without a thread waiting: returns at once, and `done` runs once, on an internal
  // thread (it must not block: hand the result to your own executor), with what WatchEvents
  // would have returned, as soon as an event after `after_seq` is committed or `wait` has passed.
  // Any number of watches may be open at once; each costs memory, not a thread. The returned id
  // is for CancelEventWatch. Errors (passed to `done`): as WatchEvents.
  virtual uint64_t WatchEventsAsync(uint64_t after_seq, int max_events,
                                    std::chrono::milliseconds wait,
                                    std::function<void(StatusOr<std::vector<v1::Event>>)> done) = 0;
  // Ends watch `id` early (its client went away, say): its `done` runs soon with the events there
  // are, usually none. An id that has finished already is ignored.
  virtual void CancelEventWatch(uint64_t id) = 0;

  // --- Queues -----------------------------------------------------------------------------

  // Errors: INVALID_ARGUMENT, ALREADY_EXISTS, NOT_FOUND (parent missing), FAILED_PRECONDITION
  // (parent holds jobs, so it must stay a leaf).
  virtual Status CreateQueue(const v1::QueueSpec& spec) = 0;
  // Replaces weight, guarantee, borrowing limit and cap. Errors: INVALID_ARGUMENT, NOT_FOUND.
  virtual Status UpdateQueue(const v1::QueueSpec& spec) = 0;
  // Errors: NOT_FOUND, FAILED_PRECONDITION (has child queues or unfinished jobs).
  virtual Status DeleteQueue(const std::string& name) = 0;
  // Errors: NOT_FOUND.
  virtual StatusOr<v1::Queue> GetQueue(const std::string& name) = 0;
  virtual StatusOr<std::vector<v1::Queue>> ListQueues() = 0;

  // --- Nodes ------------------------------------------------------------------------------

  virtual StatusOr<std::vector<v1::Node>> ListNodes() = 0;
  // Stops (or, with cordoned=false, resumes) placing new work on a node. Errors: NOT_FOUND.
  virtual Status CordonNode(const std::string& name, bool cordoned) = 0;
  // Cordons a node and lets its running tasks finish. Errors: NOT_FOUND.
  virtual Status DrainNode(const std::string& name) = 0;

  // The backends of Options::backends (or executor_plugin), in their order: health and why not,
  // restarts, roles and how many nodes each owns. Empty for the built-in simulation.
  virtual StatusOr<std::vector<v1::Backend>> ListBackends() = 0;

  // Takes a GPU reading (utilisation, memory, temperature, power, ECC and XID errors). A fatal
  // error marks the GPU failed (no new work; its tasks are requeued, see
  // Options::gpu_health); running too hot keeps new work off it until it cools. A failed GPU
  // comes back when its node is uncordoned. Backends report through the same path.
  // Errors: NOT_FOUND (node), INVALID_ARGUMENT (gpu index out of range).
  virtual Status ReportTelemetry(const v1::GpuTelemetry& reading) = 0;

  // --- Operations -------------------------------------------------------------------------

  virtual v1::SchedulerStats GetStats() = 0;

  // Writes a consistent copy of the store to `path` with SQLite's online backup while the
  // scheduler keeps running. Errors: INVALID_ARGUMENT (empty path), UNAVAILABLE (cannot write),
  // RESOURCE_EXHAUSTED (disk full).
  virtual Status Backup(const std::string& path) = 0;

  // Runs SQLite's check of the store (StoreCheck::kQuick or kFull) on the last commit while the
  // scheduler keeps running; kFull reads every page and index, so it takes a while on a large
  // store. OK when the store is sound.
  // Errors: FAILED_PRECONDITION ("store '...' fails SQLite's integrity check: ...", naming the
  // first problems), UNAVAILABLE (cannot read the store, shutting down).
  virtual Status CheckStore(StoreCheck level) = 0;

  // Pauses and resumes decisions; submits and other calls keep working meanwhile.
  virtual void PauseDecisions() = 0;
  virtual void ResumeDecisions() = 0;

  // Blocks until no decision, executor report or store write is outstanding. With a
  // ManualClock this makes a test or simulation step deterministic.
  virtual void WaitIdle() = 0;

  // The earliest clock time at which the scheduler has something to do (a simulated task
  // ending, a time limit, a reservation or preemption to revisit, a retry, a usage refresh while
  // jobs wait), or nullopt when nothing is left to do. A simulation drives a ManualClock by
  // advancing it to min(next arrival, NextWakeupUs()) and calling WaitIdle(), skipping the idle
  // time in between; once every job has ended it gets nullopt (docs/embedding.md).
  virtual std::optional<TimestampUs> NextWakeupUs() = 0;
};

}  // namespace tessera
