// WaitingReasons: why each pending job waits, as the engine last found it, for readers off the
// decision strand.
//
// A pending job's reason ("waiting for capacity: 0 of 4 tasks fit now", "waiting for quota:
// queue 'research' cap on gpu") is found anew each time the engine looks at the job, and it is
// not written to the store when it changes: a queue head that keeps failing would cost a write
// per look. The engine publishes it here instead, and GetJob and ListJobs show it in place of the
// stored reason while the stored job is PENDING. The next write of the job's status carries the
// reason it has then, and the engine withdraws the published one. Published reasons are not
// durable; after a restart the engine finds them again at its first decisions. A pending job the
// engine has not looked at yet (it waits behind earlier jobs of its queue, or its queue's turn
// has not come) shows kNotYetTried rather than nothing.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tessera/v1/job.pb.h"

namespace tessera {

class WaitingReasons {
 public:
  static constexpr std::string_view kNotYetTried =
      "waiting for its turn: jobs ahead of it in fair-share order are placed first";

  // Publishes `reason` for `job`; an empty one withdraws it (any thread).
  void Set(uint64_t job, std::string_view reason);

  // Shows the published reason of a PENDING job in its status, or kNotYetTried when it has
  // none, published or stored (any thread).
  void Apply(v1::Job& job) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::string> reasons_;
};

}  // namespace tessera
