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

#include "sim_cluster.h"
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
    const int64_t start_us = host().NowUs();
    for (NodeChange& change : parsed.changes) {
      changes_.push_back({AfterMs(start_us, change.at_ms), std::move(change)});
    }
    IndexNodes();
    int gpus = 0;
    for (const v1::NodeSpec& node : nodes_) gpus += node.gpus_size();
    host().Log(TESSERA_LOG_INFO, "sim: " + std::to_string(nodes_.size()) + " nodes, " +
                                     std::to_string(gpus) + " GPUs");
    return PluginStatus::Ok();
  }

  PluginStatus Inventory(v1::Inventory* out) override {
    std::lock_guard lock(mutex_);
    for (const v1::NodeSpec& node : nodes_) *out->add_nodes() = node;
    return PluginStatus::Ok();
  }

  PluginStatus Launch(const v1::LaunchTask& request) override {
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
    if (request.simulation().duration_ms() < 0) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                 "simulation.duration_ms: must be >= 0, got " +
                                     std::to_string(request.simulation().duration_ms()));
    }
    const int64_t now = host().NowUs();
    Task& task = tasks_[key];
    task.node = request.node();
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
    if (!changes_.empty() && (next == 0 || changes_.front().due_us < next)) {
      next = changes_.front().due_us;
    }
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

  // Simulated GPUs take a new layout at once (a real partitioner may fail; see the mig backend).
  // Whether the layout is valid for the model is the scheduler's check; this one only needs the
  // GPU to exist and be in MIG mode.
  PluginStatus ApplyMigLayout(const v1::MigLayoutRequest& request) override {
    std::lock_guard lock(mutex_);
    auto found = node_index_.find(request.node());
    if (found == node_index_.end()) {
      return PluginStatus::Error(TESSERA_NOT_FOUND, "node: unknown node '" + request.node() + "'");
    }
    v1::NodeSpec& node = nodes_[found->second];
    if (request.gpu() < 0 || request.gpu() >= node.gpus_size()) {
      return PluginStatus::Error(TESSERA_NOT_FOUND, "gpu: node '" + node.name() + "' has no GPU " +
                                                        std::to_string(request.gpu()));
    }
    v1::GpuDevice* gpu = node.mutable_gpus(request.gpu());
    if (gpu->sharing() != v1::GPU_SHARING_MIG) {
      return PluginStatus::Error(TESSERA_FAILED_PRECONDITION,
                                 "gpu: GPU " + std::to_string(request.gpu()) + " of node '" +
                                     node.name() + "' is not in MIG mode (sharing " +
                                     v1::GpuSharing_Name(gpu->sharing()) + ")");
    }
    for (int j = 0; j < request.layout_size(); ++j) {
      const v1::MigInstance& m = request.layout(j);
      const std::string field = "layout[" + std::to_string(j) + "].";
      if (m.profile().empty()) {
        return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, field + "profile: must not be empty");
      }
      if (m.start() < 0 || m.start() > 7) {
        return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                   field + "start: must be 0..7, got " + std::to_string(m.start()));
      }
    }
    *gpu->mutable_mig_instances() = request.layout();
    host().Log(TESSERA_LOG_DEBUG, "sim: node '" + node.name() + "' GPU " +
                                      std::to_string(request.gpu()) + " now has " +
                                      std::to_string(request.layout_size()) + " MIG instances");
    return PluginStatus::Ok();
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
  };
  struct ScriptedChange {
    int64_t due_us = 0;  // host time.
    NodeChange change;
  };

  void IndexNodes() {
    node_index_.clear();
    for (size_t i = 0; i < nodes_.size(); ++i) node_index_[nodes_[i].name()] = i;
  }

  // Applies the scripted changes due by `now`, each reported as one INVENTORY_CHANGED.
  void ApplyDueChanges(int64_t now, std::vector<v1::BackendEvent>* due) {
    while (!changes_.empty() && changes_.front().due_us <= now) {
      const ScriptedChange scripted = std::move(changes_.front());
      changes_.pop_front();
      const std::set<std::string> leaving(scripted.change.leave.begin(),
                                          scripted.change.leave.end());
      std::set<std::string> rejoining;  // left and joined in one change: the node changed shape.
      for (const v1::NodeSpec& node : scripted.change.join) {
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
      const std::set<std::string> evicting(scripted.change.evict.begin(),
                                           scripted.change.evict.end());
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
        lost.set_time_us(scripted.due_us);
        it = tasks_.erase(it);
      }
      for (const v1::NodeSpec& node : scripted.change.join) {
        if (node_index_.count(node.name()) != 0 && leaving.count(node.name()) == 0) {
          host().Log(TESSERA_LOG_WARN, "sim: node '" + node.name() + "' joins twice; ignored");
          continue;
        }
        nodes_.push_back(node);
      }
      IndexNodes();
      if (scripted.change.join.empty() && leaving.empty()) continue;  // evictions only.
      v1::BackendEvent& changed = due->emplace_back();
      changed.set_kind(v1::BackendEvent::INVENTORY_CHANGED);
      changed.set_time_us(scripted.due_us);
      changed.set_message(std::to_string(scripted.change.join.size()) + " node(s) joined, " +
                          std::to_string(leaving.size()) + " left");
      host().Log(TESSERA_LOG_INFO, "sim: " + changed.message());
    }
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
  std::unordered_map<std::string, size_t> node_index_;  // name -> position in nodes_.
  std::map<TaskKey, Task> tasks_;                       // known: live, or exit not yet polled.
  std::set<std::pair<int64_t, TaskKey>> ends_;          // (end_us, task) of tasks with an end.
  std::vector<v1::BackendEvent> started_;  // TASK_STARTED, LAUNCH_REJECTED not yet polled.
};

}  // namespace
}  // namespace tessera::sim

TESSERA_PLUGIN(tessera::sim::SimBackend, "sim", "1.0.0",
               TESSERA_PLUGIN_KIND_EXECUTOR | TESSERA_PLUGIN_KIND_PARTITIONER)
