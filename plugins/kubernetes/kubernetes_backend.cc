#include "kubernetes_backend.h"

#include <algorithm>
#include <chrono>

#include "json_fields.h"
#include "kube/in_cluster.h"
#include "kube/kubeconfig.h"
#include "kube/resource_path.h"
#include "node_inventory.h"
#include "pod_outcome.h"

namespace tessera::kubernetes {
namespace {

using nlohmann::json;
using plugin::PluginStatus;

// The exit code of a task whose pod was deleted before it ended (stopped, or deleted by
// someone): SIGTERM's, as for a process the local backend stops.
constexpr int kDeletedExitCode = 143;

bool Terminal(const json& pod) {
  const std::string phase =
      pod.is_object() ? pod.value("status", json::object()).value("phase", "") : "";
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace

// --- The three list-watch handlers: each hands the change to the backend.

class KubernetesBackend::NodeHandler : public kube::ListWatchHandler {
 public:
  explicit NodeHandler(KubernetesBackend* backend) : backend_(backend) {}
  void OnSync(const kube::ListSync& sync) override {
    for (const json& node : sync.diff.deleted) backend_->OnNode(node, true);
    for (const json& node : sync.diff.added) backend_->OnNode(node, false);
    for (const json& node : sync.diff.modified) backend_->OnNode(node, false);
    std::lock_guard<std::mutex> lock(backend_->mu_);
    backend_->nodes_synced_ = true;
    backend_->nodes_synced_cv_.notify_all();
  }
  void OnEvent(const kube::WatchEvent& event) override {
    backend_->OnNode(event.object, event.type == kube::WatchEventType::kDeleted);
  }
  void OnError(const kube::KubeError& error) override {
    backend_->Log(2, "watching nodes: " + error.ToString());
  }

 private:
  KubernetesBackend* backend_;
};

class KubernetesBackend::PodHandler : public kube::ListWatchHandler {
 public:
  explicit PodHandler(KubernetesBackend* backend) : backend_(backend) {}
  void OnSync(const kube::ListSync& sync) override {
    for (const json& pod : sync.diff.deleted) backend_->OnPod(pod, true);
    for (const json& pod : sync.diff.added) backend_->OnPod(pod, false);
    for (const json& pod : sync.diff.modified) backend_->OnPod(pod, false);
  }
  void OnEvent(const kube::WatchEvent& event) override {
    backend_->OnPod(event.object, event.type == kube::WatchEventType::kDeleted);
  }
  void OnError(const kube::KubeError& error) override {
    backend_->Log(2, "watching pods: " + error.ToString());
  }

 private:
  KubernetesBackend* backend_;
};

class KubernetesBackend::IntakeHandler : public kube::ListWatchHandler {
 public:
  explicit IntakeHandler(KubernetesBackend* backend) : backend_(backend) {}
  void OnSync(const kube::ListSync& sync) override {
    for (const json& pod : sync.diff.deleted) backend_->OnIntakePod(pod, true);
    for (const json& pod : sync.diff.added) backend_->OnIntakePod(pod, false);
    for (const json& pod : sync.diff.modified) backend_->OnIntakePod(pod, false);
  }
  void OnEvent(const kube::WatchEvent& event) override {
    backend_->OnIntakePod(event.object, event.type == kube::WatchEventType::kDeleted);
  }
  void OnError(const kube::KubeError& error) override {
    backend_->Log(2, "watching pods for scheduler '" + backend_->config_.scheduler_name +
                         "': " + error.ToString());
  }

 private:
  KubernetesBackend* backend_;
};

class KubernetesBackend::ForeignHandler : public kube::ListWatchHandler {
 public:
  explicit ForeignHandler(KubernetesBackend* backend) : backend_(backend) {}
  void OnSync(const kube::ListSync& sync) override {
    for (const json& pod : sync.diff.deleted) backend_->OnForeignPod(pod, true);
    for (const json& pod : sync.diff.added) backend_->OnForeignPod(pod, false);
    for (const json& pod : sync.diff.modified) backend_->OnForeignPod(pod, false);
    std::lock_guard<std::mutex> lock(backend_->mu_);
    backend_->foreign_synced_ = true;
    backend_->nodes_synced_cv_.notify_all();
  }
  void OnEvent(const kube::WatchEvent& event) override {
    backend_->OnForeignPod(event.object, event.type == kube::WatchEventType::kDeleted);
  }
  void OnError(const kube::KubeError& error) override {
    backend_->Log(2, "watching pods bound by others: " + error.ToString());
  }

 private:
  KubernetesBackend* backend_;
};

// --- Lifecycle.

KubernetesBackend::KubernetesBackend(plugin::Host host) : Plugin(host) {}

KubernetesBackend::~KubernetesBackend() { Shutdown(); }

PluginStatus KubernetesBackend::Init(const std::string& text) {
  PluginStatus status = ParseKubeBackendConfig(text, &config_);
  if (!status.ok()) return status;
  kube::KubeOutcome<kube::ClusterConfig> cluster =
      config_.in_cluster ? kube::LoadInClusterConfig()
                         : kube::LoadKubeconfig({config_.kubeconfig, config_.context});
  if (!cluster.ok()) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, cluster.error().ToString());
  }
  kube::KubeClientOptions options;
  options.qps = static_cast<double>(config_.qps);
  options.burst = static_cast<int>(config_.burst);
  kube::KubeOutcome<std::unique_ptr<kube::KubeClient>> client =
      kube::KubeClient::Create(cluster.value(), options);
  if (!client.ok()) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, client.error().ToString());
  }
  client_ = std::move(client).value();
  pod_options_.backend_name = config_.name;
  pod_options_.default_namespace = config_.pod_namespace;
  pod_options_.allowed_namespaces = config_.namespaces;
  pod_options_.default_image = config_.default_image;
  work_ = std::make_unique<WorkQueue>(static_cast<int>(config_.workers));

  // Nodes are watched from the start: the first Inventory waits for their list.
  node_handler_ = std::make_unique<NodeHandler>(this);
  kube::ListWatchOptions nodes;
  nodes.resource = kube::Resource::Nodes();
  nodes.label_selector = config_.node_selector;
  node_watch_ = std::make_unique<kube::ListWatch>(client_.get(), nodes, node_handler_.get());
  node_watch_->Start();
  // And this backend's pods: their events wait in pending_ until Start (or PollEvents).
  pod_handler_ = std::make_unique<PodHandler>(this);
  kube::ListWatchOptions pods;
  pods.resource = kube::Resource::Pods();
  pods.label_selector = std::string(kBackendLabel) + "=" + config_.name;
  pod_watch_ = std::make_unique<kube::ListWatch>(client_.get(), pods, pod_handler_.get());
  pod_watch_->Start();
  // And the pods bound to a node by others, not yet ended: what they request is not offered.
  // This backend's own pods are left out by their label, the pods addressed to its scheduler
  // name by the field (the intake watch sees those: OnIntakePod).
  if (config_.count_others_pods) {
    foreign_handler_ = std::make_unique<ForeignHandler>(this);
    kube::ListWatchOptions others;
    others.resource = kube::Resource::Pods();
    others.label_selector = std::string(kBackendLabel) + "!=" + config_.name;
    others.field_selector = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed";
    if (!config_.scheduler_name.empty()) {
      others.field_selector += ",spec.schedulerName!=" + config_.scheduler_name;
    }
    foreign_watch_ =
        std::make_unique<kube::ListWatch>(client_.get(), others, foreign_handler_.get());
    foreign_watch_->Start();
  }
  return PluginStatus::Ok();
}

PluginStatus KubernetesBackend::Start(const v1::StartRequest&) {
  // From now on the host takes events by callback; what came before waits in pending_.
  std::vector<v1::BackendEvent> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
    pending.swap(pending_);
  }
  Emit(pending);
  if (!config_.scheduler_name.empty()) {
    intake_handler_ = std::make_unique<IntakeHandler>(this);
    kube::ListWatchOptions intake;
    intake.resource = kube::Resource::Pods();
    intake.field_selector = "spec.schedulerName=" + config_.scheduler_name;
    intake_watch_ = std::make_unique<kube::ListWatch>(client_.get(), intake, intake_handler_.get());
    intake_watch_->Start();
    resubmitter_ = std::jthread([this](std::stop_token stop) {
      ResubmitEvery(std::chrono::seconds(config_.resubmit_interval_s), stop);
    });
  }
  return PluginStatus::Ok();
}

void KubernetesBackend::Shutdown() {
  if (resubmitter_.joinable()) {
    resubmitter_.request_stop();
    resubmit_cv_.notify_all();
    resubmitter_.join();
  }
  // Watches first (their handlers reach into the maps), then the queued API calls.
  if (intake_watch_) intake_watch_->Stop();
  if (foreign_watch_) foreign_watch_->Stop();
  if (pod_watch_) pod_watch_->Stop();
  if (node_watch_) node_watch_->Stop();
  intake_watch_.reset();
  foreign_watch_.reset();
  pod_watch_.reset();
  node_watch_.reset();
  if (work_) work_->Stop();
  work_.reset();
}

// --- Nodes.

void KubernetesBackend::OnNode(const json& node, bool deleted) {
  const std::string name = StringAt(MetadataOf(node), "name");
  if (name.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (deleted) {
      node_objects_.erase(name);
    } else {
      node_objects_[name] = node;
    }
  }
  Offer({name});
}

void KubernetesBackend::Offer(const std::vector<std::string>& names) {
  bool changed = false;
  bool started = false;
  std::vector<std::string> logs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    started = started_;
    for (const std::string& name : names) changed = OfferLocked(name, &logs) || changed;
  }
  for (const std::string& line : logs) Log(1, line);
  if (changed && started) {
    v1::BackendEvent event;
    event.set_kind(v1::BackendEvent::INVENTORY_CHANGED);
    event.set_time_us(host().NowUs());
    Emit({event});
  }
}

bool KubernetesBackend::OfferLocked(const std::string& name, std::vector<std::string>* logs) {
  const auto object = node_objects_.find(name);
  if (object == node_objects_.end()) {
    excluded_.erase(name);
    return nodes_.erase(name) > 0;
  }
  const ResourceMilli* used = foreign_.On(name);
  KubeNode k = NodeFromKube(used ? AllocatableLess(object->second, *used) : object->second,
                            {config_.rack_label, config_.default_gpu_memory_mib});
  if (!k.excluded.empty()) {
    if (excluded_[name] != k.excluded) {
      logs->push_back("node '" + name + "' is not offered: " + k.excluded);
    }
    excluded_[name] = k.excluded;
    return nodes_.erase(name) > 0;
  }
  excluded_.erase(name);
  auto it = nodes_.find(name);
  if (it != nodes_.end() && it->second.SerializeAsString() == k.spec.SerializeAsString()) {
    return false;
  }
  nodes_[name] = std::move(k.spec);
  return true;
}

void KubernetesBackend::OnForeignPod(const json& pod, bool deleted) {
  v1::TaskRef ref;
  // Not counted: a pod of this backend's (its label or a Binding's annotations).
  const bool ours = (TaskOfPod(pod, &ref) && StringAt(ObjectAt(MetadataOf(pod), "labels"),
                                                      kBackendLabel) == config_.name) ||
                    TaskOfTakenInPod(pod, config_.name, &ref);
  std::vector<std::string> changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed =
        ours ? foreign_.Forget(StringAt(MetadataOf(pod), "uid")) : foreign_.Update(pod, deleted);
  }
  if (!changed.empty()) Offer(changed);
}

PluginStatus KubernetesBackend::Inventory(v1::Inventory* out) {
  std::unique_lock<std::mutex> lock(mu_);
  // The first list of a large cluster takes a second or two; the host's call deadline is longer.
  // And for the list of others' pods, so that a node is not first offered whole.
  const bool foreign_needed = config_.count_others_pods;
  if (!nodes_synced_cv_.wait_for(lock, std::chrono::seconds(4), [&] {
        return nodes_synced_ && (foreign_synced_ || !foreign_needed);
      })) {
    return PluginStatus::Error(TESSERA_UNAVAILABLE,
                               std::string(nodes_synced_ ? "the list of pods" : "the node list") +
                                   " from " + client_->config().server +
                                   " has not come yet (is the API server reachable?)");
  }
  for (const auto& [name, spec] : nodes_) *out->add_nodes() = spec;
  return PluginStatus::Ok();
}

// --- Tasks.

v1::BackendEvent KubernetesBackend::TaskEvent(v1::BackendEvent::Kind kind,
                                              const v1::TaskRef& ref) const {
  v1::BackendEvent event;
  event.set_kind(kind);
  *event.mutable_ref() = ref;
  event.set_time_us(host().NowUs());
  return event;
}

void KubernetesBackend::Emit(const std::vector<v1::BackendEvent>& events) {
  if (events.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) {
      pending_.insert(pending_.end(), events.begin(), events.end());
      return;
    }
  }
  for (const v1::BackendEvent& event : events) host().Emit(event);
}

PluginStatus KubernetesBackend::PollEvents(v1::BackendEvents* out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (v1::BackendEvent& event : pending_) *out->add_events() = std::move(event);
  pending_.clear();
  return PluginStatus::Ok();
}

void KubernetesBackend::Rejected(const v1::TaskRef& ref, bool retryable, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tasks_.find(KeyOf(ref));
    if (it != tasks_.end()) it->second.ended = true;
  }
  v1::BackendEvent event = TaskEvent(v1::BackendEvent::LAUNCH_REJECTED, ref);
  event.set_retryable(retryable);
  event.set_message(why);
  Emit({event});
}

void KubernetesBackend::Log(int level, const std::string& message) const {
  host().Log(level, "kubernetes backend '" + config_.name + "': " + message);
}

PluginStatus KubernetesBackend::Launch(const v1::LaunchTask& request) {
  if (!request.external_id().empty()) {
    work_->Push([this, request](std::stop_token stop) { BindPod(request, stop); });
    return PluginStatus::Ok();
  }
  json pod;
  std::string error;
  if (!BuildPod(request, pod_options_, &pod, &error)) {
    Rejected(request.ref(), /*retryable=*/false, error);
    return PluginStatus::Ok();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    TaskState& state = tasks_[KeyOf(request.ref())];
    state.namespace_name = pod["metadata"]["namespace"].get<std::string>();
    state.pod = pod["metadata"]["name"].get<std::string>();
  }
  work_->Push([this, request, pod = std::move(pod)](std::stop_token stop) mutable {
    CreatePod(request, std::move(pod), stop);
  });
  return PluginStatus::Ok();
}

void KubernetesBackend::CreatePod(const v1::LaunchTask& task, json pod, std::stop_token stop) {
  const std::string ns = pod["metadata"]["namespace"].get<std::string>();
  kube::CreateOptions create;
  const v1::TaskRef ref = task.ref();
  create.is_ours = [ref, this](const json& existing) {
    v1::TaskRef found;
    return TaskOfPod(existing, &found) && found.job() == ref.job() &&
           found.attempt() == ref.attempt() && found.task() == ref.task() &&
           StringAt(MetadataOf(existing).value("labels", json::object()), kBackendLabel) ==
               config_.name;
  };
  if (!BeginMaking(ref)) return;
  kube::KubeOutcome<json> made =
      client_->Create(kube::CollectionPath(kube::Resource::Pods(), ns), pod, create, stop);
  EndMaking(ref, made.ok(), stop);
  if (made.ok() || stop.stop_requested()) return;
  const kube::KubeError& e = made.error();
  // What the API server refuses (a namespace that does not exist, a pod it finds invalid, a
  // quota, RBAC) will be refused again; what failed on the way may not.
  const bool retryable = e.Retryable();
  Rejected(ref, retryable,
           "creating pod " + ns + "/" + StringAt(pod["metadata"], "name") + ": " + e.ToString());
}

bool KubernetesBackend::BeginMaking(const v1::TaskRef& ref) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    TaskState& state = tasks_[KeyOf(ref)];
    if (!state.stopping && !state.ended) {
      state.making = true;
      return true;
    }
    if (state.ended) return false;
    state.ended = true;
  }
  v1::BackendEvent exited = TaskEvent(v1::BackendEvent::TASK_EXITED, ref);
  exited.set_exit_code(kDeletedExitCode);
  exited.set_message("stopped before its pod was made");
  Emit({exited});
  return false;
}

void KubernetesBackend::EndMaking(const v1::TaskRef& ref, bool made, std::stop_token stop) {
  std::string ns, pod;
  int64_t grace_s = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tasks_.find(KeyOf(ref));
    if (it == tasks_.end()) return;
    it->second.making = false;
    if (!made || !it->second.stopping) return;
    ns = it->second.namespace_name;
    pod = it->second.pod;
    grace_s = it->second.stop_grace_s;
  }
  // The stop came while the pod was being made, and found none: delete it now.
  DeletePod(ref, ns, pod, grace_s, stop);
}

void KubernetesBackend::BindPod(const v1::LaunchTask& task, std::stop_token stop) {
  // The pods of the job, in task order: "<ns>/<name>/<uid>" for a pod alone, or every waiting
  // pod of the gang "group/<ns>/<group>/<least uid>" in name order.
  const std::string& id = task.external_id();
  std::string ns, name, uid;
  if (id.rfind("group/", 0) == 0) {
    const size_t a = id.find('/', 6), b = a == std::string::npos ? a : id.find('/', a + 1);
    if (b == std::string::npos) return Rejected(task.ref(), false, "malformed external id " + id);
    ns = id.substr(6, a - 6);
    const std::string group = id.substr(a + 1, b - a - 1);
    kube::ListOptions list;
    list.label_selector = config_.pod_group_label + "=" + group;
    kube::KubeOutcome<json> pods =
        client_->List(kube::CollectionPath(kube::Resource::Pods(), ns), list, stop);
    if (!pods.ok()) {
      return Rejected(
          task.ref(), pods.error().Retryable(),
          "listing the pods of gang " + ns + "/" + group + ": " + pods.error().ToString());
    }
    std::vector<std::pair<std::string, std::string>> members;  // name, uid
    for (const json& pod : pods.value().value("items", json::array())) {
      IntakePod p;
      if (ReadIntakePod(pod, config_, &p) && !Terminal(pod)) {
        members.emplace_back(p.name, p.uid);
      }
    }
    std::sort(members.begin(), members.end());
    if (task.ref().task() >= static_cast<int>(members.size())) {
      return Rejected(task.ref(), false,
                      "gang " + ns + "/" + group + " has " + std::to_string(members.size()) +
                          " pods now, fewer than its task " + std::to_string(task.ref().task()));
    }
    name = members[task.ref().task()].first;
    uid = members[task.ref().task()].second;
  } else {
    const size_t a = id.find('/'), b = a == std::string::npos ? a : id.find('/', a + 1);
    if (b == std::string::npos) return Rejected(task.ref(), false, "malformed external id " + id);
    ns = id.substr(0, a);
    name = id.substr(a + 1, b - a - 1);
    uid = id.substr(b + 1);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    TaskState& state = tasks_[KeyOf(task.ref())];
    state.namespace_name = ns;
    state.pod = name;
    state.external_id = id;
    state.uid = uid;
  }
  if (!BeginMaking(task.ref())) return;
  const bool bound = Bind(task, ns, name, uid, stop);
  EndMaking(task.ref(), bound, stop);
}

bool KubernetesBackend::Bind(const v1::LaunchTask& task, const std::string& ns,
                             const std::string& name, const std::string& uid,
                             std::stop_token stop) {
  const std::string path = kube::ObjectPath(kube::Resource::Pods(), ns, name);
  // One call, and nothing written before the uid is checked: the API server refuses a Binding
  // whose uid is not the pod's (a pod remade under the name) with a 409, and copies its
  // annotations onto the pod as it sets spec.nodeName, so the bound pod carries its task for
  // the schedulerName watch and for a restarted backend (pod_intake.h).
  json binding = {
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata",
       {{"name", name},
        {"namespace", ns},
        {"uid", uid},
        {"annotations", BindingAnnotations(task.ref(), config_.name, task.external_id())}}},
      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", task.node()}}}};
  kube::CreateOptions create;
  create.existing_path = path;
  const std::string node = task.node();
  const v1::TaskRef ref = task.ref();
  // A Binding whose reply was lost and that then found the pod bound: bound by this one?
  create.is_ours = [this, node, uid, ref](const json& pod) {
    v1::TaskRef found;
    return StringAt(MetadataOf(pod), "uid") == uid &&
           StringAt(ObjectAt(pod, "spec"), "nodeName") == node &&
           TaskOfTakenInPod(pod, config_.name, &found) && KeyOf(found) == KeyOf(ref);
  };
  kube::KubeOutcome<json> bound = client_->Create(path + "/binding", binding, create, stop);
  if (bound.ok()) return true;
  if (stop.stop_requested()) return false;
  const kube::KubeError& e = bound.error();
  const bool other_pod =
      e.kind == kube::KubeErrorKind::kConflict && e.message.find("UID") != std::string::npos;
  Rejected(ref, false,
           other_pod ? "pod " + ns + "/" + name + " is not the one taken in (uid " + uid +
                           "): " + e.ToString()
                     : "binding pod " + ns + "/" + name + " to node " + node + ": " + e.ToString());
  return false;
}

void KubernetesBackend::OnPod(const json& pod, bool deleted) {
  v1::TaskRef ref;
  if (TaskOfPod(pod, &ref)) FollowPod(pod, deleted, ref);
}

// A pod of a task of this backend changed (or went): report what it means for the task, once.
void KubernetesBackend::FollowPod(const json& pod, bool deleted, const v1::TaskRef& ref) {
  const json& metadata = MetadataOf(pod);
  std::vector<v1::BackendEvent> events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TaskState& state = tasks_[KeyOf(ref)];
    // A pod taken in is the task's only if it is the pod bound (not one remade under its name).
    if (!state.uid.empty() && state.uid != StringAt(metadata, "uid")) return;
    if (state.pod.empty()) {
      state.namespace_name = StringAt(metadata, "namespace");
      state.pod = StringAt(metadata, "name");
    }
    if (state.external_id.empty()) {
      state.external_id =
          StringAt(metadata.value("annotations", json::object()), kExternalIdAnnotation);
    }
    if (state.ended) {
      if (deleted) tasks_.erase(KeyOf(ref));
      return;
    }
    const bool deleting = deleted || !metadata.value("deletionTimestamp", json()).is_null();
    if (deleting && !state.stopping && !state.external_id.empty()) {
      // A pod taken in, deleted by its owner: its job is withdrawn (cancelled), and the task
      // ends when the scheduler stops it, whatever the kubelet reports meanwhile.
      if (!state.withdrawn) {
        v1::BackendEvent withdraw;
        withdraw.set_kind(v1::BackendEvent::WITHDRAW_JOB);
        withdraw.set_external_id(state.external_id);
        events.push_back(withdraw);
        state.withdrawn = true;
      }
    } else {
      ReportOutcome(pod, deleted, ref, state, &events);
      if (deleted) tasks_.erase(KeyOf(ref));
    }
  }
  Emit(events);
}

void KubernetesBackend::ReportOutcome(const json& pod, bool deleted, const v1::TaskRef& ref,
                                      TaskState& state, std::vector<v1::BackendEvent>* out) {
  std::vector<v1::BackendEvent>& events = *out;
  {
    const PodOutcome outcome = PodOutcomeOf(pod);
    auto start = [&] {
      if (!state.started) events.push_back(TaskEvent(v1::BackendEvent::TASK_STARTED, ref));
      state.started = true;
    };
    switch (outcome.kind) {
      case PodOutcome::kPending:
        break;
      case PodOutcome::kRunning:
        start();
        break;
      case PodOutcome::kExited: {
        start();
        v1::BackendEvent exited = TaskEvent(v1::BackendEvent::TASK_EXITED, ref);
        exited.set_exit_code(outcome.exit_code);
        exited.set_message(outcome.reason);
        events.push_back(exited);
        state.ended = true;
        break;
      }
      case PodOutcome::kLost: {
        v1::BackendEvent lost = TaskEvent(v1::BackendEvent::TASK_LOST, ref);
        lost.set_message("pod " + state.namespace_name + "/" + state.pod + ": " + outcome.reason);
        events.push_back(lost);
        state.ended = true;
        break;
      }
      case PodOutcome::kRejected: {
        v1::BackendEvent rejected = TaskEvent(v1::BackendEvent::LAUNCH_REJECTED, ref);
        rejected.set_retryable(outcome.retryable);
        rejected.set_message("pod " + state.namespace_name + "/" + state.pod + ": " +
                             outcome.reason);
        events.push_back(rejected);
        state.ended = true;
        break;
      }
    }
    if (deleted && !state.ended) {
      // Gone before it ended: stopped by us, or taken away by someone (a pod taken in and
      // deleted by its owner does not come here: OnPod withdrew its job).
      if (state.stopping) {
        v1::BackendEvent exited = TaskEvent(v1::BackendEvent::TASK_EXITED, ref);
        exited.set_exit_code(kDeletedExitCode);
        exited.set_message("pod deleted");
        events.push_back(exited);
      } else {
        v1::BackendEvent lost = TaskEvent(v1::BackendEvent::TASK_LOST, ref);
        lost.set_message("pod " + state.namespace_name + "/" + state.pod +
                         " was deleted by someone else");
        events.push_back(lost);
      }
      state.ended = true;
    }
  }
}

PluginStatus KubernetesBackend::Stop(const v1::StopTask& request) {
  std::string ns, pod;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TaskState& state = tasks_[KeyOf(request.ref())];
    if (state.pod.empty()) {
      state.namespace_name = config_.pod_namespace;
      state.pod = PodName(pod_options_, request.ref());
    }
    state.stopping = true;
    state.stop_grace_s = (request.grace_ms() + 999) / 1000;
    ns = state.namespace_name;
    pod = state.pod;
  }
  const int64_t grace_s = (request.grace_ms() + 999) / 1000;
  work_->Push([this, ref = request.ref(), ns, pod, grace_s](std::stop_token stop) {
    DeletePod(ref, ns, pod, grace_s, stop);
  });
  return PluginStatus::Ok();
}

void KubernetesBackend::DeletePod(const v1::TaskRef& ref, const std::string& ns,
                                  const std::string& pod, int64_t grace_s, std::stop_token stop) {
  kube::DeleteOptions options;
  options.grace_period_seconds = grace_s;
  kube::KubeOutcome<json> deleted =
      client_->Delete(kube::ObjectPath(kube::Resource::Pods(), ns, pod), options, stop);
  if (deleted.ok() || stop.stop_requested()) return;
  if (deleted.error().kind == kube::KubeErrorKind::kNotFound) {
    // Never made (its create failed or is still queued) or already gone: it has ended.
    bool report = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = tasks_.find(KeyOf(ref));
      // Its create or bind is still under way: EndMaking deletes what it makes.
      if (it != tasks_.end() && !it->second.ended && !it->second.making) {
        it->second.ended = true;
        report = true;
      }
    }
    if (report) {
      v1::BackendEvent exited = TaskEvent(v1::BackendEvent::TASK_EXITED, ref);
      exited.set_exit_code(kDeletedExitCode);
      exited.set_message("stopped before its pod existed");
      Emit({exited});
    }
    return;
  }
  Log(2, "deleting pod " + ns + "/" + pod + ": " + deleted.error().ToString());
}

PluginStatus KubernetesBackend::Reconcile(v1::LiveTasks* out) {
  // Live: every pod of this backend not ended or being deleted, and every launch accepted whose
  // pod the work queue has not made yet.
  std::set<TaskKey> live;
  auto add = [&](const v1::TaskRef& ref) {
    if (live.insert(KeyOf(ref)).second) *out->add_tasks() = ref;
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, state] : tasks_) {
      if (state.ended || state.stopping) continue;
      v1::TaskRef ref;
      ref.set_job(std::get<0>(key));
      ref.set_attempt(std::get<1>(key));
      ref.set_task(std::get<2>(key));
      add(ref);
    }
  }
  // This backend's own pods, by their label, and the pods it took in and bound, by its
  // scheduler name and their annotations.
  auto list_live = [&](kube::ListOptions list, bool taken_in) -> PluginStatus {
    list.limit = 500;
    std::string continue_token;
    do {
      list.continue_token = continue_token;
      kube::KubeOutcome<json> page =
          client_->List(kube::CollectionPath(kube::Resource::Pods(), ""), list);
      if (!page.ok()) {
        return PluginStatus::Error(TESSERA_UNAVAILABLE,
                                   std::string(taken_in ? "listing the pods it took in: "
                                                        : "listing this backend's pods: ") +
                                       page.error().ToString());
      }
      for (const json& pod : page.value().value("items", json::array())) {
        v1::TaskRef ref;
        const bool task =
            taken_in ? TaskOfTakenInPod(pod, config_.name, &ref) : TaskOfPod(pod, &ref);
        if (!task || Terminal(pod)) continue;
        if (!MetadataOf(pod).value("deletionTimestamp", json()).is_null()) continue;
        add(ref);
        std::lock_guard<std::mutex> lock(mu_);
        TaskState& state = tasks_[KeyOf(ref)];
        state.namespace_name = StringAt(MetadataOf(pod), "namespace");
        state.pod = StringAt(MetadataOf(pod), "name");
        if (taken_in) state.uid = StringAt(MetadataOf(pod), "uid");
      }
      continue_token = StringAt(MetadataOf(page.value()), "continue");
    } while (!continue_token.empty());
    return PluginStatus::Ok();
  };
  kube::ListOptions own;
  own.label_selector = std::string(kBackendLabel) + "=" + config_.name;
  PluginStatus listed = list_live(own, false);
  if (listed.ok() && !config_.scheduler_name.empty()) {
    kube::ListOptions taken_in;
    taken_in.field_selector = "spec.schedulerName=" + config_.scheduler_name + ",spec.nodeName!=";
    listed = list_live(taken_in, true);
  }
  return listed;
}

// --- Pods made by others.

void KubernetesBackend::OnIntakePod(const json& pod, bool deleted) {
  IntakePod p;
  if (!ReadIntakePod(pod, config_, &p)) return;
  v1::TaskRef ref;
  if (TaskOfTakenInPod(pod, config_.name, &ref)) {
    // Bound here: its task's from now on, followed like a pod of the backend's own.
    {
      std::lock_guard<std::mutex> lock(mu_);
      intake_.erase(p.uid);
      refused_.erase(p.uid);
    }
    FollowPod(pod, deleted, ref);
    return;
  }
  if (config_.count_others_pods && !p.waiting) {
    // Bound by someone else (spec.nodeName set at creation, say), or ended: counted on its
    // node while it runs there, as the pods the foreign watch sees.
    std::vector<std::string> changed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      changed = foreign_.Update(pod, deleted);
    }
    if (!changed.empty()) Offer(changed);
  }
  std::vector<v1::BackendEvent> events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (deleted || !p.waiting) {
      auto it = intake_.find(p.uid);
      if (it == intake_.end()) return;
      intake_.erase(it);
      refused_.erase(p.uid);
      if (deleted) {
        // Deleted while waiting: its job (or its gang's) is withdrawn.
        for (const std::string& id : submitted_) {
          const bool alone = id == PodExternalId(p);
          const bool gang = !p.group.empty() &&
                            id.rfind("group/" + p.namespace_name + "/" + p.group + "/", 0) == 0;
          if (!alone && !gang) continue;
          v1::BackendEvent withdraw;
          withdraw.set_kind(v1::BackendEvent::WITHDRAW_JOB);
          withdraw.set_external_id(id);
          events.push_back(withdraw);
        }
      }
    } else {
      intake_[p.uid] = IntakeEntry{p, pod};
      // A pod alone needs only itself submitted; a gang member, its whole gang.
      SubmitWaiting(p.namespace_name, p.group, &events, p.group.empty() ? p.uid : "");
    }
    for (const v1::BackendEvent& e : events) {
      if (e.kind() == v1::BackendEvent::WITHDRAW_JOB) submitted_.erase(e.external_id());
    }
  }
  Emit(events);
}

void KubernetesBackend::ResubmitEvery(std::chrono::seconds interval, std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::vector<v1::BackendEvent> events;
    {
      std::unique_lock<std::mutex> lock(mu_);
      resubmit_cv_.wait_for(lock, stop, interval, [] { return false; });
      if (stop.stop_requested()) return;
      // Every waiting pod's id again (the ids of bound pods are not kept here), and refusals
      // logged again only if their reason changed.
      submitted_.clear();
      std::set<std::pair<std::string, std::string>> groups;
      for (const auto& [uid, entry] : intake_) {
        groups.emplace(entry.pod.namespace_name, entry.pod.group);
      }
      for (const auto& [ns, group] : groups) SubmitWaiting(ns, group, &events);
    }
    Emit(events);
  }
}

// Submits the waiting pod(s) of one namespace and group ("" for pods alone) that can go now;
// with `only_uid`, of the pods alone only that one (not every waiting pod of the namespace,
// which made taking in N pods cost N^2 log N).
void KubernetesBackend::SubmitWaiting(const std::string& ns, const std::string& group,
                                      std::vector<v1::BackendEvent>* out,
                                      const std::string& only_uid) {
  auto submit = [&](const std::vector<const IntakeEntry*>& pods, const std::string& id) {
    if (submitted_.count(id)) return;
    std::vector<json> objects;
    for (const IntakeEntry* e : pods) objects.push_back(e->object);
    v1::BackendEvent event;
    std::string error;
    if (!JobForPods(objects, config_, event.mutable_job(), &error)) {
      if (refused_[pods[0]->pod.uid] != error) {
        refused_[pods[0]->pod.uid] = error;
        Log(2, "not taking in pod " + ns + "/" + pods[0]->pod.name + ": " + error);
      }
      return;
    }
    event.set_kind(v1::BackendEvent::SUBMIT_JOB);
    event.set_external_id(id);
    submitted_.insert(id);
    out->push_back(std::move(event));
  };
  if (group.empty() && !only_uid.empty()) {
    const auto it = intake_.find(only_uid);
    if (it != intake_.end()) submit({&it->second}, PodExternalId(it->second.pod));
    return;
  }
  std::vector<const IntakeEntry*> members;
  for (const auto& [uid, entry] : intake_) {
    if (entry.pod.namespace_name != ns || entry.pod.group != group) continue;
    members.push_back(&entry);
  }
  std::sort(members.begin(), members.end(),
            [](const IntakeEntry* a, const IntakeEntry* b) { return a->pod.name < b->pod.name; });
  if (group.empty()) {
    for (const IntakeEntry* e : members) {
      submit({e}, PodExternalId(e->pod));
    }
    return;
  }
  const int size = members.empty() ? 0 : members[0]->pod.group_size;
  if (size <= 0) {
    Log(2, "gang " + ns + "/" + group + " has no " + config_.pod_group_size_label +
               " label (a positive count); its pods wait");
    return;
  }
  if (static_cast<int>(members.size()) < size) return;  // all-or-nothing: not all made yet.
  members.resize(size);
  std::string least = members[0]->pod.uid;
  for (const IntakeEntry* e : members) least = std::min(least, e->pod.uid);
  submit(members, GroupExternalId(ns, group, least));
}

}  // namespace tessera::kubernetes
