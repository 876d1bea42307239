// The numeric bounds and exclusive choices of tessera::Options that Scheduler::Open refuses:
// each error is INVALID_ARGUMENT and its message starts with the field path
// ("store.busy_timeout: must be >= 0 ms, got -1"), the same path docs/options.md uses.
#pragma once

#include "tessera/options.h"
#include "tessera/status.h"

namespace tessera {

// Store, placement, engine, preemption, GPU health, elastic, executor and plugin option bounds.
Status ValidateOptionBounds(const Options& options);

}  // namespace tessera
