// GpuHealthBook: what telemetry says of each GPU that has reported, and whether it may take
// work. A GPU fails on a fatal reading (uncorrectable ECC errors, an XID in
// GpuHealthOptions::fatal_xids) and stays failed until an operator vouches for its node again;
// it is too hot from max_temperature_c until it reports resume_temperature_c or less
// (hysteresis, so it does not flap). It is usable when neither.
//
// The book only judges readings; the engine acts on a change (marks the GPU in the cluster,
// records a node event, requeues the tasks of a failed GPU).
//
// Thread safety: the engine's, one decision strand.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/node_state.h"
#include "tessera/clock.h"
#include "tessera/options.h"
#include "tessera/v1/node.pb.h"

namespace tessera {

class GpuHealthBook {
 public:
  explicit GpuHealthBook(GpuHealthOptions limits) : limits_(std::move(limits)) {}

  struct Verdict {
    bool changed = false;  // the GPU turned usable or unusable with this reading.
    bool usable = true;
    bool failed = false;  // a fatal reading, now or before.
    std::string reason;   // why it is not usable ("" when usable).
  };
  // Records `reading` of GPU `gpu` of `node` (its time set to `now_us` when it has none).
  Verdict Record(NodeIndexId node, int gpu, const v1::GpuTelemetry& reading, TimestampUs now_us);

  // An operator vouches for `node` again: its failed GPUs (of `gpus`) are failed no more. Returns
  // each one cleared with whether it is usable now (it may still be too hot).
  std::vector<std::pair<int, bool>> ClearFailed(NodeIndexId node, int gpus);

  // `node` left the inventory or took a new shape: its GPUs' readings mean nothing now.
  void Forget(NodeIndexId node);

  // The last reading and health of GPU `gpu` of `node`, or nullptr if it never reported.
  const v1::GpuState* Find(NodeIndexId node, int gpu) const;

 private:
  const GpuHealthOptions limits_;
  std::map<std::pair<NodeIndexId, int>, v1::GpuState> states_;
};

}  // namespace tessera
