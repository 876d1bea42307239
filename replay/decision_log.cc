#include "decision_log.h"

#include <chrono>
#include <string>
#include <vector>

namespace tessera::replay {
namespace {

std::string DescribePartition(const v1::GpuPartition& p) {
  if (p.sharing() == v1::GPU_SHARING_DEFAULT && p.mig_profile().empty() && p.vgpu_type().empty()) {
    return "-";
  }
  return v1::GpuSharing_Name(p.sharing()) + "/" + p.mig_profile() + "@" +
         std::to_string(p.mig_start()) + "/" + p.vgpu_type();
}

}  // namespace

Status DecisionLog::Update(Scheduler& scheduler) {
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<v1::Event> events,
                             scheduler.WatchEvents(after_seq_, 1000, std::chrono::milliseconds(0)));
    if (events.empty()) return Status::Ok();
    for (const v1::Event& e : events) {
      after_seq_ = e.seq();
      const bool placed = e.kind() == v1::JOB_STATE_CHANGED && e.to_state() == v1::ADMITTED;
      const bool resized = e.kind() == v1::JOB_UPDATED && e.job_id() != 0;
      if (!placed && !resized) continue;
      TESSERA_ASSIGN_OR_RETURN(v1::Job job, scheduler.GetJob(e.job_id()));
      const v1::JobStatus& status = job.status();
      if (status.attempt() != e.attempt()) continue;  // requeued since (see the header).
      for (const v1::TaskPlacement& p : status.placements()) {
        if (!written_.emplace(job.id(), status.attempt(), p.index()).second) continue;
        out_ << "t=" << (e.time_us() - epoch_us_) << " job=" << job.id()
             << " attempt=" << status.attempt() << " task=" << p.index() << " node=" << p.node()
             << " gpus=";
        for (int i = 0; i < p.gpus_size(); ++i) out_ << (i ? "," : "") << p.gpus(i);
        out_ << " milli=" << p.gpu_milli() << " gpu_mem=" << p.gpu_memory_mib()
             << " partition=" << DescribePartition(p.partition()) << '\n';
        ++lines_;
      }
    }
  }
}

}  // namespace tessera::replay
