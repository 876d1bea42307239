// `tessctl queues`' burst table: what each queue's subtree has spent on burst capacity (rented
// cloud nodes, docs/cloud-burst.md) in the current UTC hour, day and month, the rate it spends at
// now, the month's forecast at that rate, its own budget, and which budget keeps it off burst
// nodes. Only queues with a budget or some spend are listed, so a cluster without burst capacity
// prints nothing.
//
// Thread safety: a plain function.
#pragma once

#include <ostream>
#include <vector>

#include "tessera/v1/queue.pb.h"

namespace tessera::cli {

// Prints the table after a blank line, or nothing when no queue has a budget or has spent.
void PrintBurstSpend(const std::vector<v1::Queue>& queues, std::ostream& out);

}  // namespace tessera::cli
