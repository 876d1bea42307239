#include "daemon/crash_invariants.h"

#include <sstream>
#include <utility>

#include "daemon/daemon_harness.h"
#include "tessera/job.h"
#include "tessera/v1/api.pb.h"

namespace tesserad_test {
namespace {

using tessera::scenario::Violation;
namespace v1 = tessera::v1;

template <typename... Parts>
std::string Say(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// The rules of the scenario checker that a live daemon, read in several requests, cannot meet
// by construction (see the header).
std::set<std::string> RulesLeftOut() {
  return {"acknowledged_jobs_exist_once", "job_state_matches_event_log",
          "queue_allocation_matches_placements", "pending_job_has_reason",
          "guarantee_reclaimed_in_time"};
}

tessera::scenario::Scenario ScenarioOf(const v1::SimulatedCluster& cluster) {
  tessera::scenario::Scenario scenario;
  scenario.cluster = cluster;
  return scenario;
}

// GET `target` as binary protobuf into `message`; a violation of "api_answers" otherwise.
template <typename Message>
std::optional<Violation> Read(unsigned short port, const std::string& target, Message& message) {
  const Reply reply =
      Call(port, http::verb::get, target, "", nullptr, {{"Accept", "application/x-protobuf"}});
  if (reply.status != 200) {
    return Violation{"api_answers", Say("GET ", target, ": ", reply.status, " ", reply.body)};
  }
  if (!message.ParseFromString(reply.body)) {
    return Violation{"api_answers", Say("GET ", target, ": not a ", message.GetTypeName())};
  }
  return std::nullopt;
}

bool HoldsResources(v1::JobState state) {
  return state == v1::ADMITTED || state == v1::STARTING || state == v1::RUNNING ||
         state == v1::PREEMPTING;
}

}  // namespace

CrashInvariants::CrashInvariants(const v1::SimulatedCluster& cluster)
    : scenario_(ScenarioOf(cluster)), checker_(scenario_, RulesLeftOut()) {}

void CrashInvariants::KeySent(const std::string& key) {
  std::lock_guard lock(mu_);
  keys_sent_.insert(key);
}

void CrashInvariants::AcknowledgedSubmit(const std::string& key, uint64_t id) {
  std::lock_guard lock(mu_);
  acknowledged_[key] = id;
}

void CrashInvariants::AcknowledgedCancel(uint64_t id, int attempt) {
  std::lock_guard lock(mu_);
  cancelled_at_attempt_.emplace(id, attempt);
}

std::optional<Violation> CrashInvariants::Check(unsigned short port, bool settled) {
  // Every job, page by page. Acknowledgements taken before the read must all be in it; keys
  // sent are taken after it, so that every key the listing holds was sent.
  std::map<std::string, uint64_t> acknowledged;
  {
    std::lock_guard lock(mu_);
    acknowledged = acknowledged_;
  }
  std::vector<v1::Job> jobs;
  std::string token;
  do {
    v1::ListJobsResponse page;
    if (auto v = Read(port, "/v1/jobs?page_size=1000&page_token=" + token, page)) return v;
    for (v1::Job& job : *page.mutable_jobs()) jobs.push_back(std::move(job));
    token = page.next_page_token();
  } while (!token.empty());
  jobs_seen_ = static_cast<int64_t>(jobs.size());
  if (auto v = CheckListing(jobs, acknowledged, settled)) return v;

  tessera::scenario::Snapshot snapshot;
  for (uint64_t after = last_seq_;;) {
    v1::WatchEventsResponse page;
    if (auto v = Read(port, "/v1/events?max=1000&after_seq=" + std::to_string(after), page)) {
      return v;
    }
    if (page.events_size() == 0) break;
    for (v1::Event& e : *page.mutable_events()) snapshot.new_events.push_back(std::move(e));
    after = page.next_after_seq();
  }
  if (auto v = CheckEvents(snapshot.new_events)) return v;

  // The jobs that hold resources, in one page: one read of the store, so one moment.
  v1::ListJobsResponse live;
  if (auto v =
          Read(port, "/v1/jobs?page_size=1000&state=ADMITTED,STARTING,RUNNING,PREEMPTING", live)) {
    return v;
  }
  if (!live.next_page_token().empty()) {
    return Violation{"test_setup", "more than 1000 jobs hold resources; the check needs one page"};
  }
  snapshot.jobs.assign(live.jobs().begin(), live.jobs().end());
  v1::ListNodesResponse nodes;
  if (auto v = Read(port, "/v1/nodes", nodes)) return v;
  snapshot.nodes.assign(nodes.nodes().begin(), nodes.nodes().end());
  if (auto v = checker_.CheckStep(snapshot, 0)) return v;
  if (settled && !snapshot.jobs.empty()) {
    return Violation{"every_job_finishes",
                     Say("settled, yet job ", snapshot.jobs[0].id(), " is ",
                         tessera::JobStateName(snapshot.jobs[0].status().state()))};
  }
  return CheckNodes(snapshot.nodes, settled);
}

std::optional<Violation> CrashInvariants::CheckListing(
    const std::vector<v1::Job>& jobs, const std::map<std::string, uint64_t>& acknowledged,
    bool settled) {
  std::set<std::string> keys_sent;
  std::map<uint64_t, int> cancelled;
  {
    std::lock_guard lock(mu_);
    keys_sent = keys_sent_;
    cancelled = cancelled_at_attempt_;
  }
  const std::string rule = "acknowledged_submits_exist_once";
  std::map<std::string, uint64_t> by_key;
  std::map<uint64_t, const v1::Job*> by_id;
  for (const v1::Job& job : jobs) {
    if (!by_id.emplace(job.id(), &job).second) {
      return Violation{rule, Say("job ", job.id(), " is listed twice")};
    }
    const std::string& key = job.idempotency_key();
    if (!keys_sent.count(key)) {
      return Violation{
          rule, Say("job ", job.id(), " has idempotency key '", key, "', which no client sent")};
    }
    auto [it, fresh] = by_key.emplace(key, job.id());
    if (!fresh) {
      return Violation{
          rule, Say("idempotency key '", key, "' names job ", it->second, " and job ", job.id())};
    }
    if (settled && !acknowledged.count(key)) {
      return Violation{rule, Say("job ", job.id(), " (key '", key,
                                 "') exists, but its submit was never acknowledged")};
    }
  }
  for (const auto& [key, id] : acknowledged) {
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      return Violation{rule, Say("acknowledged job ", id, " (key '", key, "') is missing")};
    }
    if (it->second != id) {
      return Violation{
          rule, Say("key '", key, "' was acknowledged as job ", id, " but names job ", it->second)};
    }
  }

  for (const v1::Job& job : jobs) {
    const v1::JobState state = job.status().state();
    auto seen = finished_.find(job.id());
    if (seen != finished_.end() && seen->second != state) {
      return Violation{"finished_jobs_stay_finished",
                       Say("job ", job.id(), " was ", tessera::JobStateName(seen->second),
                           " and is now ", tessera::JobStateName(state), " (attempt ",
                           job.status().attempt(), ": ", job.status().reason(), ")")};
    }
    if (tessera::IsTerminal(state)) finished_.emplace(job.id(), state);
  }

  for (const auto& [id, attempt] : cancelled) {
    auto it = by_id.find(id);
    if (it == by_id.end()) continue;  // reported above: cancels are only sent to acknowledged jobs.
    const v1::JobStatus& status = it->second->status();
    if (status.attempt() > attempt && HoldsResources(status.state())) {
      return Violation{"cancelled_jobs_not_run_again",
                       Say("job ", id, " was cancelled (acknowledged) in attempt ", attempt,
                           " and now runs attempt ", status.attempt(), " (",
                           tessera::JobStateName(status.state()), ": ", status.reason(), ")")};
    }
    if (settled && !tessera::IsTerminal(status.state())) {
      return Violation{"cancelled_jobs_not_run_again",
                       Say("job ", id, " was cancelled (acknowledged) but is still ",
                           tessera::JobStateName(status.state()), ": ", status.reason())};
    }
  }
  return std::nullopt;
}

std::optional<Violation> CrashInvariants::CheckEvents(const std::vector<v1::Event>& events) {
  std::map<uint64_t, int> cancelled;
  {
    std::lock_guard lock(mu_);
    cancelled = cancelled_at_attempt_;
  }
  for (const v1::Event& e : events) {
    last_seq_ = e.seq();
    if (e.kind() != v1::JOB_STATE_CHANGED) continue;
    if (tessera::IsTerminal(e.from_state())) {
      return Violation{"finished_jobs_stay_finished",
                       Say("event ", e.seq(), ": job ", e.job_id(), " goes ",
                           tessera::JobStateName(e.from_state()), " -> ",
                           tessera::JobStateName(e.to_state()), " (", e.reason(), ")")};
    }
    if (e.to_state() == v1::ADMITTED) {
      int& highest = admitted_attempt_[e.job_id()];
      highest = std::max(highest, e.attempt());
    }
  }
  // Whenever the cancel was acknowledged, a later attempt admitted means the job ran again.
  for (const auto& [id, attempt] : cancelled) {
    auto it = admitted_attempt_.find(id);
    if (it != admitted_attempt_.end() && it->second > attempt) {
      return Violation{"cancelled_jobs_not_run_again",
                       Say("job ", id, " was cancelled (acknowledged) in attempt ", attempt,
                           "; the event log admits it again in attempt ", it->second)};
    }
  }
  return std::nullopt;
}

std::optional<Violation> CrashInvariants::CheckNodes(const std::vector<v1::Node>& nodes,
                                                     bool settled) {
  for (const v1::Node& n : nodes) {
    const v1::Resources& held = n.status().allocated();
    int64_t gpu_memory = 0;
    for (const v1::GpuDevice& g : n.spec().gpus()) gpu_memory += g.memory_mib();
    if (held.cpu_milli() > n.spec().cpu_milli() || held.memory_mib() > n.spec().memory_mib() ||
        held.gpu_milli() > 1000LL * n.spec().gpus_size() || held.gpu_memory_mib() > gpu_memory) {
      return Violation{"nodes_within_capacity",
                       Say("node ", n.spec().name(), " holds {", held.ShortDebugString(), "}, has ",
                           n.spec().cpu_milli(), " cpu_milli, ", n.spec().memory_mib(), " MiB, ",
                           n.spec().gpus_size(), " GPUs")};
    }
    if (settled && (held.cpu_milli() != 0 || held.memory_mib() != 0 || held.gpu_milli() != 0 ||
                    held.gpu_memory_mib() != 0 || n.status().running_tasks() != 0)) {
      return Violation{
          "settled_nodes_hold_nothing",
          Say("every job has ended, yet node ", n.spec().name(), " holds {",
              held.ShortDebugString(), "} and runs ", n.status().running_tasks(), " task(s)")};
    }
  }
  return std::nullopt;
}

}  // namespace tesserad_test
