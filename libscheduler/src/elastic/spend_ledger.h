// SpendLedger: what each queue has spent on burst capacity, against its budget.
//
// Spend is charged by use: each metering tick, a burst node's price for the time since the last
// tick is split evenly among the tasks on it, and each task's part is charged to its queue and
// every ancestor (so a parent's budget bounds its whole subtree). The part of an idle burst
// node is charged to the scheduler as a whole only (the global account, queue ""), which the
// global budget (ElasticOptions::budget_per_*) bounds; every charge to a queue is charged
// there too.
//
// Periods are UTC calendar periods of the engine's clock: the hour, the day, the month. A
// budget is spent once the period's spend reaches it; a budget of 0 is spent from the start. A
// queue may use burst capacity while it, each ancestor and the global account are within every
// budget they have (Refusal).
//
// The accounts are plain data (Accounts/Restore) so the scheduler keeps them in the store and a
// restart keeps what was spent.
//
// Thread safety: decision strand only.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/clock.h"
#include "tessera/v1/queue.pb.h"

namespace tessera {

class SpendLedger {
 public:
  struct Account {
    int64_t hour_index = 0;  // the period the amount below is of.
    double hour = 0;
    int64_t day_index = 0;
    double day = 0;
    int64_t month_index = 0;
    double month = 0;
    double rate_per_hour = 0;  // at the last metering tick.
  };

  // The global account's budget.
  void SetGlobalBudget(const v1::BurstBudget& budget) { budgets_[""] = budget; }
  void SetBudget(const std::string& queue, const v1::BurstBudget& budget);
  void ForgetQueue(const std::string& queue);

  // Charges `amount` to `queue` (empty: the global account only), its ancestors and the global
  // account.
  void Charge(const std::string& queue, double amount, TimestampUs now);
  // The rates at which each account spends now (per hour), replacing the last tick's.
  void SetRates(const std::map<std::string, double>& rates);

  // Why `queue` may not use burst capacity now (which budget of which account is spent), or
  // nullopt when it may.
  std::optional<std::string> Refusal(const std::string& queue, TimestampUs now) const;
  // The account of `queue` as QueueStatus shows it.
  v1::BurstSpend Spend(const std::string& queue, TimestampUs now) const;

  const std::map<std::string, Account>& accounts() const { return accounts_; }
  void Restore(const std::string& queue, const Account& account) { accounts_[queue] = account; }

  static int64_t HourIndex(TimestampUs t);
  static int64_t DayIndex(TimestampUs t);
  static int64_t MonthIndex(TimestampUs t);  // year * 12 + month - 1.

 private:
  // The account as of `now`: periods that have turned read 0.
  Account Current(const std::string& queue, TimestampUs now) const;
  std::optional<std::string> RefusalOf(const std::string& account, TimestampUs now) const;

  std::map<std::string, Account> accounts_;
  std::map<std::string, v1::BurstBudget> budgets_;
};

}  // namespace tessera
