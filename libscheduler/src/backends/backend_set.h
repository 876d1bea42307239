// BackendSet: the engine's one Executor in front of several backends, each serving its own
// nodes.
//
// Every node belongs to the member that reported it first; a node another member reports under
// the same name is refused (and logged), so a name always means one machine. Requests go where
// the node or task lives:
//   Launch          the member that owns the request's node;
//   Stop            the member the task was launched on (or that reported it live at open);
//   Resize          every member that runs a task of the job (a gang may span backends);
//   ApplyMigLayout  the node's partitioner: the member that `partitions` its owner, else the
//                   owner itself (its result reaches the owner through the scheduler, for
//                   the devices of the owner's launches).
// Members report through the set (it is their ExecutorEvents), which forgets a task once it has
// exited, was lost or was refused, and passes every report on to the engine.
//
// Every node the set takes carries the label `tessera.io/backend: <member name>`, so a job can
// ask for a backend by name (node_selector) like for any other label.
//
// A launch for a node no member owns (it left between placement and launch) is refused as
// retryable, so the job is placed again.
//
// Strand only, like every Executor; members are not owned (a member's executor is replaced when
// its plugin is restarted).
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/executor.h"
#include "model/inventory_diff.h"
#include "tessera/logging.h"

namespace tessera {

class BackendSet final : public Executor, public ExecutorEvents {
 public:
  using Member = int;
  // The label naming a node's backend.
  static constexpr const char* kBackendLabel = "tessera.io/backend";

  BackendSet(ExecutorEvents& engine, LogOptions log) : engine_(engine), log_(std::move(log)) {}

  // Adds a member; it owns none of its nodes until TakeInventory or TakeChange hands them over.
  Member Add(std::string name, Executor* executor);
  // The member's executor was replaced (its plugin restarted): later requests go to `executor`.
  void Replace(Member member, Executor* executor) { members_[member].executor = executor; }
  // ApplyMigLayout for nodes of `owner` goes to `partitioner`.
  void SetPartitioner(Member owner, Member partitioner) {
    members_[owner].partitioner = partitioner;
  }

  // The member's first inventory: the nodes it may own. Nodes that another member owns already
  // are left out of the result (and logged); the rest become the member's.
  std::vector<v1::NodeSpec> TakeInventory(Member member, const std::vector<v1::NodeSpec>& nodes);
  // A change the member reported: what it may apply (nodes added under a name another member
  // owns are dropped; nodes it does not own are neither changed nor removed).
  InventoryDiff TakeChange(Member member, const InventoryDiff& diff);
  // Tasks the member reported live (at open, or after a restart): Stop reaches them there.
  void TakeLiveTasks(Member member, const std::vector<TaskRef>& tasks);
  // Forgets the tasks launched on the member (its plugin was lost; a restarted one reports
  // what still lives) and returns them.
  std::set<TaskRef> ForgetTasks(Member member);

  const std::string& name(Member member) const { return members_[member].name; }
  int size() const { return static_cast<int>(members_.size()); }
  // The member's nodes, by name.
  std::vector<std::string> NodesOf(Member member) const;
  // The member that owns `node`, or -1.
  Member OwnerOf(const std::string& node) const;

  // Executor.
  std::vector<v1::NodeSpec> Inventory() override;
  void Launch(const LaunchRequest& request) override;
  void Stop(const TaskRef& task, int64_t grace_ms) override;
  void Resize(const TaskRef& job, int tasks) override;
  void ApplyMigLayout(const std::string& node, int gpu,
                      const std::vector<v1::MigInstance>& layout) override;
  std::vector<TaskRef> LiveTasks() override;
  bool Busy() const override;

  // ExecutorEvents: what members report, passed on to the engine.
  void OnTaskStarted(const TaskRef& task) override { engine_.OnTaskStarted(task); }
  void OnTaskExited(const TaskRef& task, int exit_code) override;
  void OnTaskLost(const TaskRef& task, const std::string& why) override;
  void OnLaunchRejected(const TaskRef& task, bool retryable, const std::string& why) override;

 private:
  struct Entry {
    std::string name;
    Executor* executor = nullptr;
    Member partitioner = -1;  // -1: the member itself.
  };

  ExecutorEvents& engine_;
  const LogOptions log_;
  std::vector<Entry> members_;
  std::unordered_map<std::string, Member> owner_;  // node name -> member.
  std::map<TaskRef, Member> task_member_;          // tasks launched and not yet ended.
};

}  // namespace tessera
