#include "backends/backend_set.h"

#include "common/log.h"

namespace tessera {

BackendSet::Member BackendSet::Add(std::string name, Executor* executor) {
  Entry entry;
  entry.name = std::move(name);
  entry.executor = executor;
  members_.push_back(std::move(entry));
  return static_cast<Member>(members_.size() - 1);
}

std::vector<v1::NodeSpec> BackendSet::TakeInventory(Member member,
                                                    const std::vector<v1::NodeSpec>& nodes) {
  InventoryDiff diff;
  diff.added = nodes;
  return TakeChange(member, diff).added;
}

namespace {

v1::NodeSpec Labelled(const v1::NodeSpec& node, const std::string& backend) {
  v1::NodeSpec labelled = node;
  (*labelled.mutable_labels())[BackendSet::kBackendLabel] = backend;
  return labelled;
}

}  // namespace

InventoryDiff BackendSet::TakeChange(Member member, const InventoryDiff& diff) {
  const std::string& name = members_[member].name;
  InventoryDiff taken;
  for (const v1::NodeSpec& node : diff.added) {
    auto [it, inserted] = owner_.emplace(node.name(), member);
    if (!inserted && it->second != member) {
      LogWarning(log_, "backend '{}' reports node '{}', which backend '{}' has: ignored", name,
                 node.name(), members_[it->second].name);
      continue;
    }
    taken.added.push_back(Labelled(node, name));
  }
  for (const v1::NodeSpec& node : diff.changed) {
    if (OwnerOf(node.name()) == member) taken.changed.push_back(Labelled(node, name));
  }
  for (const std::string& node : diff.removed) {
    if (OwnerOf(node) != member) continue;
    owner_.erase(node);
    taken.removed.push_back(node);
  }
  return taken;
}

void BackendSet::TakeLiveTasks(Member member, const std::vector<TaskRef>& tasks) {
  for (const TaskRef& task : tasks) task_member_[task] = member;
}

std::set<TaskRef> BackendSet::ForgetTasks(Member member) {
  std::set<TaskRef> forgotten;
  for (auto it = task_member_.begin(); it != task_member_.end();) {
    if (it->second == member) {
      forgotten.insert(it->first);
      it = task_member_.erase(it);
    } else {
      ++it;
    }
  }
  return forgotten;
}

std::vector<std::string> BackendSet::NodesOf(Member member) const {
  std::vector<std::string> nodes;
  for (const auto& [node, owner] : owner_) {
    if (owner == member) nodes.push_back(node);
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

BackendSet::Member BackendSet::OwnerOf(const std::string& node) const {
  auto it = owner_.find(node);
  return it == owner_.end() ? -1 : it->second;
}

std::vector<v1::NodeSpec> BackendSet::Inventory() {
  std::vector<v1::NodeSpec> nodes;
  for (Member m = 0; m < size(); ++m) {
    for (const v1::NodeSpec& node : members_[m].executor->Inventory()) {
      if (OwnerOf(node.name()) == m) nodes.push_back(Labelled(node, members_[m].name));
    }
  }
  return nodes;
}

void BackendSet::Launch(const LaunchRequest& request) {
  const Member owner = OwnerOf(request.node);
  if (owner < 0) {
    engine_.OnLaunchRejected(request.ref, /*retryable=*/true,
                             "node '" + request.node + "' is no longer offered by any backend");
    return;
  }
  task_member_[request.ref] = owner;
  members_[owner].executor->Launch(request);
}

void BackendSet::Stop(const TaskRef& task, int64_t grace_ms) {
  auto it = task_member_.find(task);
  if (it == task_member_.end()) return;  // ended already, or never reached a backend.
  members_[it->second].executor->Stop(task, grace_ms);
}

void BackendSet::Resize(const TaskRef& job, int tasks) {
  std::set<Member> running;
  for (auto it = task_member_.lower_bound(TaskRef{job.job, job.attempt, 0});
       it != task_member_.end() && it->first.job == job.job && it->first.attempt == job.attempt;
       ++it) {
    running.insert(it->second);
  }
  for (Member m : running) members_[m].executor->Resize(job, tasks);
}

void BackendSet::ApplyMigLayout(const std::string& node, int gpu,
                                const std::vector<v1::MigInstance>& layout) {
  const Member owner = OwnerOf(node);
  if (owner < 0) return;  // the node left; the engine forgets its layout with it.
  const Member partitioner = members_[owner].partitioner;
  members_[partitioner < 0 ? owner : partitioner].executor->ApplyMigLayout(node, gpu, layout);
}

std::vector<TaskRef> BackendSet::LiveTasks() {
  std::vector<TaskRef> live;
  for (const Entry& member : members_) {
    std::vector<TaskRef> tasks = member.executor->LiveTasks();
    live.insert(live.end(), tasks.begin(), tasks.end());
  }
  std::sort(live.begin(), live.end());
  return live;
}

bool BackendSet::Busy() const {
  for (const Entry& member : members_) {
    if (member.executor->Busy()) return true;
  }
  return false;
}

void BackendSet::OnTaskExited(const TaskRef& task, int exit_code) {
  task_member_.erase(task);
  engine_.OnTaskExited(task, exit_code);
}

void BackendSet::OnTaskLost(const TaskRef& task, const std::string& why) {
  task_member_.erase(task);
  engine_.OnTaskLost(task, why);
}

void BackendSet::OnLaunchRejected(const TaskRef& task, bool retryable, const std::string& why) {
  task_member_.erase(task);
  engine_.OnLaunchRejected(task, retryable, why);
}

}  // namespace tessera
