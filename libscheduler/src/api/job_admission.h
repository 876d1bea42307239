// Job admission: what a submit must pass before it is stored, and what a dry run of it
// (Scheduler::DryRun) checks the same way, so that both answer with the same errors.
//
// Two stages. CheckJobSpec looks at the spec alone (its fields, its size, its priority class)
// on the caller's thread. CheckQueueAdmission looks at the queue it names in the store, inside
// the writer's transaction, which orders every submit: the queue exists and is a leaf, its
// pending-jobs limits (its own and its parents') have room, and an idle-GPU exemption is one
// the queue's policy allows. It only reads.
#pragma once

#include <cstdint>

#include "store/write_transaction.h"
#include "tessera/options.h"
#include "tessera/status.h"
#include "tessera/v1/job.pb.h"

namespace tessera {

// The priority class `spec` resolves to, once its fields and size are valid.
// Errors: INVALID_ARGUMENT naming the field.
StatusOr<PriorityClass> CheckJobSpec(const Options& options, const v1::JobSpec& spec);

// Whether `spec.queue()` takes one more job, `default_max_pending` being
// Options::max_pending_jobs_per_queue. Errors: NOT_FOUND (queue), FAILED_PRECONDITION (not a
// leaf), RESOURCE_EXHAUSTED (max_pending_jobs, of the queue or a parent), PERMISSION_DENIED
// (idle_gpu_exempt where the queue's policy does not allow it), and the store's read errors.
Status CheckQueueAdmission(store::WriteTransaction& t, const v1::JobSpec& spec,
                           int64_t default_max_pending);

}  // namespace tessera
