#include "pod_outcome.h"

#include <array>
#include <span>
#include <string_view>

namespace tessera::kubernetes {
namespace {

using nlohmann::json;

// Waiting reasons after which the container will never start as specified.
constexpr std::array<std::string_view, 6> kFatalWaitingReasons = {
    "ErrImagePull",      "ImagePullBackOff",           "InvalidImageName",
    "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError"};

// Pod reasons for a pod the node took away, not one that failed.
constexpr std::array<std::string_view, 5> kLostPodReasons = {"Evicted", "NodeLost", "Shutdown",
                                                             "Terminated", "Preempting"};

bool Contains(std::span<const std::string_view> list, std::string_view value) {
  for (std::string_view item : list) {
    if (item == value) return true;
  }
  return false;
}

std::string Join(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  return std::string(a) + ": " + std::string(b);
}

const json& ContainerStatuses(const json& status) {
  static const json kNone = json::array();
  const auto it = status.find("containerStatuses");
  return it != status.end() && it->is_array() ? *it : kNone;
}

}  // namespace

PodOutcome PodOutcomeOf(const json& pod) {
  PodOutcome out;
  const json status = pod.is_object() ? pod.value("status", json::object()) : json::object();
  const std::string phase = status.value("phase", "Pending");
  const std::string reason = status.value("reason", "");
  const std::string message = status.value("message", "");
  const json& containers = ContainerStatuses(status);

  if (Contains(kLostPodReasons, reason) || phase == "Unknown") {
    out.kind = PodOutcome::kLost;
    out.reason = Join(reason.empty() ? "phase Unknown" : reason, message);
    return out;
  }
  if (phase == "Failed" && (reason.rfind("OutOf", 0) == 0 || reason == "UnexpectedAdmissionError" ||
                            reason == "NodeAffinity" || reason == "NodeSelectorMismatching")) {
    // The kubelet refused the pod at admission: nothing ran.
    out.kind = PodOutcome::kRejected;
    out.retryable = true;
    out.reason = Join(reason, message);
    return out;
  }
  if (phase == "Succeeded") {
    out.kind = PodOutcome::kExited;
    return out;
  }
  if (phase == "Failed") {
    out.kind = PodOutcome::kExited;
    out.exit_code = 1;
    out.reason = Join(reason, message);
    if (!containers.empty() && containers[0].is_object()) {
      const json terminated =
          containers[0].value("state", json::object()).value("terminated", json::object());
      const std::string why = terminated.value("reason", "");
      if (terminated.contains("exitCode") && terminated["exitCode"].is_number_integer()) {
        out.exit_code = terminated["exitCode"].get<int>();
      }
      if (!why.empty()) out.reason = Join(why, terminated.value("message", ""));
    }
    return out;
  }
  // Pending or Running: a container that will never start rejects the launch.
  for (const json& c : containers) {
    if (!c.is_object()) continue;
    const json waiting = c.value("state", json::object()).value("waiting", json::object());
    const std::string why = waiting.value("reason", "");
    if (Contains(kFatalWaitingReasons, why)) {
      out.kind = PodOutcome::kRejected;
      out.retryable = false;
      out.reason = Join(why, waiting.value("message", ""));
      return out;
    }
  }
  if (phase == "Running") out.kind = PodOutcome::kRunning;
  return out;
}

}  // namespace tessera::kubernetes
