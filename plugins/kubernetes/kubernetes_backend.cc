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

}  // namespace tessera::kubernetes
