// Pods made by others, taken in as Tessera jobs.
//
// Tessera can be the scheduler of pods that anyone creates (kubectl, a Job controller, Kubeflow)
// with `spec.schedulerName: tessera`, as Volcano, YuniKorn and KAI are. Such a pod waits,
// unbound, until its scheduler binds it; the Kubernetes backend takes each one in as a job of
// the scheduler (BackendEvent SUBMIT_JOB), so that Tessera's fair share, gangs, backfill and
// preemption decide when and where it runs, and binds it (the Binding subresource) when the job
// is placed. This file is the pure part: which pods to take in, and the job each becomes.
//
//   queue      the pod's `queue_label` label, else the queue mapped to its namespace
//              (queue_for_namespace), else default_queue; no queue: not taken in, and why
//   priority   its priorityClassName mapped (priority_for_class); unmapped: the default class
//   resources  the sum of its containers' requests (CPU, memory; defaults when none) and its
//              GPU limits: `nvidia.com/gpu: N` is N whole GPUs, `nvidia.com/mig-<profile>: 1` a
//              MIG instance
//   placement  `nodeSelector`, required node affinity (its first term) and tolerations, as the
//              job's node selector, requirements and tolerations
//   gang       pods with the same `pod_group_label` value in one namespace form one job of
//              `pod_group_size_label` tasks, all-or-nothing, once that many exist (alike: the
//              job's task is the first pod's shape)
//
// The job's external id is "<namespace>/<name>/<uid>", or for a gang
// "group/<namespace>/<group>/<least uid>": a pod deleted and made again (same name, new uid) is
// new work, and the id alone says which pods to bind.
//
// Binding is one API call: the Binding carries the pod's uid (the API server refuses it with a
// 409 when the pod under that name is another one, before anything is written) and, in its
// metadata.annotations, the task the pod now runs (tessera.io/backend, job, attempt, task) and
// the job's external id. kube-apiserver copies a Binding's annotations onto the pod in the same
// update that sets spec.nodeName (pkg/registry/core/pod/storage: setPodHostAndAnnotations), so
// the backend follows the bound pod through the schedulerName watch that took it in, and finds
// it again after a restart, by these annotations. (Labels are not copied from a Binding.)
//
// Pure functions; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube_backend_config.h"
#include "tessera/v1/job.pb.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera::kubernetes {

// What intake needs to know of one pod.
struct IntakePod {
  std::string uid;
  std::string namespace_name;
  std::string name;
  // Pending, unbound, not being deleted: waiting for this scheduler.
  bool waiting = false;
  std::string group;   // empty: a pod alone.
  int group_size = 0;  // from pod_group_size_label; 0 when missing or not a number.
};

// The pod's intake fields; false for a pod not addressed to `config.scheduler_name`.
bool ReadIntakePod(const nlohmann::json& pod, const KubeBackendConfig& config, IntakePod* out);

// The job for these pods (one pod, or every pod of a gang in name order), or false with `error`
// saying why they cannot be taken in ("namespace 'x' maps to no queue (queue_for_namespace)").
bool JobForPods(const std::vector<nlohmann::json>& pods, const KubeBackendConfig& config,
                v1::JobSpec* job, std::string* error);

// The external id of a pod alone, and of a gang.
std::string PodExternalId(const IntakePod& pod);
std::string GroupExternalId(const std::string& namespace_name, const std::string& group,
                            const std::string& least_uid);

// The annotations the Binding of a pod taken in puts on it: the task and the job's external id.
nlohmann::json BindingAnnotations(const v1::TaskRef& ref, const std::string& backend_name,
                                  const std::string& external_id);

// The task of a pod taken in and bound by the backend named `backend_name`, from the
// annotations its Binding put on it; false for any other pod (waiting, bound by someone else or
// by another backend).
bool TaskOfTakenInPod(const nlohmann::json& pod, const std::string& backend_name, v1::TaskRef* ref);

}  // namespace tessera::kubernetes
