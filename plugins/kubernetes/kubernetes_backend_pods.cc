// KubernetesBackend, continued: Tessera's tasks as pods (made, bound, followed, stopped,
// reconciled) and taken-in pods bound to the node Tessera chose.
#include "kubernetes_backend.h"

#include <algorithm>
#include <chrono>

#include "json_fields.h"
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

}  // namespace tessera::kubernetes
