// KubernetesBackend, continued: pods made by others for this scheduler, taken in as jobs.
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

}  // namespace

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
