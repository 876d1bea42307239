// Queue paths: a queue is named by its place in the hierarchy, "/"-separated segments from the
// root down ("org/team/user"). Each segment is 1 to 63 letters, digits, '.', '_' or '-',
// starting with a letter or digit, and a path is at most kMaxQueueDepth segments deep.
//
// The rule is the model's, so that every layer that reads a queue name (job specs, queue specs,
// the daemon's token prefixes) checks it the same way.
#pragma once

#include <string>

#include "tessera/status.h"

namespace tessera {

inline constexpr int kMaxQueueDepth = 8;

// OK if `name` is a queue path; otherwise INVALID_ARGUMENT, with `field` naming it.
Status ValidateQueueName(const std::string& name, const std::string& field);

}  // namespace tessera
