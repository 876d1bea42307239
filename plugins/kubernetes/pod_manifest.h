// The pod a Tessera task becomes.
//
// The scheduler has already decided where a task runs and what it takes; the Kubernetes backend
// writes that down as a Pod: `spec.nodeName` is the node chosen (so kube-scheduler is never
// asked), the container's resources are the task's CPU, memory and GPUs in the device plugin's
// names (`nvidia.com/gpu: N` for whole GPUs or a time-slice/MPS share, `nvidia.com/mig-<profile>:
// 1` for a MIG instance), and labels tie the pod to its task so that a restarted backend finds
// it again (reconcile):
//
//   app.kubernetes.io/managed-by: tessera
//   tessera.io/backend: <the backend's instance name>
//   tessera.io/job: "42"   tessera.io/attempt: "1"   tessera.io/task: "0"
//
// The rest of the pod comes from the job's backend spec (JobSpec.backend_spec), a JSON pod
// template as in a Deployment's `spec.template`:
//
//   {"metadata": {"labels": {"team": "vision"}},
//    "spec": {"containers": [{"name": "train", "image": "pytorch/pytorch:2.4.0-cuda12.4"}],
//             "tolerations": [...], "volumes": [...]}}
//
// An empty backend spec means one container named "task" running the backend's default image.
// Where the template and the task disagree the task wins: the job's command (when it has one)
// replaces the first container's, its env is appended, and its resources are set on the first
// container; `restartPolicy` is always Never (the scheduler retries, not the kubelet). A
// template may name its namespace only if the backend's config allows that namespace. Errors
// name the field: "backend_spec.spec.containers[0].image: missing and no default_image".
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tessera/v1/plugin.pb.h"

namespace tessera::kubernetes {

struct PodOptions {
  std::string backend_name = "kubernetes";  // the tessera.io/backend label.
  std::string name_prefix = "tessera";
  std::string default_namespace = "default";
  // Namespaces a job's template may choose besides the default one.
  std::set<std::string> allowed_namespaces;
  std::string default_image;  // for templates without an image; empty: they are refused.
};

// The pod for `task`, or false with `error` naming the field that is wrong.
bool BuildPod(const v1::LaunchTask& task, const PodOptions& options, nlohmann::json* pod,
              std::string* error);

// The pod's name for a task: "<prefix>-j<job>-a<attempt>-t<task>".
std::string PodName(const PodOptions& options, const v1::TaskRef& ref);

// Label keys of the pods the backend makes.
inline constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char* kBackendLabel = "tessera.io/backend";
inline constexpr const char* kJobLabel = "tessera.io/job";
inline constexpr const char* kAttemptLabel = "tessera.io/attempt";
inline constexpr const char* kTaskLabel = "tessera.io/task";
// On a pod taken in (not made by the backend): its job's external id (pod_intake.h).
inline constexpr const char* kExternalIdAnnotation = "tessera.io/external-id";

// The task named by the keys above (kBackendLabel, kJobLabel, kAttemptLabel, kTaskLabel) in a
// labels or annotations map; false when one is missing or not a number.
bool TaskOfKeys(const nlohmann::json& keys, v1::TaskRef* ref);

// The task a pod of the backend's own runs, from the labels BuildPod gives it; false for any
// other pod. (A pod taken in carries the same keys as annotations: pod_intake.h.)
bool TaskOfPod(const nlohmann::json& pod, v1::TaskRef* ref);

}  // namespace tessera::kubernetes
