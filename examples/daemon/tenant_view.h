// What a tenant may read of scheduler text that can mention other jobs: a preemption reason
// ("preempted to make room for job 12 (higher priority)") or a reservation hand-over names the
// other job, and that job may be another tenant's. Tenants get such text with every job id
// but their own job's replaced; admins get it unchanged.
//
// Thread safety: free functions on values.
#pragma once

#include <string>

#include "tessera/scheduler.h"

namespace tesserad {

// `reason` with every "job <id>" whose id is not `own` written as "another job".
std::string WithoutOtherJobIds(const std::string& reason, tessera::JobId own);

}  // namespace tesserad
