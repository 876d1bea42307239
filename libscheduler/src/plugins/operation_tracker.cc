#include "plugins/operation_tracker.h"

namespace tessera {

const char* OperationKindName(OperationKind kind) {
  switch (kind) {
    case OperationKind::kLaunch:
      return "launch";
    case OperationKind::kStop:
      return "stop";
    case OperationKind::kResize:
      return "resize";
    case OperationKind::kPartition:
      return "partition";
    case OperationKind::kProvision:
      return "provision";
    case OperationKind::kDeprovision:
      return "deprovision";
  }
  return "unknown";
}

uint64_t OperationTracker::Begin(OperationKind kind, std::string subject, int64_t now_us,
                                 int64_t deadline_us) {
  std::lock_guard<std::mutex> lock(mu_);
  Operation op;
  op.id = next_id_++;
  op.kind = kind;
  op.subject = std::move(subject);
  op.started_us = now_us;
  op.due_us = now_us + deadline_us;
  ++counts_.kinds[static_cast<int>(kind)].in_flight;
  const uint64_t id = op.id;
  under_way_.emplace(id, std::move(op));
  return id;
}

void OperationTracker::EndLocked(std::map<uint64_t, Operation>::iterator it, bool succeeded,
                                 const std::string& why) {
  KindCounts& counts = counts_.kinds[static_cast<int>(it->second.kind)];
  --counts.in_flight;
  if (succeeded) {
    ++counts.succeeded;
  } else {
    ++counts.failed;
    counts_.last_failure = std::string(OperationKindName(it->second.kind)) + " " +
                           std::to_string(it->first) + " (" + it->second.subject + "): " + why;
  }
  under_way_.erase(it);
}

bool OperationTracker::End(uint64_t id, bool succeeded, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = under_way_.find(id);
  if (it == under_way_.end()) return false;
  EndLocked(it, succeeded, why);
  return true;
}

int OperationTracker::FailAll(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  int failed = 0;
  while (!under_way_.empty()) {
    EndLocked(under_way_.begin(), false, why);
    ++failed;
  }
  return failed;
}

std::vector<Operation> OperationTracker::ExpireDue(int64_t now_us) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Operation> expired;
  for (auto it = under_way_.begin(); it != under_way_.end();) {
    auto next = std::next(it);
    if (it->second.due_us <= now_us) {
      expired.push_back(it->second);
      const int64_t ms = (it->second.due_us - it->second.started_us) / 1000;
      EndLocked(it, false, "timed out after " + std::to_string(ms) + " ms");
    }
    it = next;
  }
  return expired;
}

std::optional<Operation> OperationTracker::Find(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = under_way_.find(id);
  if (it == under_way_.end()) return std::nullopt;
  return it->second;
}

OperationTracker::Snapshot OperationTracker::Counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

}  // namespace tessera
