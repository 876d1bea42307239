// SchedulerImpl, continued: cloud burst. The CloudBurst that asks the capacity providers among
// the backends for nodes, its spend in the store, and the burst nodes labelled as they join.
#include <algorithm>

#include "api/scheduler_impl.h"
#include "common/log.h"

namespace tessera {

Status SchedulerImpl::OpenBurst() {
  const bool any_provider = std::any_of(backends_.begin(), backends_.end(),
                                        [](const auto& b) { return b->info().capacity_provider; });
  if (!any_provider || !options_.elastic.enabled) return Status::Ok();
  burst_providers_ = std::make_unique<PluginCapacityProviders>(backends_);
  burst_ = std::make_unique<CloudBurst>(
      options_.elastic, *engine_, *clock_, *burst_providers_,
      "burst-" + std::to_string(clock_->NowUs()),
      [this](const std::map<std::string, SpendLedger::Account>& accounts) {
        SaveBurstAccounts(accounts);
      },
      options_.log);
  std::vector<v1::BurstAccountRecord> records;
  TESSERA_RETURN_IF_ERROR(store_->LoadBurstAccounts(&records));
  std::map<std::string, SpendLedger::Account> accounts;
  for (const v1::BurstAccountRecord& r : records) {
    accounts[r.queue()] = {r.hour_index(), r.hour(),        r.day_index(),
                           r.day(),        r.month_index(), r.month()};
  }
  burst_->Restore(accounts);
  return Status::Ok();
}

void SchedulerImpl::SaveBurstAccounts(const std::map<std::string, SpendLedger::Account>& accounts) {
  std::vector<v1::BurstAccountRecord> records;
  for (const auto& [queue, a] : accounts) {
    v1::BurstAccountRecord& r = records.emplace_back();
    r.set_queue(queue);
    r.set_hour_index(a.hour_index);
    r.set_hour(a.hour);
    r.set_day_index(a.day_index);
    r.set_day(a.day);
    r.set_month_index(a.month_index);
    r.set_month(a.month);
  }
  const LogOptions log = options_.log;
  store_->Write(
      [records = std::move(records)](store::WriteTransaction& t) -> Status {
        for (const v1::BurstAccountRecord& r : records) {
          TESSERA_RETURN_IF_ERROR(t.PutBurstAccount(r));
        }
        return Status::Ok();
      },
      [log](const Status& status) {
        // The next tick writes every account again, so one refused write loses nothing for
        // long; it is logged.
        if (!status.ok()) LogWarning(log, "burst spend not saved: {}", status.message());
      });
}

void SchedulerImpl::TakeBurstNodes(BackendSet::Member member, std::vector<v1::NodeSpec>& nodes,
                                   bool added) {
  if (burst_) burst_->TakeJoining(backend_set_->name(member), nodes, added);
}

Status SchedulerImpl::ApplyQueueSpec(const v1::QueueSpec& spec, Status applied) {
  if (!applied.ok() || !burst_) return applied;
  burst_->SetQueueBudget(spec.name(), spec.burst_budget());
  burst_->RefreshRefusals();
  return applied;
}

v1::Queue SchedulerImpl::WithBurstSpend(v1::Queue queue) const {
  if (burst_) *queue.mutable_status()->mutable_burst() = burst_->Spend(queue.spec().name());
  return queue;
}

}  // namespace tessera
