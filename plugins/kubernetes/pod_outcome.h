// What a pod's status says about its task, in the scheduler's terms.
//
// The kubelet reports a pod's `status.phase` (Pending, Running, Succeeded, Failed, Unknown),
// `status.reason` (Evicted, NodeLost, Shutdown, UnexpectedAdmissionError, OutOf<resource>...)
// and each container's state (waiting with a reason such as ErrImagePull; terminated with an
// exit code and a reason such as OOMKilled). PodOutcomeOf turns that into what the scheduler is
// told:
//
//   Pending, containers waiting          -> nothing yet (kPending)
//   Pending, an image that will not pull -> the launch is rejected (ErrImagePull, ImagePullBackOff,
//                                           InvalidImageName, CreateContainerConfigError...)
//   Running                              -> TASK_STARTED (kRunning)
//   Succeeded                            -> TASK_EXITED with 0
//   Failed with the first container's exit code -> TASK_EXITED with that code (137 for a
//                                           container OOM-killed at its own memory limit: it
//                                           would be killed again anywhere, so it counts as a
//                                           failed attempt, not as lost)
//   evicted (node pressure), node lost or shut down, Unknown -> TASK_LOST: the job is requeued
//                                           as lost, which does not count against its attempts
//   refused at admission by the kubelet (OutOfnvidia.com/gpu, UnexpectedAdmissionError)
//                                        -> the launch is rejected, retryable
//
// A pod deleted by someone else while its task ran is lost as well; that is the caller's call,
// since it sees the DELETED event (kDeleted is what a pod with a deletionTimestamp still is).
// Pure functions; safe from any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tessera::kubernetes {

struct PodOutcome {
  enum Kind {
    kPending,   // not running yet; nothing to report.
    kRunning,   // a container has started.
    kExited,    // ended on its own: exit_code.
    kLost,      // gone without an exit status of its own: reason.
    kRejected,  // the launch cannot go on (retryable says whether another attempt may).
  };
  Kind kind = kPending;
  int exit_code = 0;
  bool retryable = false;
  std::string reason;  // for kLost and kRejected, and a failed exit: what Kubernetes said.
};

PodOutcome PodOutcomeOf(const nlohmann::json& pod);

}  // namespace tessera::kubernetes
