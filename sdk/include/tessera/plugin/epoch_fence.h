// EpochFence: refuses requests from a scheduler that another one has replaced.
//
// Every request of ABI 1.1 carries the host's fencing epoch (plugin.proto, "Fencing"). When a
// scheduler takes over from another (a high-availability pair, say), it runs with a higher
// epoch; a plugin that keeps the highest epoch it has seen and refuses anything lower stops the
// deposed scheduler from launching or stopping tasks behind the new one's back, as etcd's and
// ZooKeeper's fencing tokens do. Epoch 0 means the host sets none (and hosts of ABI 1.0 send 0):
// it is always admitted, and never raises the mark.
//
//   tessera::plugin::EpochFence fence;
//   PluginStatus Launch(const v1::LaunchTask& request) override {
//     if (PluginStatus fenced = fence.Admit(request.epoch(), "launch"); !fenced.ok()) return
//     fenced;
//     ...
//   }
//
// Thread-safe. A refusal is FAILED_PRECONDITION naming both epochs; the host counts it as a
// failed request (a deposed scheduler's plugin soon turns unhealthy there, which is the point).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/plugin/plugin.h"

namespace tessera::plugin {

class EpochFence {
 public:
  // Ok when `epoch` is 0 or at least the highest seen; raises the mark to it.
  PluginStatus Admit(uint64_t epoch, std::string_view call) {
    if (epoch == 0) return PluginStatus::Ok();
    uint64_t seen = highest_.load();
    while (epoch > seen && !highest_.compare_exchange_weak(seen, epoch)) {
    }
    if (epoch < seen) {
      return PluginStatus::Error(TESSERA_FAILED_PRECONDITION,
                                 std::string(call) + ": fenced: request epoch " +
                                     std::to_string(epoch) + " is below epoch " +
                                     std::to_string(seen) + " of a newer scheduler");
    }
    return PluginStatus::Ok();
  }
  uint64_t highest() const { return highest_.load(); }

 private:
  std::atomic<uint64_t> highest_{0};
};

}  // namespace tessera::plugin
