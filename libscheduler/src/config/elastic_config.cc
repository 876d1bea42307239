#include "config/elastic_config.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

namespace tessera {
namespace {

Status AtLeast(int64_t value, int64_t min, const std::string& field) {
  if (value >= min) return Status::Ok();
  return InvalidFieldError(field, "must be " + (min == 1 ? std::string("> 0") : ">= 0") + ", got " +
                                      std::to_string(value));
}

// A price or budget: unset is no limit; set, it must be a finite amount >= 0.
Status Amount(bool set, double value, const std::string& field) {
  if (!set || (std::isfinite(value) && value >= 0)) return Status::Ok();
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return InvalidFieldError(field, std::string("must be a finite number >= 0, got ") + text);
}

std::optional<double> Limit(bool set, double value) {
  return set ? std::optional<double>(value) : std::nullopt;
}

}  // namespace

void ApplyElasticConfigDefaults(v1::ElasticConfig* e) {
  const ElasticOptions d;
  if (!e->has_enabled()) e->set_enabled(d.enabled);
  if (!e->has_scale_out_after_s()) e->set_scale_out_after_s(d.scale_out_after.count());
  if (!e->has_scale_in_after_s()) e->set_scale_in_after_s(d.scale_in_after.count());
  if (!e->has_max_nodes()) e->set_max_nodes(d.max_nodes);
  if (!e->has_max_requests_per_minute()) e->set_max_requests_per_minute(d.max_requests_per_minute);
  if (!e->has_group_backoff_s()) e->set_group_backoff_s(d.group_backoff.count());
  if (!e->has_metering_interval_s()) e->set_metering_interval_s(d.metering_interval.count());
}

Status ValidateElasticConfig(const v1::ElasticConfig& e) {
  TESSERA_RETURN_IF_ERROR(AtLeast(e.scale_out_after_s(), 0, "elastic.scale_out_after_s"));
  TESSERA_RETURN_IF_ERROR(AtLeast(e.scale_in_after_s(), 0, "elastic.scale_in_after_s"));
  TESSERA_RETURN_IF_ERROR(AtLeast(e.max_nodes(), 1, "elastic.max_nodes"));
  TESSERA_RETURN_IF_ERROR(
      AtLeast(e.max_requests_per_minute(), 1, "elastic.max_requests_per_minute"));
  TESSERA_RETURN_IF_ERROR(Amount(e.has_max_spot_price_per_hour(), e.max_spot_price_per_hour(),
                                 "elastic.max_spot_price_per_hour"));
  TESSERA_RETURN_IF_ERROR(AtLeast(e.group_backoff_s(), 0, "elastic.group_backoff_s"));
  TESSERA_RETURN_IF_ERROR(AtLeast(e.metering_interval_s(), 1, "elastic.metering_interval_s"));
  TESSERA_RETURN_IF_ERROR(
      Amount(e.has_budget_per_hour(), e.budget_per_hour(), "elastic.budget_per_hour"));
  TESSERA_RETURN_IF_ERROR(
      Amount(e.has_budget_per_day(), e.budget_per_day(), "elastic.budget_per_day"));
  return Amount(e.has_budget_per_month(), e.budget_per_month(), "elastic.budget_per_month");
}

ElasticOptions ElasticOptionsOf(const v1::ElasticConfig& e) {
  ElasticOptions o;
  o.enabled = e.enabled();
  o.scale_out_after = std::chrono::seconds(e.scale_out_after_s());
  o.scale_in_after = std::chrono::seconds(e.scale_in_after_s());
  o.max_nodes = e.max_nodes();
  o.max_requests_per_minute = e.max_requests_per_minute();
  o.max_spot_price_per_hour = Limit(e.has_max_spot_price_per_hour(), e.max_spot_price_per_hour());
  o.group_backoff = std::chrono::seconds(e.group_backoff_s());
  o.metering_interval = std::chrono::seconds(e.metering_interval_s());
  o.budget_per_hour = Limit(e.has_budget_per_hour(), e.budget_per_hour());
  o.budget_per_day = Limit(e.has_budget_per_day(), e.budget_per_day());
  o.budget_per_month = Limit(e.has_budget_per_month(), e.budget_per_month());
  return o;
}

}  // namespace tessera
