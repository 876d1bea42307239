#include "api/waiting_reasons.h"

namespace tessera {

void WaitingReasons::Set(uint64_t job, std::string_view reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (reason.empty()) {
    reasons_.erase(job);
  } else {
    reasons_[job] = std::string(reason);
  }
}

void WaitingReasons::Apply(v1::Job& job) const {
  if (job.status().state() != v1::PENDING) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = reasons_.find(job.id());
  if (it != reasons_.end()) {
    job.mutable_status()->set_reason(it->second);
  } else if (job.status().reason().empty()) {
    job.mutable_status()->set_reason(std::string(kNotYetTried));
  }
}

}  // namespace tessera
