// Queue tree: a declared set of queues (a daemon's `queues:` section, an operator's manifest)
// brought into a running scheduler, idempotently, so that the same declaration applied at every
// start changes only what differs.
//
//   auto report = tessera::ApplyQueueTree(*scheduler, config.queues());
//   // first start: report->created = {"research", "research/vision"}; later: all unchanged.
//
// What it does: creates the declared queues that do not exist (parents before children) and
// replaces the spec of those whose declared spec differs from the stored one (weight,
// guarantee, borrowing limit, cap, queueing). It never deletes: a queue that exists but is not
// declared is left as it is, with its jobs, and listed in `undeclared` (delete it with
// Scheduler::DeleteQueue / `tessctl queue delete` once it is empty).
//
// All-or-nothing on the declaration: every spec is checked first (valid, named once, parent
// declared or existing, no child declared under a leaf that holds jobs) and nothing is changed
// when one fails. A store failure midway may leave part applied; applying again completes it.
//
// Thread safety: as the Scheduler's members; concurrent queue changes by others may make it
// report ALREADY_EXISTS or NOT_FOUND from the underlying call.
#pragma once

#include <string>
#include <vector>

#include <google/protobuf/repeated_ptr_field.h>

#include "tessera/export.h"
#include "tessera/scheduler.h"
#include "tessera/status.h"
#include "tessera/v1/queue.pb.h"

namespace tessera {

// What ApplyQueueTree did, by queue name, in the order it did it.
struct QueueTreeReport {
  std::vector<std::string> created;
  std::vector<std::string> updated;
  std::vector<std::string> unchanged;
  std::vector<std::string> undeclared;  // exist but are not declared; left as they are.
};

// Applies `declared` to `scheduler` as described above. Errors name the entry,
// "queues[2].name: ...": INVALID_ARGUMENT for a bad spec, a name declared twice, or a parent that
// is neither declared nor existing; FAILED_PRECONDITION for a child declared under an existing
// leaf that holds jobs; otherwise what CreateQueue or UpdateQueue return.
TESSERA_EXPORT StatusOr<QueueTreeReport> ApplyQueueTree(
    Scheduler& scheduler, const google::protobuf::RepeatedPtrField<v1::QueueSpec>& declared);

}  // namespace tessera
