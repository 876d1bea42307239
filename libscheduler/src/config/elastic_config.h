// The `elastic:` section of the daemon configuration (v1::ElasticConfig in config.proto) and the
// tessera::ElasticOptions it maps onto: when burst nodes are asked of the capacity providers, how
// many, and the whole scheduler's spend limits (docs/cloud-burst.md). Split from
// daemon_config.cc as one section with its defaults, checks and mapping together.
#pragma once

#include "tessera/options.h"
#include "tessera/status.h"
#include "tessera/v1/config.pb.h"

namespace tessera {

// Fills every unset field whose default is not "no limit" with ElasticOptions' default.
void ApplyElasticConfigDefaults(v1::ElasticConfig* elastic);

// Checks a section completed by ApplyElasticConfigDefaults. Errors: INVALID_ARGUMENT naming the
// field under "elastic.", such as "elastic.max_nodes: must be > 0, got 0" or
// "elastic.budget_per_day: must be a finite number >= 0, got -1".
Status ValidateElasticConfig(const v1::ElasticConfig& elastic);

// The options of a section completed by ApplyElasticConfigDefaults; an unset price or budget
// stays unset (no limit).
ElasticOptions ElasticOptionsOf(const v1::ElasticConfig& elastic);

}  // namespace tessera
