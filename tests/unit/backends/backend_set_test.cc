// BackendSet routes each request to the member that owns the node or runs the task, and passes
// members' reports on to the engine.
#include "backends/backend_set.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace tessera {
namespace {

// Records what it is asked.
class RecordingExecutor : public Executor {
 public:
  explicit RecordingExecutor(std::vector<std::string> nodes) {
    for (const std::string& name : nodes) {
      v1::NodeSpec node;
      node.set_name(name);
      inventory.push_back(node);
    }
  }
  std::vector<v1::NodeSpec> Inventory() override { return inventory; }
  void Launch(const LaunchRequest& request) override { launched.push_back(request.ref); }
  void Stop(const TaskRef& task, int64_t) override { stopped.push_back(task); }
  void Resize(const TaskRef& job, int tasks) override { resized.push_back(tasks); }
  void ApplyMigLayout(const std::string& node, int, const std::vector<v1::MigInstance>&) override {
    layouts.push_back(node);
  }
  std::vector<TaskRef> LiveTasks() override { return live; }

  std::vector<v1::NodeSpec> inventory;
  std::vector<TaskRef> live;
  std::vector<TaskRef> launched, stopped;
  std::vector<int> resized;
  std::vector<std::string> layouts;
};

class RecordingEvents : public ExecutorEvents {
 public:
  void OnTaskStarted(const TaskRef& task) override { started.push_back(task); }
  void OnTaskExited(const TaskRef& task, int) override { exited.push_back(task); }
  void OnTaskLost(const TaskRef& task, const std::string&) override { lost.push_back(task); }
  void OnLaunchRejected(const TaskRef& task, bool retryable, const std::string& why) override {
    rejected.push_back(task);
    last_retryable = retryable;
    last_why = why;
  }
  std::vector<TaskRef> started, exited, lost, rejected;
  bool last_retryable = false;
  std::string last_why;
};

LaunchRequest On(const std::string& node, TaskRef ref) {
  LaunchRequest request;
  request.node = node;
  request.ref = ref;
  return request;
}

struct TwoMembers {
  RecordingEvents engine;
  BackendSet set{engine, LogOptions{}};
  RecordingExecutor a{{"a-0", "a-1"}};
  RecordingExecutor b{{"b-0", "a-1"}};  // a-1 clashes with a's.
  BackendSet::Member ma = set.Add("a", &a);
  BackendSet::Member mb = set.Add("b", &b);

  TwoMembers() {
    set.TakeInventory(ma, a.inventory);
    set.TakeInventory(mb, b.inventory);
  }
};

TEST_CASE("backend set: a node belongs to the member that reported it first") {
  TwoMembers t;
  CHECK(t.set.NodesOf(t.ma) == std::vector<std::string>{"a-0", "a-1"});
  CHECK(t.set.NodesOf(t.mb) == std::vector<std::string>{"b-0"});
  CHECK(t.set.OwnerOf("a-1") == t.ma);
  CHECK(t.set.OwnerOf("nowhere") == -1);
  const std::vector<v1::NodeSpec> offered = t.set.Inventory();
  REQUIRE(offered.size() == 3);  // b's a-1 is not offered.
  // Each node is labelled with its backend's name.
  CHECK(offered[0].labels().at(BackendSet::kBackendLabel) == "a");
  CHECK(offered[2].labels().at(BackendSet::kBackendLabel) == "b");
  // b cannot change or remove a node it does not own.
  InventoryDiff diff;
  diff.removed = {"a-1"};
  diff.changed.push_back(t.b.inventory[1]);
  const InventoryDiff taken = t.set.TakeChange(t.mb, diff);
  CHECK(taken.empty());
  CHECK(t.set.OwnerOf("a-1") == t.ma);
  // Once a lets it go, the name is free for b.
  InventoryDiff gone;
  gone.removed = {"a-1"};
  CHECK(t.set.TakeChange(t.ma, gone).removed.size() == 1);
  InventoryDiff joins;
  joins.added.push_back(t.b.inventory[1]);
  CHECK(t.set.TakeChange(t.mb, joins).added.size() == 1);
  CHECK(t.set.OwnerOf("a-1") == t.mb);
}

TEST_CASE("backend set: launches go to the node's owner; stops to where the task runs") {
  TwoMembers t;
  t.set.Launch(On("b-0", {1, 1, 0}));
  t.set.Launch(On("a-0", {2, 1, 0}));
  CHECK(t.b.launched.size() == 1);
  CHECK(t.a.launched.size() == 1);
  t.set.Stop({1, 1, 0}, 0);
  CHECK(t.b.stopped.size() == 1);
  CHECK(t.a.stopped.empty());
  // Once a task has exited, a stop for it goes nowhere.
  t.set.OnTaskExited({2, 1, 0}, 0);
  CHECK(t.engine.exited.size() == 1);
  t.set.Stop({2, 1, 0}, 0);
  CHECK(t.a.stopped.empty());
}

TEST_CASE("backend set: a launch for a node no member owns is refused, retryable") {
  TwoMembers t;
  t.set.Launch(On("gone", {3, 1, 0}));
  REQUIRE(t.engine.rejected.size() == 1);
  CHECK(t.engine.last_retryable);
  CHECK(t.engine.last_why.find("node 'gone'") != std::string::npos);
}

TEST_CASE("backend set: a resize reaches every member running a task of the job") {
  TwoMembers t;
  t.set.Launch(On("a-0", {5, 2, 0}));
  t.set.Launch(On("b-0", {5, 2, 1}));
  t.set.Launch(On("a-0", {6, 1, 0}));
  t.set.Resize({5, 2, 0}, 1);
  CHECK(t.a.resized == std::vector<int>{1});
  CHECK(t.b.resized == std::vector<int>{1});
}

TEST_CASE("backend set: a partitioner re-partitions the nodes of the member it serves") {
  TwoMembers t;
  t.set.SetPartitioner(t.mb, t.ma);
  t.set.ApplyMigLayout("b-0", 0, {});
  t.set.ApplyMigLayout("a-0", 0, {});
  CHECK(t.a.layouts == std::vector<std::string>{"b-0", "a-0"});
  CHECK(t.b.layouts.empty());
}

TEST_CASE("backend set: a restarted member's tasks are forgotten, then its live ones taken") {
  TwoMembers t;
  t.set.Launch(On("a-0", {7, 1, 0}));
  t.set.Launch(On("b-0", {8, 1, 0}));
  const std::set<TaskRef> forgotten = t.set.ForgetTasks(t.ma);
  CHECK(forgotten == std::set<TaskRef>{{7, 1, 0}});
  RecordingExecutor fresh{{"a-0", "a-1"}};
  t.set.Replace(t.ma, &fresh);
  t.set.TakeLiveTasks(t.ma, {{7, 1, 0}});
  t.set.Stop({7, 1, 0}, 0);
  CHECK(fresh.stopped.size() == 1);
  CHECK(t.a.stopped.empty());
  t.set.Stop({8, 1, 0}, 0);
  CHECK(t.b.stopped.size() == 1);
}

}  // namespace
}  // namespace tessera
