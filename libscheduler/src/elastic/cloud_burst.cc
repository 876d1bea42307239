#include "elastic/cloud_burst.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "common/log.h"
#include "model/inventory_diff.h"

namespace tessera {
namespace {

int64_t Us(std::chrono::seconds s) {
  return std::chrono::duration_cast<std::chrono::microseconds>(s).count();
}

}  // namespace

// The make-room step: asks for burst nodes for a queue's head that does not fit.
class CloudBurst::BurstStep final : public MakeRoomStep {
 public:
  explicit BurstStep(CloudBurst& burst) : burst_(burst) {}
  std::string_view name() const override { return "burst"; }
  MakeRoomReach reach() const override { return MakeRoomReach::kQueueHead; }

  MakeRoomOutcome MakeRoom(JobRecord& job, int min_tasks, MakeRoomAttempt) override {
    if (notes_.size() > kMaxNotes) notes_.clear();
    std::string& note = notes_[job.id];
    note.clear();
    if (!burst_.options_.enabled || burst_.autoscaler_.empty()) return MakeRoomOutcome::kNoRoom;
    Engine& engine = burst_.engine_;
    const TimestampUs now = burst_.clock_.NowUs();
    const std::string& queue = engine.QueueName(job.queue);
    if (std::optional<std::string> why = burst_.ledger_.Refusal(queue, now)) {
      note = "no burst capacity for it: " + *why;
      return MakeRoomOutcome::kNoRoom;
    }
    const TimestampUs due = job.key.submit_time_us + Us(burst_.options_.scale_out_after);
    if (now < due) {
      note = "burst capacity is asked for it once it has waited " +
             std::to_string(burst_.options_.scale_out_after.count()) + " s";
      ArmRetry(due);
      return MakeRoomOutcome::kNoRoom;
    }
    BurstDemand demand;
    demand.job = job.id;
    demand.tasks = min_tasks;
    demand.cpu_milli = job.shape.cpu_milli;
    demand.memory_mib = job.shape.memory_mib;
    demand.gpus_per_task = job.shape.gpu_count;
    demand.gpu_memory_mib = job.shape.gpu_memory_mib;
    if (job.shape.models != 0) {
      const GpuModels& models = engine.gpu_models();
      for (int m = 0; m < models.size(); ++m) {
        if (job.shape.AllowsModel(m)) demand.models.push_back(models.Name(m));
      }
    }
    demand.spot_allowed = engine.SpotAllowed(job);
    const Autoscaler::Answer answer = burst_.autoscaler_.ScaleOut(demand, now);
    note = answer.note;
    if (answer.kind == Autoscaler::Answer::Kind::kAsked) {
      LogInfo(burst_.log_, "burst: job {}: {}", job.id, answer.note);
    }
    if (answer.retry_at > now) ArmRetry(answer.retry_at);
    return MakeRoomOutcome::kNoRoom;  // it stays in line; the nodes joining place it.
  }

  void Explain(const JobRecord& job, std::string& reason) const override {
    if (burst_.autoscaler_.empty()) return;
    // A spent budget is said for any job of the queue, a dry run's too (it has no note).
    const std::string& queue = burst_.engine_.QueueName(job.queue);
    if (std::optional<std::string> why = burst_.ledger_.Refusal(queue, burst_.clock_.NowUs())) {
      reason += "; no burst capacity for it: " + *why;
      return;
    }
    auto it = notes_.find(job.id);
    if (it != notes_.end() && !it->second.empty()) reason += "; " + it->second;
  }

 private:
  static constexpr size_t kMaxNotes = 100'000;

  void ArmRetry(TimestampUs at) {
    if (retry_at_ != 0 && retry_at_ <= at) return;
    retry_at_ = at;
    burst_.engine_.timers().Schedule(
        at,
        [this, at] {
          if (retry_at_ != at) return;
          retry_at_ = 0;
          burst_.engine_.RetryBlockedQueues();
        },
        [this, at] { return retry_at_ == at; });
  }

  CloudBurst& burst_;
  std::unordered_map<uint64_t, std::string> notes_;  // by job: what the last ask found.
  TimestampUs retry_at_ = 0;
};

CloudBurst::CloudBurst(const ElasticOptions& options, Engine& engine, const Clock& clock,
                       CapacityProviders& providers, std::string request_prefix, SaveAccounts save,
                       LogOptions log)
    : options_(options),
      engine_(engine),
      clock_(clock),
      providers_(providers),
      save_(std::move(save)),
      log_(std::move(log)),
      autoscaler_(options, providers, std::move(request_prefix)) {
  v1::BurstBudget global;
  if (options.budget_per_hour) global.set_per_hour(*options.budget_per_hour);
  if (options.budget_per_day) global.set_per_day(*options.budget_per_day);
  if (options.budget_per_month) global.set_per_month(*options.budget_per_month);
  ledger_.SetBudget("", global);
  engine_.AddMakeRoomStep(std::make_unique<BurstStep>(*this));
  last_meter_us_ = clock_.NowUs();
}

CloudBurst::~CloudBurst() = default;

void CloudBurst::Restore(const std::map<std::string, SpendLedger::Account>& accounts) {
  for (const auto& [queue, account] : accounts) ledger_.Restore(queue, account);
}

void CloudBurst::SetQueueBudget(const std::string& queue, const v1::BurstBudget& budget) {
  ledger_.SetBudget(queue, budget);
}

void CloudBurst::ForgetQueue(const std::string& queue) {
  ledger_.ForgetQueue(queue);
  refused_.erase(queue);
}

void CloudBurst::RefreshRefusals() {
  const TimestampUs now = clock_.NowUs();
  for (const v1::Queue& q : engine_.Queues()) {
    const std::string& name = q.spec().name();
    const std::string why = ledger_.Refusal(name, now).value_or("");
    auto it = refused_.find(name);
    const std::string& told = it == refused_.end() ? std::string() : it->second;
    if (why == told) continue;
    if (!why.empty()) {
      LogInfo(log_, "burst: queue '{}' may not use burst capacity: {}", name, why);
    }
    (void)engine_.SetBurstRefusal(name, why);
    refused_[name] = why;
  }
}

v1::BurstSpend CloudBurst::Spend(const std::string& queue) const {
  return ledger_.Spend(queue, clock_.NowUs());
}

void CloudBurst::Label(const BurstGroup& group, v1::NodeSpec& spec) {
  (*spec.mutable_labels())[kBurstMarketLabel] =
      group.group.market() == v1::SPOT ? "spot" : "on-demand";
  (*spec.mutable_labels())[kNodeGroupLabel] = group.group.name();
}

void CloudBurst::TakeJoining(const std::string& backend, std::vector<v1::NodeSpec>& nodes,
                             bool added) {
  const TimestampUs now = clock_.NowUs();
  for (v1::NodeSpec& node : nodes) {
    const BurstGroup* group = autoscaler_.NodeJoined(backend, node, added, now);
    if (group != nullptr) Label(*group, node);
  }
  if (!autoscaler_.nodes().empty()) ArmMetering();
}

void CloudBurst::TakeLeft(const std::vector<std::string>& nodes) {
  // The time since the last tick is charged before the node goes, to whoever ran there.
  const TimestampUs now = clock_.NowUs();
  std::map<std::string, double> rates;
  for (const std::string& node : nodes) {
    auto it = autoscaler_.nodes().find(node);
    if (it != autoscaler_.nodes().end()) {
      const TimestampUs from = std::max(last_meter_us_, it->second.joined_us);
      ChargeNode(node, autoscaler_.group(it->second.group).group.price_per_hour(),
                 static_cast<double>(now - from) / (3600.0 * 1'000'000), rates);
    }
    autoscaler_.NodeLeft(node);  // burst or not: it may have been waited for.
  }
}

void CloudBurst::ProvisionEnded(const std::string& request_id, bool succeeded,
                                const std::string& why, const std::vector<std::string>& nodes) {
  const Autoscaler::Ended ended = autoscaler_.ProvisionEnded(
      request_id, succeeded, why, nodes,
      [this](const std::string& node) { return engine_.HasNode(node); }, clock_.NowUs());
  for (const std::string& node : ended.refused) {
    LogWarning(log_,
               "burst: request {} names node '{}' as one it added, but the node was there "
               "before the request; it is not taken as a burst node",
               request_id, node);
  }
  // Nodes that joined through their executor before the request ended: labelled now.
  if (!ended.taken.empty()) {
    InventoryDiff relabelled;
    for (v1::Node& node : engine_.Nodes()) {
      if (std::find(ended.taken.begin(), ended.taken.end(), node.spec().name()) ==
          ended.taken.end()) {
        continue;
      }
      const auto& burst = autoscaler_.nodes().at(node.spec().name());
      Label(autoscaler_.group(burst.group), *node.mutable_spec());
      relabelled.changed.push_back(node.spec());
    }
    const std::string* provider = autoscaler_.ProviderOf(ended.taken.front());
    const Status labelled = engine_.ApplyInventoryChange(relabelled, *provider);
    if (!labelled.ok()) LogWarning(log_, "burst: labelling burst nodes: {}", labelled.message());
    ArmMetering();
  }
  // A failure leaves the job to ask again (another group, on-demand after spot).
  if (!succeeded) engine_.RetryBlockedQueues();
}

void CloudBurst::Interrupted(const std::string& node) {
  autoscaler_.Interrupted(node, clock_.NowUs());
}

void CloudBurst::ArmMetering() {
  if (metering_armed_) return;
  metering_armed_ = true;
  engine_.timers().Schedule(
      clock_.NowUs() + Us(options_.metering_interval),
      [this] {
        metering_armed_ = false;
        Meter();
        if (!autoscaler_.nodes().empty()) ArmMetering();
      },
      [this] { return !autoscaler_.nodes().empty(); });
}

void CloudBurst::ChargeNode(const std::string& node, double price, double hours,
                            std::map<std::string, double>& rates) {
  const TimestampUs now = clock_.NowUs();
  const std::optional<std::vector<std::string>> queues = engine_.TaskQueuesOn(node);
  rates[""] += price;
  if (!queues || queues->empty()) {
    ledger_.Charge("", price * hours, now);  // idle: the scheduler's, no queue's.
    return;
  }
  const double part = 1.0 / static_cast<double>(queues->size());
  for (const std::string& queue : *queues) {
    ledger_.Charge(queue, price * hours * part, now);
    // The rate of each ancestor too, as the charge goes up the path.
    std::string path = queue;
    while (!path.empty()) {
      rates[path] += price * part;
      const size_t slash = path.rfind('/');
      path = slash == std::string::npos ? "" : path.substr(0, slash);
    }
  }
}

void CloudBurst::Meter() {
  const TimestampUs now = clock_.NowUs();
  std::map<std::string, double> rates;
  for (const auto& [node, state] : autoscaler_.nodes()) {
    // A node that joined since the last tick is charged from when it joined.
    const TimestampUs from = std::max(last_meter_us_, state.joined_us);
    ChargeNode(node, autoscaler_.group(state.group).group.price_per_hour(),
               static_cast<double>(now - from) / (3600.0 * 1'000'000), rates);
  }
  last_meter_us_ = now;
  ledger_.SetRates(rates);
  // Idle burst nodes past their cooldown: drained (nothing new lands there), then given back.
  const std::vector<std::string> idle = autoscaler_.ScaleIn(
      [this](const std::string& node) {
        const auto queues = engine_.TaskQueuesOn(node);
        return queues && queues->empty();
      },
      now);
  for (const std::string& node : idle) {
    (void)engine_.SetNodeFlags(node, /*cordoned=*/true, /*draining=*/true);
    const auto& state = autoscaler_.nodes().at(node);
    LogInfo(log_, "burst: node '{}' idle for {} s: given back", node,
            options_.scale_in_after.count());
    providers_.Deprovision(autoscaler_.group(state.group).backend, {node});
  }
  RefreshRefusals();
  if (save_) save_(ledger_.accounts());
}

}  // namespace tessera
