// Validation of everything a caller hands the scheduler. Each error is INVALID_ARGUMENT with a
// message that starts with the field path ("task.gpu_milli: ...") so a user can fix it at once.
#pragma once

#include <string>

#include <google/protobuf/repeated_ptr_field.h>

#include "model/queue_path.h"  // ValidateQueueName, for the callers of this header.
#include "tessera/options.h"
#include "tessera/status.h"
#include "tessera/v1/job.pb.h"
#include "tessera/v1/queue.pb.h"

namespace tessera {

// Limits enforced on specs.
inline constexpr int kMaxTasksPerJob = 100000;
inline constexpr int kMaxGpusPerTask = 32;
inline constexpr int64_t kMaxGraceSeconds = 7 * 24 * 3600;
// Bounds on the other integers of a spec, far above any real job and far below the point where
// converting them to microseconds (or summing them over tasks) could overflow an int64.
inline constexpr int64_t kMaxCpuMilli = 1'000'000'000;  // a million cores.
inline constexpr int64_t kMaxMemoryMib = 1LL << 30;     // 1 PiB.
inline constexpr int64_t kMaxTimeLimitSeconds = 366 * 24 * 3600;
inline constexpr int64_t kMaxSimulatedMs = kMaxTimeLimitSeconds * 1000;
inline constexpr int kMaxExitCode = 255;
// The longest idle window or warning of an idle-GPU policy (QueueSpec.idle_gpus): 30 days.
inline constexpr int64_t kMaxIdleGpuSeconds = 30 * 24 * 3600;

// Checks `spec` field by field, and its size against `limits`.
Status ValidateJobSpec(const v1::JobSpec& spec, const JobSizeLimits& limits);
Status ValidateQueueSpec(const v1::QueueSpec& spec);
// A declared queue tree (DaemonConfig.queues, ApplyQueueTree) on its own: each spec valid and
// named once, errors naming the entry ("queues[1].name: 'a' is declared twice (also queues[0])").
// Defined in queue_tree.cc; what depends on the existing queues is checked there.
Status ValidateQueueDeclaration(const google::protobuf::RepeatedPtrField<v1::QueueSpec>& declared);
Status ValidateOptions(const Options& options);

// The priority class a job resolves to. Errors: INVALID_ARGUMENT naming priority_class.
StatusOr<PriorityClass> ResolvePriorityClass(const Options& options, const std::string& name);

}  // namespace tessera
