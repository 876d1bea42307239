// replay_config: the scheduler a replay runs, from the same YAML tesserad reads
// (tessera/daemon_config.h, docs/daemon-config.md), a cluster, and --set overrides.
//
//   tessera-replay --config tesserad.yaml --cluster nodes.csv --set preemption.enabled=false
//
// The config file means exactly what it means to tesserad: LoadDaemonConfig completes and
// checks it, ToOptions maps it onto Options, and its `queues:` are applied with ApplyQueueTree
// after the scheduler opens. What a replay changes, and why: the store is in memory (virtual
// time makes commit latency irrelevant and nothing needs to outlive the run), the clock is a
// ManualClock, and tasks run on the built-in simulated executor (an executor_plugin or backends
// in the file are refused unless --cluster replaces them).
//
// --set <path>=<value> changes one field of the DaemonConfig before it is checked. <path> is the
// field's YAML path, dot-separated ("fair_share.usage_half_life_s", "preemption.enabled",
// "placement.strategy"); an element of a list of named entries is picked by name in brackets
// ("queues[research/vision].weight", "priority_classes[low].preemptible"). Supported: any
// single number, boolean ("true"/"false"), enum (its name, any case, '-' for '_': "best-fit")
// or string field. Not supported: lists themselves and whole sections (write them in the file).
// An unknown path is an error naming the key and the fields that exist there.
//
// A config file may also hold a `replay:` section, which only the replay reads (tesserad refuses
// it): what a research baseline changes about the trace rather than the scheduler.
//
//   replay:
//     one_queue: fifo   # every job of the trace goes to queue 'fifo' (created if not declared)
//
// The jobs keep their trace queue as their tenant: per-queue figures, Jain's index and
// finish-time fairness are reported per tenant, as for any other config, so a one-queue
// baseline and a fair-share config compare on the same footing. The section must be written as
// a block (a line `replay:` at the start of a line, its keys indented below it).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/options.h"
#include "tessera/status.h"
#include "tessera/v1/config.pb.h"

namespace tessera::replay {

struct ReplayConfigRequest {
  std::string config_path;  // tesserad.yaml; empty: tesserad's defaults.
  // Replaces the config's cluster: an openb node list (a .csv: openb_pod_csv.h) or a simulated
  // cluster YAML file (docs/simulated-cluster.md). Empty: the config's simulated cluster.
  std::string cluster_path;
  std::vector<std::string> sets;  // "path=value", applied in order.
  // Keep this share of each node group of the simulated cluster (rounded, at least one node),
  // to see the same trace on a smaller or larger cluster. 1: as given.
  double cluster_scale = 1;
};

struct ReplayConfig {
  v1::DaemonConfig daemon;  // the effective config, after defaults and --set.
  Options options;          // ready for Scheduler::Open but for the clock.
  // replay.one_queue: when set, every job is submitted to this queue instead of its own.
  std::string one_queue;
};

// What a config file's `replay:` section says, and the file's text with the section's lines
// blanked (so that line numbers in the tesserad parser's errors stay right).
struct ReplaySection {
  std::string one_queue;
  std::string daemon_yaml;
};

// Errors: INVALID_ARGUMENT "<source>:<line>: replay.<key>: ..." for an unknown key, an empty
// value, or a section not written as a block.
StatusOr<ReplaySection> SplitReplaySection(const std::string& yaml, const std::string& source);

// Errors: NOT_FOUND (a file), INVALID_ARGUMENT (the config, a --set, the cluster), each naming
// the file or key.
StatusOr<ReplayConfig> LoadReplayConfig(const ReplayConfigRequest& request);

// Applies one "path=value" to `config`. Errors: INVALID_ARGUMENT "--set <key>: <problem>".
Status ApplySetting(const std::string& key_value, v1::DaemonConfig* config);

}  // namespace tessera::replay
