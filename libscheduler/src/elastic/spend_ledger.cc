#include "elastic/spend_ledger.h"

#include <chrono>
#include <cstdio>

namespace tessera {
namespace {

constexpr int64_t kHourUs = 3600LL * 1'000'000;
constexpr int64_t kDayUs = 24 * kHourUs;

std::string Money(double amount) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", amount);
  return text;
}

// `queue` and each ancestor, then the global account "".
std::vector<std::string> AccountsOf(const std::string& queue) {
  std::vector<std::string> out;
  std::string path = queue;
  while (!path.empty()) {
    out.push_back(path);
    const size_t slash = path.rfind('/');
    path = slash == std::string::npos ? "" : path.substr(0, slash);
  }
  out.push_back("");
  return out;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

}  // namespace

int64_t SpendLedger::HourIndex(TimestampUs t) { return FloorDiv(t, kHourUs); }
int64_t SpendLedger::DayIndex(TimestampUs t) { return FloorDiv(t, kDayUs); }
int64_t SpendLedger::MonthIndex(TimestampUs t) {
  const std::chrono::sys_days day{std::chrono::days{DayIndex(t)}};
  const std::chrono::year_month_day ymd{day};
  return static_cast<int>(ymd.year()) * 12 + static_cast<unsigned>(ymd.month()) - 1;
}

void SpendLedger::SetBudget(const std::string& queue, const v1::BurstBudget& budget) {
  if (!budget.has_per_hour() && !budget.has_per_day() && !budget.has_per_month()) {
    budgets_.erase(queue);
    return;
  }
  budgets_[queue] = budget;
}

void SpendLedger::ForgetQueue(const std::string& queue) {
  budgets_.erase(queue);
  accounts_.erase(queue);
}

SpendLedger::Account SpendLedger::Current(const std::string& queue, TimestampUs now) const {
  Account a;
  a.hour_index = HourIndex(now);
  a.day_index = DayIndex(now);
  a.month_index = MonthIndex(now);
  auto it = accounts_.find(queue);
  if (it == accounts_.end()) return a;
  const Account& kept = it->second;
  if (kept.hour_index == a.hour_index) a.hour = kept.hour;
  if (kept.day_index == a.day_index) a.day = kept.day;
  if (kept.month_index == a.month_index) a.month = kept.month;
  a.rate_per_hour = kept.rate_per_hour;
  return a;
}

void SpendLedger::Charge(const std::string& queue, double amount, TimestampUs now) {
  for (const std::string& name : AccountsOf(queue)) {
    Account a = Current(name, now);
    a.hour += amount;
    a.day += amount;
    a.month += amount;
    accounts_[name] = a;
  }
}

void SpendLedger::SetRates(const std::map<std::string, double>& rates) {
  for (auto& [name, account] : accounts_) account.rate_per_hour = 0;
  for (const auto& [name, rate] : rates) accounts_[name].rate_per_hour = rate;
}

std::optional<std::string> SpendLedger::RefusalOf(const std::string& name, TimestampUs now) const {
  auto budget = budgets_.find(name);
  if (budget == budgets_.end()) return std::nullopt;
  const v1::BurstBudget& b = budget->second;
  const Account a = Current(name, now);
  const std::string who = name.empty() ? "the global burst budget" : "queue '" + name + "'";
  auto spent = [&](const char* period, double used, double limit) {
    return who + " has spent its burst budget per " + period + " (" + Money(used) + " of " +
           Money(limit) + ")";
  };
  if (b.has_per_hour() && a.hour >= b.per_hour()) return spent("hour", a.hour, b.per_hour());
  if (b.has_per_day() && a.day >= b.per_day()) return spent("day", a.day, b.per_day());
  if (b.has_per_month() && a.month >= b.per_month()) {
    return spent("month", a.month, b.per_month());
  }
  return std::nullopt;
}

std::optional<std::string> SpendLedger::Refusal(const std::string& queue, TimestampUs now) const {
  for (const std::string& name : AccountsOf(queue)) {
    if (std::optional<std::string> why = RefusalOf(name, now)) return why;
  }
  return std::nullopt;
}

v1::BurstSpend SpendLedger::Spend(const std::string& queue, TimestampUs now) const {
  const Account a = Current(queue, now);
  v1::BurstSpend out;
  out.set_this_hour(a.hour);
  out.set_today(a.day);
  out.set_this_month(a.month);
  out.set_rate_per_hour(a.rate_per_hour);
  // The rest of the month at today's rate.
  const std::chrono::sys_days day{std::chrono::days{DayIndex(now)}};
  const std::chrono::year_month_day ymd{day};
  const std::chrono::sys_days next_month{ymd.year() / ymd.month() / 1 + std::chrono::months{1}};
  const int64_t month_end_us =
      std::chrono::duration_cast<std::chrono::microseconds>(next_month.time_since_epoch()).count();
  const double hours_left = static_cast<double>(month_end_us - now) / kHourUs;
  out.set_month_forecast(a.month + a.rate_per_hour * hours_left);
  if (std::optional<std::string> why = Refusal(queue, now)) out.set_out_of_budget(*why);
  return out;
}

}  // namespace tessera
