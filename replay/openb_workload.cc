// Implementation of the openb pod list to job arrivals mapping declared in openb_workload.h.
#include "openb_workload.h"

#include <algorithm>
#include <set>

namespace tessera::replay {
namespace {

// The QoS classes of the trace; in "qos" mode each gets a leaf queue even when the selected
// pods leave it empty, so the queue set does not depend on how many rows are taken.
const std::vector<std::string> kQosClasses = {"LS", "BE", "Burstable", "Guaranteed"};

std::string QueueOf(const OpenbPod& pod, const OpenbWorkloadOptions& options) {
  if (options.queues == "single") return options.queue_prefix + "all";
  return options.queue_prefix + (pod.qos.empty() ? "unknown" : pod.qos);
}

}  // namespace

StatusOr<OpenbWorkload> MakeOpenbWorkload(const std::vector<OpenbPod>& pods,
                                          const OpenbWorkloadOptions& options) {
  if (options.queues != "qos" && options.queues != "single") {
    return InvalidArgumentError("openb queues: '" + options.queues + "' is not qos or single");
  }
  if (options.unscheduled != "skip" && options.unscheduled != "run") {
    return InvalidArgumentError("openb unscheduled: '" + options.unscheduled +
                                "' is not skip or run");
  }
  if (!(options.time_scale > 0)) return InvalidArgumentError("openb time scale must be > 0");
  OpenbWorkload w;
  w.trace_rows = static_cast<int64_t>(pods.size());
  w.selected = options.jobs > 0 ? std::min<int64_t>(options.jobs, w.trace_rows) : w.trace_rows;
  std::set<std::string> seen_queues;
  if (options.queues == "qos") {
    for (const std::string& qos : kQosClasses) {
      w.queues.push_back(options.queue_prefix + qos);
      seen_queues.insert(w.queues.back());
    }
  }
  for (int64_t i = 0; i < w.selected; ++i) {
    const OpenbPod& pod = pods[i];
    if (!pod.has_times) {
      return InvalidArgumentError(
          "the pod list has no creation_time/deletion_time/scheduled_time columns (the "
          "multigpu*.csv files lack them): a time-based replay needs them");
    }
    if (!pod.scheduled_s && options.unscheduled == "skip") {
      ++w.skipped_unscheduled;
      continue;
    }
    if (!pod.deletion_s) {
      ++w.skipped_no_deletion;
      continue;
    }
    const int64_t runtime_s = *pod.deletion_s - pod.scheduled_s.value_or(pod.creation_s);

    ReplayJob& job = w.jobs.emplace_back();
    job.submit_offset_us =
        static_cast<int64_t>(static_cast<double>(pod.creation_s) * 1e6 / options.time_scale);
    v1::JobSpec& spec = job.spec;
    spec.set_name(pod.name);
    spec.set_queue(QueueOf(pod, options));
    if (seen_queues.insert(spec.queue()).second) w.queues.push_back(spec.queue());
    v1::TaskResources* task = spec.mutable_task();
    if (pod.cpu_milli <= 0 || pod.memory_mib <= 0) ++w.requests_raised;
    task->set_cpu_milli(std::max<int64_t>(1, pod.cpu_milli));
    task->set_memory_mib(std::max<int64_t>(1, pod.memory_mib));
    if (pod.num_gpu > 0) {
      task->set_gpu_count(pod.num_gpu);
      if (pod.num_gpu == 1 && pod.gpu_milli > 0 && pod.gpu_milli < 1000) {
        task->set_gpu_milli(pod.gpu_milli);
      }
      for (const std::string& model : pod.gpu_models) task->add_gpu_models(model);
    }
    // At least 1 ms: a duration of 0 means "runs until cancelled".
    spec.mutable_simulation()->set_duration_ms(std::max<int64_t>(1, runtime_s * 1000));
    if (pod.scheduled_s) {
      w.trace_wait_s.push_back(static_cast<double>(*pod.scheduled_s - pod.creation_s));
    }
  }
  // Not every pod list is sorted by creation_time (gpushare100 is not), and the replay needs
  // arrivals in order; a stable sort keeps file order among pods created at the same second.
  for (size_t i = 1; i < w.jobs.size(); ++i) {
    if (w.jobs[i].submit_offset_us < w.jobs[i - 1].submit_offset_us) ++w.out_of_order;
  }
  std::stable_sort(w.jobs.begin(), w.jobs.end(), [](const ReplayJob& a, const ReplayJob& b) {
    return a.submit_offset_us < b.submit_offset_us;
  });
  return w;
}

}  // namespace tessera::replay
