#include "engine/gpu_health_book.h"

#include <algorithm>

namespace tessera {

GpuHealthBook::Verdict GpuHealthBook::Record(NodeIndexId node, int gpu,
                                             const v1::GpuTelemetry& reading, TimestampUs now_us) {
  v1::GpuState& state = states_[{node, gpu}];
  state.set_index(gpu);
  *state.mutable_last() = reading;
  if (reading.time_us() == 0) state.mutable_last()->set_time_us(now_us);

  std::string fatal;
  if (reading.ecc_uncorrectable_errors() > 0) {
    fatal = std::to_string(reading.ecc_uncorrectable_errors()) + " uncorrectable ECC error(s)";
  }
  for (int xid : reading.xid_errors()) {
    if (std::find(limits_.fatal_xids.begin(), limits_.fatal_xids.end(), xid) !=
        limits_.fatal_xids.end()) {
      fatal = "XID " + std::to_string(xid);
    }
  }
  const bool was_usable = !state.failed() && !state.too_hot();
  if (!fatal.empty() && !state.failed()) {
    state.set_failed(true);
    state.set_reason(fatal);
  }
  if (!state.too_hot() && reading.temperature_c() >= limits_.max_temperature_c) {
    state.set_too_hot(true);
    if (!state.failed())
      state.set_reason("too hot: " + std::to_string(reading.temperature_c()) + " C");
  } else if (state.too_hot() && reading.temperature_c() <= limits_.resume_temperature_c) {
    state.set_too_hot(false);
    if (!state.failed()) state.clear_reason();
  }
  Verdict verdict;
  verdict.usable = !state.failed() && !state.too_hot();
  verdict.changed = verdict.usable != was_usable;
  verdict.failed = state.failed();
  verdict.reason = state.reason();
  return verdict;
}

std::vector<std::pair<int, bool>> GpuHealthBook::ClearFailed(NodeIndexId node, int gpus) {
  std::vector<std::pair<int, bool>> cleared;
  for (int gpu = 0; gpu < gpus; ++gpu) {
    auto it = states_.find({node, gpu});
    if (it == states_.end() || !it->second.failed()) continue;
    it->second.set_failed(false);
    it->second.clear_reason();
    cleared.emplace_back(gpu, !it->second.too_hot());
  }
  return cleared;
}

const v1::GpuState* GpuHealthBook::Find(NodeIndexId node, int gpu) const {
  auto it = states_.find({node, gpu});
  return it == states_.end() ? nullptr : &it->second;
}

void GpuHealthBook::Forget(NodeIndexId node) {
  states_.erase(states_.lower_bound({node, 0}), states_.lower_bound({node + 1, 0}));
}

}  // namespace tessera
