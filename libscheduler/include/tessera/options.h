// Options: everything Scheduler::Open needs, as plain structs with documented defaults.
//
// Every field has a default that works for a small installation; the comment on each field says
// what changing it trades. Presets are named constructors (PlacementOptions::Spread()).
//
// Thread safety: plain values; copied by Scheduler::Open.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/clock.h"
#include "tessera/export.h"
#include "tessera/v1/node.pb.h"

namespace tessera {

struct StoreOptions {
  // SQLite file holding every job, queue, node flag and event. Empty means an in-memory store:
  // nothing survives the process (for tests and what-if simulations only).
  std::string path;

  // fsync each commit (SQLite synchronous=FULL). Turning it off makes commits faster but an
  // operating-system crash or power loss may lose the last acknowledged writes.
  bool durable = true;

  // Most writes that share one commit. Larger batches amortise the fsync over more writes; each
  // write still waits only for the commit it is part of.
  int max_batch = 1024;

  // Upper bound on the store's size in MiB; 0 means only the disk limits it. Writes beyond it
  // fail with RESOURCE_EXHAUSTED and change nothing, as a full disk would.
  int64_t max_size_mib = 0;

  // How long to wait for a lock held by another SQLite connection before giving up.
  std::chrono::milliseconds busy_timeout{2000};
};

struct FairShareOptions {
  // Half-life of the usage that orders queues. Zero orders queues by what they hold now (pure
  // DRF). A positive half-life adds their decayed past usage ("fair share with memory"), so a
  // queue that ran a lot recently yields to one that did not; the reported dominant share is
  // then that of holdings plus recent usage and may exceed 1.
  std::chrono::seconds usage_half_life{0};

  // How often decayed usage is folded into the queue order when usage_half_life > 0. Shorter is
  // more exact and costs O(queues log queues) each time.
  std::chrono::milliseconds usage_refresh{1000};
};

struct PlacementOptions {
  enum class Strategy {
    kBinpack,  // fill the fullest node that fits: keeps whole nodes free for big jobs.
    kSpread,   // use the emptiest node: spreads load and failure risk.
  };
  Strategy strategy = Strategy::kBinpack;

  static PlacementOptions Binpack() { return {Strategy::kBinpack}; }
  static PlacementOptions Spread() { return {Strategy::kSpread}; }
};

// A named priority. Higher values are considered first within a queue. Non-preemptible jobs are
// never chosen as victims (preemption arrives with the policies issue).
struct PriorityClass {
  std::string name;
  int32_t value = 0;
  bool preemptible = true;
};

TESSERA_EXPORT std::vector<PriorityClass> DefaultPriorityClasses();

struct EngineOptions {
  // Longest a decision pass holds the decision strand before yielding to other events.
  // Longer passes decide a burst faster; shorter ones keep event latency low.
  std::chrono::microseconds decision_slice{5000};

  // Open with decisions paused until Scheduler::ResumeDecisions (benchmarks, staged start-up).
  bool start_paused = false;

  // Attempts a job gets when its backend loses it (node gone, executor restarted without it).
  // After the last one the job FAILS instead of being requeued again.
  int max_attempts = 5;

  // How long to wait before retrying store writes that failed (disk full, I/O error). Decisions
  // pause meanwhile; nothing the engine did is dropped.
  std::chrono::milliseconds store_retry{1000};
};

struct Options {
  StoreOptions store;
  FairShareOptions fair_share;
  PlacementOptions placement;
  EngineOptions engine;

  // Priority classes jobs may name; a job naming none gets default_priority_class.
  std::vector<PriorityClass> priority_classes = DefaultPriorityClasses();
  std::string default_priority_class = "normal";

  // Leaf queue created on first open of an empty store, so jobs can be submitted at once.
  // Empty means no queue is created.
  std::string default_queue = "default";

  // Time source. Null means the real system clock.
  std::shared_ptr<Clock> clock;

  // The cluster the built-in simulated executor runs. When neither field is set, a small
  // built-in cluster is used (see DefaultSimulatedCluster()).
  std::optional<v1::SimulatedCluster> simulated_cluster;
  // A YAML file describing the simulated cluster; see docs/simulated-cluster.md.
  std::string simulated_cluster_file;
};

// Two nodes with 8 A100-80GB GPUs each and two with 4 H100-80GB: enough to show fairness,
// gangs and fractional GPUs.
TESSERA_EXPORT v1::SimulatedCluster DefaultSimulatedCluster();

}  // namespace tessera
