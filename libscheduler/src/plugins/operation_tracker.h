// OperationTracker: what a backend has under way. Every launch, stop, resize, partition change
// and provisioning request the scheduler asks of a plugin is an operation with an id, a kind,
// what it is for ("job 7.0 task 1", "node h100-0 GPU 2", "node group spot-a100 x 2"), when it
// began and when it is due. It ends once: succeeded, or failed with the reason.
//
// For calls (launch, stop, resize, partition) the operation is the call, and its due time is the
// call's deadline for its kind (PluginOptions::launch_deadline, ...), which the plugin's worker
// enforces: a call past it hangs the plugin. A provisioning request outlives its call: it ends
// with the plugin's PROVISION_COMPLETED or PROVISION_FAILED event, or fails when
// PluginOptions::provision_deadline passes first (ExpireDue); the plugin stays healthy.
//
// The tracker belongs to a backend, not to one plugin instance, so its totals span restarts.
// Thread-safe: calls end on plugin threads, provisioning on the decision strand.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

enum class OperationKind { kLaunch, kStop, kResize, kPartition, kProvision, kDeprovision };
inline constexpr int kOperationKinds = 6;

// "launch", "stop", "resize", "partition", "provision", "deprovision": the names tessctl
// backends and /metrics use.
const char* OperationKindName(OperationKind kind);

struct Operation {
  uint64_t id = 0;  // unique in the tracker, from 1.
  OperationKind kind = OperationKind::kLaunch;
  std::string subject;
  int64_t started_us = 0;
  int64_t due_us = 0;
};

class OperationTracker {
 public:
  struct KindCounts {
    int64_t in_flight = 0;
    int64_t succeeded = 0;
    int64_t failed = 0;
  };
  struct Snapshot {
    std::array<KindCounts, kOperationKinds> kinds{};  // indexed by OperationKind.
    // The latest failure: "provision 4 (node group spot x 2): timed out after 600000 ms".
    std::string last_failure;
  };

  // Starts an operation of `kind` for `subject`, due `deadline_us` after `now_us`; its id.
  uint64_t Begin(OperationKind kind, std::string subject, int64_t now_us, int64_t deadline_us);
  // Ends operation `id`. False when it is not under way (it ended already: timed out, say).
  bool End(uint64_t id, bool succeeded, const std::string& why = "");
  // Fails every operation under way with `why` (the plugin turned unhealthy); how many.
  int FailAll(const std::string& why);
  // Fails the operations due at or before `now_us` with "timed out"; what they were.
  std::vector<Operation> ExpireDue(int64_t now_us);

  std::optional<Operation> Find(uint64_t id) const;
  Snapshot Counts() const;

 private:
  void EndLocked(std::map<uint64_t, Operation>::iterator it, bool succeeded,
                 const std::string& why);

  mutable std::mutex mu_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Operation> under_way_;
  Snapshot counts_;
};

}  // namespace tessera
