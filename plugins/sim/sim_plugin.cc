// The sim backend: the scheduler's simulated executor behind the plugin ABI, so a host can run
// whole clusters in virtual time (tests, the demo, benchmarks, what-if replays).
//
// Time comes only from the host clock (Host::NowUs), never from the system: a task launched at
// host time t with simulation.duration_ms = d exits at t + d with simulation.exit_code; d = 0
// runs until stopped. Stop(grace) ends a task at min(natural end, now + grace): a simulated task
// spends its grace checkpointing and then exits with 143 (128 + SIGTERM), as a process ended by
// SIGTERM would, unless its natural end comes first; with grace 0 it is killed at once and
// exits with 137 (128 + SIGKILL). Nothing happens on its own: PollEvents
// reports every event due by the host's now, in time order, and says in next_event_us when the
// next one falls due, so a virtual-time host can jump straight there. No event goes through
// emit_event, and no thread is started.
//
// Scripted node changes (SimulatedCluster.changes) fall due the same way, at their at_ms after
// Init on the host clock: the poll that passes one applies it and reports INVENTORY_CHANGED, and
// the next Inventory lists the nodes as they are then. The tasks of a node that leaves vanish
// with it, without a TASK_EXITED (like pods of a deleted Kubernetes node or processes of a
// reclaimed spot instance): it is the host's to requeue them. A node that leaves and joins in one
// change keeps its tasks: it is the same machine with a new shape (a GPU fell off the bus, a
// label was edited).
//
// ABI 1.1: Start takes the host's fencing epoch, and every request with a lower one is refused
// (tessera/plugin/epoch_fence.h). Partition layouts take effect at once (sim_partitioner.h); on
// failing_partition_nodes they fail for the GPU, which keeps its layout. As a capacity provider
// (SimulatedCluster.capacity, sim_capacity.h) it provisions in virtual time, with delays, failures
// and spot interruptions.
//
// Thread-safety: one mutex guards everything, since the host may poll concurrently with any
// other call. Launch is idempotent while the backend knows the task (until its exit has been
// polled); nothing survives the instance, so after a restart Reconcile is empty and the host
// requeues what was running, as with the built-in simulation.
#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim_capacity.h"
#include "sim_cluster.h"
#include "sim_partitioner.h"
#include "tessera/plugin/epoch_fence.h"
#include "tessera/plugin/plugin.h"

namespace tessera::sim {
namespace {

using plugin::PluginStatus;

// 128 + SIGTERM: the exit code of a process ended by SIGTERM (a stop with grace); 128 + SIGKILL
// that of one killed (a stop without).
constexpr int32_t kStoppedExitCode = 143;
constexpr int32_t kKilledExitCode = 137;

using TaskKey = std::tuple<uint64_t, int32_t, int32_t>;

TaskKey KeyOf(const v1::TaskRef& ref) { return {ref.job(), ref.attempt(), ref.task()}; }

v1::TaskRef RefOf(const TaskKey& key) {
  v1::TaskRef ref;
  ref.set_job(std::get<0>(key));
  ref.set_attempt(std::get<1>(key));
  ref.set_task(std::get<2>(key));
  return ref;
}

// now + ms milliseconds, saturating instead of overflowing on absurd durations.
int64_t AfterMs(int64_t now_us, int64_t ms) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (ms > (kMax - now_us) / 1000) return kMax;
  return now_us + ms * 1000;
}

class SimBackend final : public plugin::Plugin {
 public:
  explicit SimBackend(plugin::Host host) : Plugin(host) {}

  PluginStatus Init(const std::string& config) override {
    SimConfig parsed;
    PluginStatus status = ParseSimConfig(config, &parsed);
    if (!status.ok()) return status;
    nodes_ = std::move(parsed.nodes);
    rejecting_nodes_ = std::move(parsed.rejecting_nodes);
    rejections_final_ = parsed.rejections_final;
    failing_partition_nodes_ = std::move(parsed.failing_partition_nodes);
    report_telemetry_ = parsed.report_telemetry;
    capacity_ = SimCapacity(std::move(parsed.capacity));
    const int64_t start_us = host().NowUs();
    for (NodeChange& change : parsed.changes) {
      changes_.push_back({AfterMs(start_us, change.at_ms), std::move(change)});
    }
    IndexNodes();
    for (v1::NodeSpec& node : nodes_) partitioner_.DescribeDevices(&node);
    int gpus = 0;
    for (const v1::NodeSpec& node : nodes_) gpus += node.gpus_size();
    host().Log(TESSERA_LOG_INFO, "sim: " + std::to_string(nodes_.size()) + " nodes, " +
                                     std::to_string(gpus) + " GPUs");
    return PluginStatus::Ok();
  }

  PluginStatus Start(const v1::StartRequest& request) override {
    return fence_.Admit(request.epoch(), "start");
  }

  PluginStatus Inventory(v1::Inventory* out) override {
    std::lock_guard lock(mutex_);
    for (const v1::NodeSpec& node : nodes_) *out->add_nodes() = node;
    return PluginStatus::Ok();
  }

  PluginStatus Launch(const v1::LaunchTask& request) override {
    if (PluginStatus fenced = fence_.Admit(request.epoch(), "launch"); !fenced.ok()) return fenced;
    std::lock_guard lock(mutex_);
    const TaskKey key = KeyOf(request.ref());
    if (tasks_.count(key)) return PluginStatus::Ok();  // idempotent.
    const v1::NodeSpec* node = FindNode(request.node());
    if (node == nullptr) {
      // The node may have left since the host decided (a scripted change): this launch alone
      // fails, and another attempt may well succeed elsewhere.
      Reject(request.ref(), true, "node '" + request.node() + "' is not in the inventory");
      return PluginStatus::Ok();
    }
    if (rejecting_nodes_.count(request.node()) != 0) {
      Reject(request.ref(), !rejections_final_,
             "node '" + request.node() + "' refuses launches (rejecting_nodes)");
      return PluginStatus::Ok();
    }
    for (int i = 0; i < request.gpus_size(); ++i) {
      if (request.gpus(i) < 0 || request.gpus(i) >= node->gpus_size()) {
        return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                   "gpus[" + std::to_string(i) + "]: node '" + node->name() +
                                       "' has no GPU " + std::to_string(request.gpus(i)));
      }
    }
    if (request.partition().sharing() == v1::GPU_SHARING_MIG && request.gpus_size() == 1) {
      // A task runs in an instance that exists: after a layout that failed, it does not.
      const v1::GpuDevice& gpu = node->gpus(request.gpus(0));
      const bool exists = std::any_of(gpu.mig_instances().begin(), gpu.mig_instances().end(),
                                      [&](const v1::MigInstance& m) {
                                        return m.profile() == request.partition().mig_profile() &&
                                               m.start() == request.partition().mig_start();
                                      });
      if (!exists) {
        Reject(request.ref(), true,
               "GPU " + std::to_string(request.gpus(0)) + " of node '" + node->name() +
                   "' has no MIG instance " + request.partition().mig_profile() + "@" +
                   std::to_string(request.partition().mig_start()));
        return PluginStatus::Ok();
      }
    }
    if (request.simulation().duration_ms() < 0) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                 "simulation.duration_ms: must be >= 0, got " +
                                     std::to_string(request.simulation().duration_ms()));
    }
    const int64_t now = host().NowUs();
    Task& task = tasks_[key];
    task.node = request.node();
    task.gpus.assign(request.gpus().begin(), request.gpus().end());
    task.utilization_pct = request.simulation().has_gpu_utilization_pct()
                               ? request.simulation().gpu_utilization_pct()
                               : 100.0;
    task.exit_code = request.simulation().exit_code();
    if (request.simulation().duration_ms() > 0) {
      task.end_us = AfterMs(now, request.simulation().duration_ms());
      ends_.emplace(task.end_us, key);
    }
    v1::BackendEvent& started = started_.emplace_back();
    started.set_kind(v1::BackendEvent::TASK_STARTED);
    *started.mutable_ref() = request.ref();
    started.set_time_us(now);
    return PluginStatus::Ok();
  }

  PluginStatus Stop(const v1::StopTask& request) override {
    if (PluginStatus fenced = fence_.Admit(request.epoch(), "stop"); !fenced.ok()) return fenced;
    std::lock_guard lock(mutex_);
    auto it = tasks_.find(KeyOf(request.ref()));
    if (it == tasks_.end()) return PluginStatus::Ok();  // gone already (or never here).
    Task& task = it->second;
    const int64_t stop_at = AfterMs(host().NowUs(), std::max<int64_t>(request.grace_ms(), 0));
    if (task.end_us != 0 && task.end_us <= stop_at) return PluginStatus::Ok();  // ends first.
    if (task.end_us != 0) ends_.erase({task.end_us, it->first});
    task.end_us = stop_at;
    task.exit_code = request.grace_ms() > 0 ? kStoppedExitCode : kKilledExitCode;
    ends_.emplace(task.end_us, it->first);
    return PluginStatus::Ok();
  }

  PluginStatus Telemetry(v1::TelemetryBatch* out) override {
    if (!report_telemetry_) return PluginStatus::Ok();
    std::lock_guard lock(mutex_);
    const int64_t now = host().NowUs();
    // Each GPU's utilisation: the highest of the tasks running on it (whose end has not
    // passed), 0 for an idle one.
    std::map<std::pair<std::string, int>, double> busy;
    for (const auto& [key, task] : tasks_) {
      if (task.end_us != 0 && task.end_us <= now) continue;
      for (int gpu : task.gpus) {
        double& pct = busy[{task.node, gpu}];
        pct = std::max(pct, task.utilization_pct);
      }
    }
    for (const v1::NodeSpec& node : nodes_) {
      for (int gpu = 0; gpu < node.gpus_size(); ++gpu) {
        v1::GpuTelemetry& reading = *out->add_readings();
        reading.set_node(node.name());
        reading.set_gpu(gpu);
        reading.set_time_us(now);
        auto it = busy.find({node.name(), gpu});
        reading.set_utilization_pct(it == busy.end() ? 0.0 : it->second);
      }
    }
    return PluginStatus::Ok();
  }

  PluginStatus PollEvents(v1::BackendEvents* out) override {
    std::lock_guard lock(mutex_);
    const int64_t now = host().NowUs();
    // Starts come first so that a task stopped with no grace the instant it started reports
    // TASK_STARTED before TASK_EXITED; the stable sort keeps that order among equal times.
    std::vector<v1::BackendEvent> due = std::move(started_);
    started_.clear();
    ApplyDueChanges(now, &due);
    while (!ends_.empty() && ends_.begin()->first <= now) {
      const auto [end_us, key] = *ends_.begin();
      ends_.erase(ends_.begin());
      auto it = tasks_.find(key);
      v1::BackendEvent& exited = due.emplace_back();
      exited.set_kind(v1::BackendEvent::TASK_EXITED);
      *exited.mutable_ref() = RefOf(key);
      exited.set_exit_code(it->second.exit_code);
      exited.set_time_us(end_us);
      tasks_.erase(it);
    }
    std::stable_sort(due.begin(), due.end(),
                     [](const v1::BackendEvent& a, const v1::BackendEvent& b) {
                       return a.time_us() < b.time_us();
                     });
    for (v1::BackendEvent& event : due) *out->add_events() = std::move(event);
    int64_t next = ends_.empty() ? 0 : ends_.begin()->first;
    auto earlier = [&next](int64_t at) {
      if (at != 0 && (next == 0 || at < next)) next = at;
    };
    if (!changes_.empty()) earlier(changes_.front().due_us);
    earlier(capacity_.NextDueUs());
    out->set_next_event_us(next);
    return PluginStatus::Ok();
  }

  PluginStatus Reconcile(v1::LiveTasks* out) override {
    std::lock_guard lock(mutex_);
    const int64_t now = host().NowUs();
    for (const auto& [key, task] : tasks_) {
      // A task whose end has passed is dead even if its exit has not been polled yet.
      if (task.end_us == 0 || task.end_us > now) *out->add_tasks() = RefOf(key);
    }
    return PluginStatus::Ok();
  }

  // ABI 1.0 hosts: the same as a MIG partition layout, with its error as the call's.
  PluginStatus ApplyMigLayout(const v1::MigLayoutRequest& request) override {
    v1::PartitionLayoutRequest partition;
    partition.set_node(request.node());
    partition.set_gpu(request.gpu());
    partition.mutable_layout()->set_sharing(v1::GPU_SHARING_MIG);
    *partition.mutable_layout()->mutable_mig_instances() = request.layout();
    partition.set_epoch(request.epoch());
    v1::PartitionLayoutResult result;
    PluginStatus status = ApplyPartitionLayout(partition, &result);
    if (status.ok() && !result.error().empty()) {
      return PluginStatus::Error(TESSERA_FAILED_PRECONDITION, result.error());
    }
    return status;
  }

  PluginStatus ApplyPartitionLayout(const v1::PartitionLayoutRequest& request,
                                    v1::PartitionLayoutResult* result) override {
    if (PluginStatus fenced = fence_.Admit(request.epoch(), "apply_partition_layout");
        !fenced.ok()) {
      return fenced;
    }
    std::lock_guard lock(mutex_);
    auto found = node_index_.find(request.node());
    if (found == node_index_.end()) {
      // It may have left since the host decided: this GPU's layout fails, nothing else.
      result->set_error("node '" + request.node() + "' is not in the inventory");
      return PluginStatus::Ok();
    }
    v1::NodeSpec& node = nodes_[found->second];
    const bool failing = failing_partition_nodes_.count(node.name()) != 0;
    PluginStatus status = partitioner_.Apply(request, failing, &node, result);
    if (status.ok() && result->error().empty()) {
      host().Log(TESSERA_LOG_DEBUG, "sim: GPU " + std::to_string(request.gpu()) + " of node '" +
                                        node.name() + "' now has layout " +
                                        request.layout().ShortDebugString());
    }
    return status;
  }

  PluginStatus NodeGroups(v1::NodeGroups* out) override {
    std::lock_guard lock(mutex_);
    *out = capacity_.Groups();
    return PluginStatus::Ok();
  }

  PluginStatus Provision(const v1::ProvisionRequest& request,
                         v1::ProvisionResult* /*out: nodes join later*/) override {
    if (PluginStatus fenced = fence_.Admit(request.epoch(), "provision"); !fenced.ok()) {
      return fenced;
    }
    std::lock_guard lock(mutex_);
    return capacity_.Provision(request, host().NowUs());
  }

  PluginStatus Deprovision(const v1::DeprovisionRequest& request) override {
    if (PluginStatus fenced = fence_.Admit(request.epoch(), "deprovision"); !fenced.ok()) {
      return fenced;
    }
    std::lock_guard lock(mutex_);
    return capacity_.Deprovision(request, host().NowUs());
  }

 private:
  void Reject(const v1::TaskRef& ref, bool retryable, const std::string& why) {
    v1::BackendEvent& rejected = started_.emplace_back();
    rejected.set_kind(v1::BackendEvent::LAUNCH_REJECTED);
    *rejected.mutable_ref() = ref;
    rejected.set_retryable(retryable);
    rejected.set_message(why);
    rejected.set_time_us(host().NowUs());
  }

  struct Task {
    std::string node;
    int64_t end_us = 0;  // host time of its exit; 0 = runs until stopped.
    int32_t exit_code = 0;
    std::vector<int> gpus;         // device indices on the node.
    double utilization_pct = 100;  // what its GPUs report (SimulationHints).
  };
  struct ScriptedChange {
    int64_t due_us = 0;  // host time.
    NodeChange change;
  };

  void IndexNodes() {
    node_index_.clear();
    for (size_t i = 0; i < nodes_.size(); ++i) node_index_[nodes_[i].name()] = i;
  }

  // Applies the scripted changes and the capacity provider's arrivals, departures and notices
  // due by `now`, in time order; each change of nodes is reported as one INVENTORY_CHANGED.
  void ApplyDueChanges(int64_t now, std::vector<v1::BackendEvent>* due) {
    std::vector<SimCapacity::Due> capacity = capacity_.TakeDue(now);
    size_t next_capacity = 0;
    while (true) {
      const bool scripted_due = !changes_.empty() && changes_.front().due_us <= now;
      const bool capacity_due = next_capacity < capacity.size();
      if (!scripted_due && !capacity_due) break;
      if (scripted_due &&
          (!capacity_due || changes_.front().due_us <= capacity[next_capacity].at_us)) {
        const ScriptedChange scripted = std::move(changes_.front());
        changes_.pop_front();
        ApplyChange(scripted.change, scripted.due_us, due);
        continue;
      }
      SimCapacity::Due& arrived = capacity[next_capacity++];
      NodeChange change;
      change.join = std::move(arrived.join);
      change.leave = std::move(arrived.leave);
      if (!change.join.empty() || !change.leave.empty()) ApplyChange(change, arrived.at_us, due);
      for (v1::BackendEvent& event : arrived.events) {
        host().Log(TESSERA_LOG_INFO, "sim: " + event.message());
        due->push_back(std::move(event));
      }
    }
  }

  void ApplyChange(const NodeChange& change, int64_t due_us, std::vector<v1::BackendEvent>* due) {
    const std::set<std::string> leaving(change.leave.begin(), change.leave.end());
    std::set<std::string> rejoining;  // left and joined in one change: the node changed shape.
    for (const v1::NodeSpec& node : change.join) {
      if (leaving.count(node.name()) != 0) rejoining.insert(node.name());
    }
    std::erase_if(nodes_,
                  [&leaving](const v1::NodeSpec& n) { return leaving.count(n.name()) != 0; });
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      if (leaving.count(it->second.node) == 0 || rejoining.count(it->second.node) != 0) {
        ++it;
        continue;
      }
      if (it->second.end_us != 0) ends_.erase({it->second.end_us, it->first});
      it = tasks_.erase(it);
    }
    const std::set<std::string> evicting(change.evict.begin(), change.evict.end());
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      if (evicting.count(it->second.node) == 0) {
        ++it;
        continue;
      }
      if (it->second.end_us != 0) ends_.erase({it->second.end_us, it->first});
      v1::BackendEvent& lost = due->emplace_back();
      lost.set_kind(v1::BackendEvent::TASK_LOST);
      *lost.mutable_ref() = RefOf(it->first);
      lost.set_message("evicted from node '" + it->second.node + "'");
      lost.set_time_us(due_us);
      it = tasks_.erase(it);
    }
    for (const std::string& node : change.interrupt) {
      if (node_index_.count(node) == 0) continue;  // gone already.
      v1::BackendEvent& notice = due->emplace_back();
      notice.set_kind(v1::BackendEvent::SPOT_INTERRUPTION);
      notice.set_node(node);
      notice.set_time_us(due_us);
      notice.set_deadline_us(AfterMs(due_us, change.notice_ms));
      notice.set_message("spot node '" + node + "' is taken back in " +
                         std::to_string(change.notice_ms / 1000) + " s");
      ScriptedChange reclaim{notice.deadline_us(), {}};
      reclaim.change.leave.push_back(node);
      auto later = std::find_if(changes_.begin(), changes_.end(),
                                [&](const ScriptedChange& c) { return c.due_us > reclaim.due_us; });
      changes_.insert(later, std::move(reclaim));
    }
    for (const v1::NodeSpec& node : change.join) {
      if (node_index_.count(node.name()) != 0 && leaving.count(node.name()) == 0) {
        host().Log(TESSERA_LOG_WARN, "sim: node '" + node.name() + "' joins twice; ignored");
        continue;
      }
      nodes_.push_back(node);
      partitioner_.DescribeDevices(&nodes_.back());
    }
    IndexNodes();
    if (change.join.empty() && leaving.empty()) return;  // evictions only.
    v1::BackendEvent& changed = due->emplace_back();
    changed.set_kind(v1::BackendEvent::INVENTORY_CHANGED);
    changed.set_time_us(due_us);
    changed.set_message(std::to_string(change.join.size()) + " node(s) joined, " +
                        std::to_string(leaving.size()) + " left");
    host().Log(TESSERA_LOG_INFO, "sim: " + changed.message());
  }

  const v1::NodeSpec* FindNode(const std::string& name) const {
    auto it = node_index_.find(name);
    return it == node_index_.end() ? nullptr : &nodes_[it->second];
  }

  std::mutex mutex_;
  std::vector<v1::NodeSpec> nodes_;        // changed by MIG layouts and changes_.
  std::deque<ScriptedChange> changes_;     // not yet due, earliest first.
  std::set<std::string> rejecting_nodes_;  // launches there are refused.
  bool rejections_final_ = false;
  std::set<std::string> failing_partition_nodes_;  // partition layouts fail there.
  bool report_telemetry_ = false;                  // SimulatedCluster.report_telemetry.
  SimPartitioner partitioner_;
  SimCapacity capacity_;
  plugin::EpochFence fence_;
  std::unordered_map<std::string, size_t> node_index_;  // name -> position in nodes_.
  std::map<TaskKey, Task> tasks_;                       // known: live, or exit not yet polled.
  std::set<std::pair<int64_t, TaskKey>> ends_;          // (end_us, task) of tasks with an end.
  std::vector<v1::BackendEvent> started_;  // TASK_STARTED, LAUNCH_REJECTED not yet polled.
};

}  // namespace
}  // namespace tessera::sim

TESSERA_PLUGIN(tessera::sim::SimBackend, "sim", "1.1.0",
               TESSERA_PLUGIN_KIND_EXECUTOR | TESSERA_PLUGIN_KIND_PARTITIONER |
                   TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER)
