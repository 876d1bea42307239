#include "burst_table.h"

#include <cstdio>
#include <string>

#include "table.h"

namespace tessera::cli {
namespace {

// Money with two decimals, in the currency of the node groups' prices.
std::string Amount(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

// "2.00/h, 40.00/d": the limits the queue itself sets; "-" for none.
std::string Budget(const v1::BurstBudget& budget) {
  std::string text;
  const auto add = [&text](bool set, double limit, const char* per) {
    if (!set) return;
    text += (text.empty() ? "" : ", ") + Amount(limit) + per;
  };
  add(budget.has_per_hour(), budget.per_hour(), "/h");
  add(budget.has_per_day(), budget.per_day(), "/d");
  add(budget.has_per_month(), budget.per_month(), "/mo");
  return text.empty() ? "-" : text;
}

bool HasBudget(const v1::BurstBudget& b) {
  return b.has_per_hour() || b.has_per_day() || b.has_per_month();
}

// This month's spend holds today's and this hour's; a rate without spend yet is a queue whose
// tasks have just started on burst nodes.
bool HasSpent(const v1::BurstSpend& s) {
  return s.this_month() > 0 || s.rate_per_hour() > 0 || !s.out_of_budget().empty();
}

}  // namespace

void PrintBurstSpend(const std::vector<v1::Queue>& queues, std::ostream& out) {
  Table table({"QUEUE", "BURST THIS HOUR", "TODAY", "THIS MONTH", "RATE/H", "MONTH FORECAST",
               "BUDGET", "OUT OF BUDGET"});
  bool any = false;
  for (const v1::Queue& queue : queues) {
    const v1::BurstSpend& spend = queue.status().burst();
    if (!HasBudget(queue.spec().burst_budget()) && !HasSpent(spend)) continue;
    table.AddRow({queue.spec().name(), Amount(spend.this_hour()), Amount(spend.today()),
                  Amount(spend.this_month()), Amount(spend.rate_per_hour()),
                  Amount(spend.month_forecast()), Budget(queue.spec().burst_budget()),
                  spend.out_of_budget().empty() ? "-" : spend.out_of_budget()});
    any = true;
  }
  if (!any) return;
  out << '\n';
  table.Print(out);
}

}  // namespace tessera::cli
