// CrashInvariants: what must hold of a tesserad that is killed (SIGKILL) and restarted on the
// same store again and again, read through its HTTP API (binary protobuf) after each restart
// and at the end. It feeds the scenario checker (tests/scenario/invariants.h) with what the
// daemon shows, for the rules that hold over a live daemon read in several requests:
//
//   events_gapless_and_monotonic, event_log_chains_per_job, state_changed_events_change_state,
//   never_running_twice        over the whole event log, across every restart
//   no_gpu_or_share_double_booked, node_capacity_not_exceeded, caps_honoured
//                              over the jobs holding resources, read in one page (one store read)
//
// and adds the rules of a crash test that need what the clients were told:
//
//   acknowledged_submits_exist_once  every acknowledged submit is listed once, with the id it
//                                    was acknowledged with; no idempotency key names two jobs;
//                                    no job exists whose key no client sent
//   finished_jobs_stay_finished      a job seen in a terminal state keeps that state, and the
//                                    event log never moves a job out of a terminal state
//   cancelled_jobs_not_run_again     after a cancel was acknowledged, the job is never admitted
//                                    again (no admission of a later attempt), and it ends
//   nodes_within_capacity            GET /v1/nodes never shows a node holding more cpu, memory
//                                    or GPU than it has
//   settled_nodes_hold_nothing       (settled) once every job has ended, GET /v1/nodes shows
//                                    nothing allocated and no task running: no allocation
//                                    leaked across a restart
//
// The scenario checker's other rules are left out: job_state_matches_event_log and
// queue_allocation_matches_placements compare reads that the daemon answers from different
// moments; pending_job_has_reason reads a reason the engine publishes after the commit;
// guarantee_reclaimed_in_time needs queues with guarantees, which this test does not declare.
//
// Thread safety: one thread calls Check; Acknowledged*, KeySent may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scenario/invariants.h"
#include "scenario/scenario.h"

namespace tesserad_test {

class CrashInvariants {
 public:
  explicit CrashInvariants(const tessera::v1::SimulatedCluster& cluster);

  // A client is about to send a submit with this idempotency key.
  void KeySent(const std::string& key);
  // A submit with `key` was answered 200 with job `id`.
  void AcknowledgedSubmit(const std::string& key, uint64_t id);
  // A cancel of `id` was answered 200 while the job was in `attempt`.
  void AcknowledgedCancel(uint64_t id, int attempt);

  // Reads the daemon on `port` and checks every rule. `settled`: load has stopped and every job
  // has ended, so that every job listed must have been acknowledged and every cancelled one
  // must have ended. Returns the first rule broken.
  std::optional<tessera::scenario::Violation> Check(unsigned short port, bool settled);

  uint64_t events_seen() const { return last_seq_; }
  int64_t jobs_seen() const { return jobs_seen_; }

 private:
  std::optional<tessera::scenario::Violation> CheckListing(
      const std::vector<tessera::v1::Job>& jobs,
      const std::map<std::string, uint64_t>& acknowledged, bool settled);
  std::optional<tessera::scenario::Violation> CheckEvents(
      const std::vector<tessera::v1::Event>& events);
  std::optional<tessera::scenario::Violation> CheckNodes(
      const std::vector<tessera::v1::Node>& nodes, bool settled);

  tessera::scenario::Scenario scenario_;  // the cluster, for the scenario checker.
  tessera::scenario::Checker checker_;

  std::mutex mu_;
  std::set<std::string> keys_sent_;               // guarded by mu_.
  std::map<std::string, uint64_t> acknowledged_;  // key -> id; guarded by mu_.
  std::map<uint64_t, int> cancelled_at_attempt_;  // guarded by mu_.

  uint64_t last_seq_ = 0;
  std::map<uint64_t, tessera::v1::JobState> finished_;  // job -> terminal state seen.
  std::map<uint64_t, int> admitted_attempt_;            // job -> highest attempt admitted.
  int64_t jobs_seen_ = 0;
};

}  // namespace tesserad_test
