#include "elastic/autoscaler.h"

#include <algorithm>
#include <limits>

#include "model/node_state.h"

namespace tessera {
namespace {

constexpr int64_t kMinuteUs = 60'000'000;
constexpr int kMaxBackoffFactor = 16;

std::string Money(double amount) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", amount);
  return text;
}

bool ModelAccepted(const BurstDemand& demand, const std::string& model) {
  if (demand.models.empty()) return true;
  return std::find(demand.models.begin(), demand.models.end(), model) != demand.models.end();
}

}  // namespace

Autoscaler::Autoscaler(const ElasticOptions& options, CapacityProviders& providers,
                       std::string id_prefix)
    : options_(options),
      providers_(providers),
      id_prefix_(std::move(id_prefix)),
      groups_(providers.Groups()),
      state_(groups_.size()) {}

int Autoscaler::NodesFor(const BurstDemand& demand, const v1::NodeGroup& g) {
  const v1::NodeSpec& shape = g.shape();
  int per_node = std::numeric_limits<int>::max();
  if (demand.cpu_milli > 0) {
    per_node = std::min<int64_t>(per_node, shape.cpu_milli() / demand.cpu_milli);
  }
  if (demand.memory_mib > 0) {
    per_node = std::min<int64_t>(per_node, shape.memory_mib() / demand.memory_mib);
  }
  if (demand.gpus_per_task > 0) {
    int usable = 0;
    for (const v1::GpuDevice& gpu : shape.gpus()) {
      if (!ModelAccepted(demand, gpu.model())) continue;
      if (demand.gpu_memory_mib > 0 && gpu.memory_mib() < demand.gpu_memory_mib) continue;
      ++usable;
    }
    per_node = std::min(per_node, usable / demand.gpus_per_task);
  }
  if (per_node <= 0) return 0;
  if (per_node == std::numeric_limits<int>::max()) per_node = demand.tasks;
  return (demand.tasks + per_node - 1) / per_node;
}

int Autoscaler::BurstNodesCounted() const {
  int counted = 0;
  for (const GroupState& s : state_) counted += s.nodes + s.pending;
  return counted;
}

Autoscaler::Answer Autoscaler::ScaleOut(const BurstDemand& demand, TimestampUs now) {
  Answer answer;
  if (auto under_way = by_job_.find(demand.job); under_way != by_job_.end()) {
    const Request& r = requests_.at(under_way->second);
    answer.kind = Answer::Kind::kUnderWay;
    answer.note = "burst capacity asked for it: " + std::to_string(r.count) + " node(s) of '" +
                  groups_[r.group].group.name() + "' (request " + under_way->second + ")";
    return answer;
  }
  // The cheapest group per useful GPU-hour, spot first where allowed. Refusals are noted so the
  // job's reason says why none was taken.
  std::optional<size_t> best;
  int best_nodes = 0;
  double best_cost = 0;
  bool best_spot = false;
  std::string refused;
  const double useful = static_cast<double>(demand.tasks) * std::max(1, demand.gpus_per_task);
  for (size_t i = 0; i < groups_.size(); ++i) {
    const v1::NodeGroup& g = groups_[i].group;
    const bool spot = g.market() == v1::SPOT;
    if (spot && !demand.spot_allowed) continue;
    const int nodes = NodesFor(demand, g);
    if (nodes == 0) continue;  // its shape cannot hold one task.
    if (state_[i].backoff_until > now) {
      refused += "; '" + g.name() + "' backs off after a failure or interruption";
      continue;
    }
    if (spot && options_.max_spot_price_per_hour &&
        g.price_per_hour() > *options_.max_spot_price_per_hour) {
      refused += "; '" + g.name() + "' costs more than max_spot_price_per_hour";
      continue;
    }
    if (g.max_nodes() > 0 && state_[i].nodes + state_[i].pending + nodes > g.max_nodes()) {
      refused += "; '" + g.name() + "' is at its max_nodes";
      continue;
    }
    const double cost = nodes * g.price_per_hour() / useful;
    // Spot first: any usable spot group beats every on-demand one.
    const bool better = !best || (spot && !best_spot) || (spot == best_spot && cost < best_cost);
    if (better) {
      best = i;
      best_nodes = nodes;
      best_cost = cost;
      best_spot = spot;
    }
  }
  if (!best) {
    answer.kind = Answer::Kind::kNoGroup;
    answer.note = "no burst node group can take it" + refused;
    return answer;
  }
  if (BurstNodesCounted() + best_nodes > options_.max_nodes) {
    answer.kind = Answer::Kind::kBounded;
    answer.note =
        "burst capacity is at elastic.max_nodes (" + std::to_string(options_.max_nodes) + ")";
    return answer;
  }
  while (!recent_requests_.empty() && recent_requests_.front() <= now - kMinuteUs) {
    recent_requests_.pop_front();
  }
  if (static_cast<int>(recent_requests_.size()) >= options_.max_requests_per_minute) {
    answer.kind = Answer::Kind::kBounded;
    answer.retry_at = recent_requests_.front() + kMinuteUs;
    answer.note = "burst requests are at elastic.max_requests_per_minute (" +
                  std::to_string(options_.max_requests_per_minute) + ")";
    return answer;
  }
  const std::string id = id_prefix_ + "-" + std::to_string(next_request_++);
  requests_[id] = {*best, best_nodes, demand.job, now};
  by_job_[demand.job] = id;
  recent_requests_.push_back(now);
  state_[*best].pending += best_nodes;
  const BurstGroup& chosen = groups_[*best];
  providers_.Provision(chosen.backend, chosen.group.name(), best_nodes, id);
  answer.kind = Answer::Kind::kAsked;
  answer.note = "burst capacity asked for it: " + std::to_string(best_nodes) + " node(s) of '" +
                chosen.group.name() + "' at " + Money(chosen.group.price_per_hour()) +
                "/node-hour (request " + id + ")";
  return answer;
}

Autoscaler::Ended Autoscaler::ProvisionEnded(const std::string& request_id, bool succeeded,
                                             const std::string& /*why*/,
                                             const std::vector<std::string>& nodes,
                                             const std::function<bool(const std::string&)>& present,
                                             TimestampUs now) {
  Ended ended;
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return ended;  // not ours, or of an earlier run.
  const Request request = it->second;
  requests_.erase(it);
  by_job_.erase(request.job);
  GroupState& s = state_[request.group];
  if (!succeeded) {
    s.pending = std::max(0, s.pending - request.count);  // none is coming.
    BackOff(request.group, now);
  } else {
    s.failures = 0;
    // Each node named is one of the request's: joined (counted as it came, or taken now) or
    // coming (still pending). What the request asked beyond them is not coming.
    int accounted = 0;
    for (const std::string& node : nodes) {
      if (nodes_.count(node) != 0) {
        ++accounted;
        continue;
      }
      auto joined = unclaimed_.find(node);
      if (joined != unclaimed_.end() && joined->second >= request.started_us) {
        Take(node, request.group, joined->second);
        unclaimed_.erase(joined);
        ended.taken.push_back(node);
        ++accounted;
      } else if (present(node)) {
        ended.refused.push_back(node);
      } else {
        expected_[node] = request.group;
        ++accounted;
      }
    }
    // A provider that names no node (an older one) leaves its nodes to their names or labels.
    if (!nodes.empty()) s.pending = std::max(0, s.pending - std::max(0, request.count - accounted));
  }
  if (requests_.empty()) unclaimed_.clear();
  return ended;
}

void Autoscaler::Take(const std::string& node, size_t group, TimestampUs now) {
  nodes_[node] = {group, now, std::nullopt, false};
  GroupState& s = state_[group];
  ++s.nodes;
  s.pending = std::max(0, s.pending - 1);
}

std::optional<size_t> Autoscaler::LabelledGroup(const v1::NodeSpec& node) const {
  auto label = node.labels().find(kNodeGroupLabel);
  if (label == node.labels().end()) return std::nullopt;
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (groups_[i].group.name() == label->second) return i;
  }
  return std::nullopt;
}

const BurstGroup* Autoscaler::NodeJoined(const std::string& backend, const v1::NodeSpec& spec,
                                         bool added, TimestampUs now) {
  const std::string& node = spec.name();
  if (auto known = nodes_.find(node); known != nodes_.end()) return &groups_[known->second.group];
  if (auto expected = expected_.find(node); expected != expected_.end()) {
    const size_t group = expected->second;
    expected_.erase(expected);
    Take(node, group, now);
    return &groups_[group];
  }
  if (std::optional<size_t> group = LabelledGroup(spec)) {
    Take(node, *group, now);
    return &groups_[*group];
  }
  for (size_t i = 0; i < groups_.size(); ++i) {
    const std::string& prefix = groups_[i].group.shape().name();
    if (groups_[i].backend != backend || prefix.empty()) continue;
    if (node.size() <= prefix.size() + 1 || node.compare(0, prefix.size(), prefix) != 0 ||
        node[prefix.size()] != '-') {
      continue;
    }
    Take(node, i, now);
    return &groups_[i];
  }
  // Perhaps a node a request under way brings, under a name only its completion will tell.
  if (added && !requests_.empty()) unclaimed_[node] = now;
  return nullptr;
}

const std::string* Autoscaler::ProviderOf(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : &groups_[it->second.group].backend;
}

void Autoscaler::NodeLeft(const std::string& node) {
  unclaimed_.erase(node);
  if (auto expected = expected_.find(node); expected != expected_.end()) {
    GroupState& s = state_[expected->second];  // it is not coming after all.
    s.pending = std::max(0, s.pending - 1);
    expected_.erase(expected);
  }
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  --state_[it->second.group].nodes;
  nodes_.erase(it);
}

void Autoscaler::Interrupted(const std::string& node, TimestampUs now) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  it->second.leaving = true;
  BackOff(it->second.group, now);
}

void Autoscaler::BackOff(size_t group, TimestampUs now) {
  GroupState& s = state_[group];
  const int factor = std::min(kMaxBackoffFactor, 1 << std::min(s.failures, 4));
  ++s.failures;
  s.backoff_until =
      now +
      factor *
          std::chrono::duration_cast<std::chrono::microseconds>(options_.group_backoff).count();
}

std::vector<std::string> Autoscaler::ScaleIn(const std::function<bool(const std::string&)>& idle,
                                             TimestampUs now) {
  const int64_t after_us =
      std::chrono::duration_cast<std::chrono::microseconds>(options_.scale_in_after).count();
  std::vector<int> staying(groups_.size(), 0);
  for (const auto& [name, n] : nodes_) staying[n.group] += n.leaving ? 0 : 1;
  std::vector<std::string> give_back;
  for (auto& [name, n] : nodes_) {
    if (n.leaving) continue;
    if (!idle(name)) {
      n.idle_since.reset();
      continue;
    }
    if (!n.idle_since) n.idle_since = now;
    if (now - *n.idle_since < after_us) continue;
    if (staying[n.group] <= groups_[n.group].group.min_nodes()) continue;
    --staying[n.group];
    n.leaving = true;
    give_back.push_back(name);
  }
  return give_back;
}

}  // namespace tessera
