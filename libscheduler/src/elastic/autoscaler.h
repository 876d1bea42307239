// Autoscaler: which burst nodes to ask for, and which to give back.
//
// Scale-out: a job the private nodes (and the burst nodes there are) cannot hold, at the head of
// its queue, asks for nodes (ScaleOut). The autoscaler picks the node group that holds its tasks
// at the least cost per useful GPU-hour (the nodes it takes times their price, over the GPUs the
// job uses on them); a group whose shape cannot hold one task is never chosen. Spot groups come
// first when the job may run on spot; otherwise, or when every spot group is refused (backing
// off after a failed request or an interruption) or priced above max_spot_price_per_hour, an
// on-demand group. One request per job at a time; at most max_nodes burst nodes (present and
// asked for), at most max_requests_per_minute requests in any minute.
//
// Which nodes are burst nodes: a node joins through any backend, not only its provider (EC2
// instances join as Kubernetes nodes, under EC2's host names). A joining node is a burst node of
// a group when
//   - a provisioning request's PROVISION_COMPLETED named it (ProvisionEnded): taken at once if it
//     joined while the request was under way, else when it joins; a node that was there before
//     the request is not the provider's to name and is refused;
//   - it carries the label kNodeGroupLabel naming a group (a boot script sets it, e.g. kubelet's
//     --node-labels): how a restarted scheduler knows the burst nodes a provider still has;
//   - or its provider reports it itself, named "<group shape name>-..." (the sim plugin).
//
// Scale-in: each metering tick the caller says which burst nodes have no task (ScaleIn); one
// idle for scale_in_after is handed back (the caller drains it first), unless its group would go
// below its min_nodes.
//
// A failed request or a spot interruption puts the group in back-off (group_backoff, doubled for
// each further failure inside it, at most 16x).
//
// Deterministic: it reads only the times it is given (the engine's clock) and its own state; the
// request ids it makes are "<prefix>-<n>", prefix set by the caller (unique per open, so a
// provider that keeps ids for idempotency never mistakes a new request for an old one).
//
// Thread safety: decision strand only.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "elastic/capacity_providers.h"
#include "tessera/clock.h"
#include "tessera/options.h"

namespace tessera {

// What a waiting job needs of burst capacity.
struct BurstDemand {
  uint64_t job = 0;
  int tasks = 1;  // tasks that must fit (the gang minimum, or one more task).
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpus_per_task = 0;
  int64_t gpu_memory_mib = 0;       // per GPU; 0 = any.
  std::vector<std::string> models;  // GPU models it accepts; empty = any.
  bool spot_allowed = false;
};

class Autoscaler {
 public:
  Autoscaler(const ElasticOptions& options, CapacityProviders& providers, std::string id_prefix);

  struct Answer {
    enum class Kind {
      kAsked,     // a request was made now.
      kUnderWay,  // a request for this job is under way.
      kNoGroup,   // no group can hold the job (or all are refused).
      kBounded,   // max_nodes or the request rate says no; retry_at says when to look again.
    };
    Kind kind = Kind::kNoGroup;
    std::string note;  // for the job's waiting reason.
    TimestampUs retry_at = 0;
  };
  Answer ScaleOut(const BurstDemand& demand, TimestampUs now);

  // A request ended. A failure backs the group off; the job may ask again. A success names the
  // nodes that joined (`nodes`, maybe none); `present` says whether a node is in the cluster.
  struct Ended {
    std::vector<std::string> taken;    // joined already; burst nodes from now (label them).
    std::vector<std::string> refused;  // there before the request: not taken.
  };
  Ended ProvisionEnded(const std::string& request_id, bool succeeded, const std::string& why,
                       const std::vector<std::string>& nodes,
                       const std::function<bool(const std::string&)>& present, TimestampUs now);

  // `node` joined through `backend` (`added`), or was reported again (changed, or present at
  // open): returns the group it belongs to when it is a burst node (see above), else nullptr.
  const BurstGroup* NodeJoined(const std::string& backend, const v1::NodeSpec& node, bool added,
                               TimestampUs now);
  void NodeLeft(const std::string& node);
  // The backend of the group `node` is a burst node of; nullptr when it is not one.
  const std::string* ProviderOf(const std::string& node) const;
  // The cloud takes `node` back soon: its group backs off (its spot capacity is scarce).
  void Interrupted(const std::string& node, TimestampUs now);

  // Burst nodes idle for scale_in_after, to give back; `idle` says whether a node has no task
  // now. The nodes returned are marked leaving (they no longer count as idle capacity).
  std::vector<std::string> ScaleIn(const std::function<bool(const std::string&)>& idle,
                                   TimestampUs now);

  struct BurstNode {
    size_t group = 0;
    TimestampUs joined_us = 0;
    std::optional<TimestampUs> idle_since;
    bool leaving = false;
  };
  const std::map<std::string, BurstNode>& nodes() const { return nodes_; }
  const BurstGroup& group(size_t i) const { return groups_[i]; }
  size_t requests_under_way() const { return requests_.size(); }
  // Until when the group is refused (0: it is not).
  TimestampUs BackoffUntil(size_t group) const { return state_[group].backoff_until; }
  bool empty() const { return groups_.empty(); }

 private:
  struct Request {
    size_t group = 0;
    int count = 0;
    uint64_t job = 0;
    TimestampUs started_us = 0;
  };
  struct GroupState {
    int nodes = 0;    // present (not yet gone).
    int pending = 0;  // asked for, not joined.
    TimestampUs backoff_until = 0;
    int failures = 0;  // in a row, within back-off.
  };
  // Nodes of group `g` the demand takes (0: one task does not fit on its shape).
  static int NodesFor(const BurstDemand& demand, const v1::NodeGroup& g);
  void BackOff(size_t group, TimestampUs now);
  void Take(const std::string& node, size_t group, TimestampUs now);
  // The group the label kNodeGroupLabel of `node` names, if any.
  std::optional<size_t> LabelledGroup(const v1::NodeSpec& node) const;
  int BurstNodesCounted() const;

  const ElasticOptions options_;
  CapacityProviders& providers_;
  const std::string id_prefix_;
  std::vector<BurstGroup> groups_;
  std::vector<GroupState> state_;
  uint64_t next_request_ = 1;
  std::map<std::string, Request> requests_;  // under way, by request id.
  std::map<uint64_t, std::string> by_job_;   // the request under way for a job.
  std::deque<TimestampUs> recent_requests_;  // start times within the last minute.
  std::map<std::string, BurstNode> nodes_;
  // Named by a completed request, not joined yet: their group (still counted as pending).
  std::map<std::string, size_t> expected_;
  // Joined while requests were under way, not (yet) known as burst nodes: when.
  std::map<std::string, TimestampUs> unclaimed_;
};

}  // namespace tessera
