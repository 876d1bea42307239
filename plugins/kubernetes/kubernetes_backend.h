// The Kubernetes backend: Tessera decides, Kubernetes runs.
//
// An executor plugin (docs/kubernetes.md) over the Kubernetes REST API (plugins/common/kube):
//   - nodes: every Node (or those matching node_selector) that is Ready, as the scheduler's nodes
//     (node_inventory.h); a node that joins, changes, goes NotReady or away is an inventory
//     change, so the tasks of a node that left are requeued;
//   - tasks: each placed task becomes a pod bound to the node chosen (pod_manifest.h), created
//     by a few worker threads (work_queue.h) so that a gang's pods go out together; its phases
//     become task events (pod_outcome.h); stop and cancel are deletes with the job's grace;
//   - after a restart, Reconcile lists the pods labelled with this backend's name and the pods
//     it took in and bound (annotated with its name): those still running are the live tasks,
//     so nothing runs twice;
//   - pods made by others with `spec.schedulerName` = scheduler_name are taken in as jobs
//     (pod_intake.h, BackendEvent SUBMIT_JOB) and bound when their job is placed, in one call
//     (a Binding with the pod's uid and the task's annotations); from then on the same
//     schedulerName watch follows them; deleting such a pod cancels its job (WITHDRAW_JOB);
//   - pods bound to its nodes by others (count_others_pods) are subtracted from what each node
//     offers (foreign_pods.h).
//
// Threading: the host's calls come on its operation lanes; up to four list-watch loops (nodes,
// this backend's pods and others' bound pods from Init, pods addressed to the scheduler from
// Start) run on their own threads; events from before Start wait for it, or for PollEvents;
// API calls that change pods run on the work queue. `mu_` guards the shared maps; events are
// emitted after it is released.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "foreign_pods.h"
#include "kube/kube_client.h"
#include "kube/list_watch.h"
#include "kube_backend_config.h"
#include "pod_intake.h"
#include "pod_manifest.h"
#include "tessera/plugin/plugin.h"
#include "work_queue.h"

namespace tessera::kubernetes {

inline constexpr char kPluginName[] = "kubernetes";
inline constexpr char kPluginVersion[] = "0.1.0";
inline constexpr uint32_t kPluginKinds = TESSERA_PLUGIN_KIND_EXECUTOR;

class KubernetesBackend : public plugin::Plugin {
 public:
  explicit KubernetesBackend(plugin::Host host);
  ~KubernetesBackend() override;

  plugin::PluginStatus Init(const std::string& config) override;
  plugin::PluginStatus Start(const v1::StartRequest& request) override;
  void Shutdown() override;
  plugin::PluginStatus Inventory(v1::Inventory* out) override;
  plugin::PluginStatus Launch(const v1::LaunchTask& request) override;
  plugin::PluginStatus Stop(const v1::StopTask& request) override;
  plugin::PluginStatus Reconcile(v1::LiveTasks* out) override;
  // Events from before Start (a host of ABI 1.0 never calls it, and polls).
  plugin::PluginStatus PollEvents(v1::BackendEvents* out) override;

 private:
  using TaskKey = std::tuple<uint64_t, int32_t, int32_t>;
  struct TaskState {
    std::string namespace_name;
    std::string pod;
    std::string external_id;  // a pod taken in: its job's external id.
    std::string uid;          // a pod taken in, once bound here: the uid it was bound with.
    bool started = false;
    bool ended = false;
    bool stopping = false;
    int64_t stop_grace_s = 0;
    // Its create or bind is under way: a stop that finds no pod leaves the delete to it.
    bool making = false;
    // Taken in and deleted by its owner: its job was withdrawn, and the task ends when the
    // scheduler stops it (so the job ends CANCELLED, not FAILED with the kill's exit code).
    bool withdrawn = false;
  };
  // Claims the task's launch for the work queue; false (and the task reported ended) when it
  // was stopped first.
  bool BeginMaking(const v1::TaskRef& ref);
  // The launch is done: delete the pod made when a stop came meanwhile.
  void EndMaking(const v1::TaskRef& ref, bool made, std::stop_token stop);
  struct IntakeEntry {
    IntakePod pod;
    nlohmann::json object;
  };
  class NodeHandler;
  class PodHandler;
  class IntakeHandler;
  class ForeignHandler;

  static TaskKey KeyOf(const v1::TaskRef& ref) { return {ref.job(), ref.attempt(), ref.task()}; }

  // Node watch.
  void OnNode(const nlohmann::json& node, bool deleted);
  // Translates these nodes again from their last object less what others use there; an
  // inventory change when what is offered changed.
  void Offer(const std::vector<std::string>& names);
  // The same for one node (mu_ held); true when its offer changed.
  bool OfferLocked(const std::string& name, std::vector<std::string>* logs);
  // Pods bound by others (mu_ not held).
  void OnForeignPod(const nlohmann::json& pod, bool deleted);
  // This backend's own pods.
  void OnPod(const nlohmann::json& pod, bool deleted);
  // A pod of a task of this backend (its own, or taken in and bound) changed or went.
  void FollowPod(const nlohmann::json& pod, bool deleted, const v1::TaskRef& ref);
  // What the pod's status means for its task, once (mu_ held).
  void ReportOutcome(const nlohmann::json& pod, bool deleted, const v1::TaskRef& ref,
                     TaskState& state, std::vector<v1::BackendEvent>* out);
  // Pods addressed to the scheduler.
  void OnIntakePod(const nlohmann::json& pod, bool deleted);
  void SubmitWaiting(const std::string& namespace_name, const std::string& group,
                     std::vector<v1::BackendEvent>* out, const std::string& only_uid = "");
  void ResubmitEvery(std::chrono::seconds interval, std::stop_token stop);

  void CreatePod(const v1::LaunchTask& task, nlohmann::json pod, std::stop_token stop);
  void BindPod(const v1::LaunchTask& task, std::stop_token stop);
  // Binds the pod taken in to the task's node, one Binding that names the pod's uid and carries
  // the task's annotations; false (the launch reported rejected) when it fails.
  bool Bind(const v1::LaunchTask& task, const std::string& namespace_name, const std::string& pod,
            const std::string& uid, std::stop_token stop);
  void DeletePod(const v1::TaskRef& ref, const std::string& namespace_name, const std::string& pod,
                 int64_t grace_s, std::stop_token stop);

  void Emit(const std::vector<v1::BackendEvent>& events);
  v1::BackendEvent TaskEvent(v1::BackendEvent::Kind kind, const v1::TaskRef& ref) const;
  void Rejected(const v1::TaskRef& ref, bool retryable, const std::string& why);
  void Log(int level, const std::string& message) const;

  KubeBackendConfig config_;
  PodOptions pod_options_;
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<NodeHandler> node_handler_;
  std::unique_ptr<PodHandler> pod_handler_;
  std::unique_ptr<IntakeHandler> intake_handler_;
  std::unique_ptr<ForeignHandler> foreign_handler_;
  std::unique_ptr<kube::ListWatch> node_watch_;
  std::unique_ptr<kube::ListWatch> pod_watch_;
  std::unique_ptr<kube::ListWatch> intake_watch_;
  std::unique_ptr<kube::ListWatch> foreign_watch_;
  std::unique_ptr<WorkQueue> work_;

  std::mutex mu_;
  std::condition_variable nodes_synced_cv_;
  bool nodes_synced_ = false;                           // guarded by mu_
  bool foreign_synced_ = false;                         // guarded by mu_
  bool started_ = false;                                // guarded by mu_
  std::map<std::string, nlohmann::json> node_objects_;  // every Node seen; guarded by mu_
  std::map<std::string, v1::NodeSpec> nodes_;           // offered nodes; guarded by mu_
  ForeignPods foreign_;                                 // others' pods on the nodes; guarded by mu_
  std::map<std::string, std::string> excluded_;         // node -> why not offered; guarded by mu_
  std::map<TaskKey, TaskState> tasks_;                  // guarded by mu_
  std::map<std::string, IntakeEntry> intake_;           // waiting pods by uid; guarded by mu_
  std::set<std::string> submitted_;                     // external ids submitted; guarded by mu_
  std::map<std::string, std::string> refused_;          // uid -> why it cannot be taken in
  std::vector<v1::BackendEvent> pending_;               // before Start; guarded by mu_
  // Submits every waiting pod again each resubmit_interval_s (submits are idempotent).
  std::condition_variable_any resubmit_cv_;
  std::jthread resubmitter_;
};

}  // namespace tessera::kubernetes
