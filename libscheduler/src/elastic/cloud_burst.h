// CloudBurst: burst capacity for one scheduler, from its capacity providers, within budgets.
//
// It joins the parts: the Autoscaler (which groups to ask, which nodes to give back), the
// SpendLedger (what each queue spent against its budget), and the engine, into which it puts
//   - a make-room step, "burst" (asked for a queue's head that does not fit, after preemption
//     and MIG drains, before "reserve"): once the head has waited ElasticOptions::
//     scale_out_after since it was submitted, and its queue is within its budgets, it asks the
//     autoscaler for nodes. The job stays in line; the nodes joining free capacity, which places
//     it. Its waiting reason says what was asked, or why nothing was (a spent budget);
//   - which queues may not use burst nodes (Engine::SetBurstRefusal: their jobs are not placed
//     there, and do not trigger), refreshed at every metering tick and charge.
// Every metering_interval it charges the burst nodes' time by use (spend_ledger.h), gives back
// nodes idle past scale_in_after (cordoned and drained first, then deprovisioned) and saves the
// accounts (`save`, the store), so a restart keeps what was spent. Burst nodes may join
// through any backend (Autoscaler says which nodes are burst nodes: named by a completed
// request, labelled with their group, or named after it by their provider) and are labelled as
// they are taken (kBurstMarketLabel, kNodeGroupLabel), at open too: nodes a provider still has
// after a restart are burst nodes again when they carry the group label or their provider's
// names. A spot notice is taken from a node's owner or from the provider of its group.
//
// Deterministic: everything runs on the decision strand, at the engine's clock's time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "elastic/autoscaler.h"
#include "elastic/capacity_providers.h"
#include "elastic/spend_ledger.h"
#include "engine/engine.h"
#include "tessera/clock.h"
#include "tessera/logging.h"
#include "tessera/options.h"

namespace tessera {

class CloudBurst {
 public:
  // Writes the accounts (all of them) durably; may run the write later.
  using SaveAccounts = std::function<void(const std::map<std::string, SpendLedger::Account>&)>;

  // Adds the "burst" step to `engine` (before its first decision). `request_prefix` starts the
  // request ids (unique per open).
  CloudBurst(const ElasticOptions& options, Engine& engine, const Clock& clock,
             CapacityProviders& providers, std::string request_prefix, SaveAccounts save,
             LogOptions log);
  ~CloudBurst();

  // --- Accounts and budgets.
  void Restore(const std::map<std::string, SpendLedger::Account>& accounts);
  void SetQueueBudget(const std::string& queue, const v1::BurstBudget& budget);
  void ForgetQueue(const std::string& queue);
  // Refreshes which queues may use burst capacity (after budgets changed).
  void RefreshRefusals();
  v1::BurstSpend Spend(const std::string& queue) const;
  const SpendLedger& ledger() const { return ledger_; }
  const Autoscaler& autoscaler() const { return autoscaler_; }

  // --- Nodes and requests.
  // Labels the nodes of `backend` (joining: `added`; else reported again) that are burst nodes
  // (and takes them as such); the others are left as they are.
  void TakeJoining(const std::string& backend, std::vector<v1::NodeSpec>& nodes, bool added);
  void TakeLeft(const std::vector<std::string>& nodes);
  // A request ended; `nodes`, those its provider says joined. Those in the cluster already are
  // labelled now (an inventory change from the provider's backend).
  void ProvisionEnded(const std::string& request_id, bool succeeded, const std::string& why,
                      const std::vector<std::string>& nodes);
  // The capacity provider (backend name) whose group `node` is a burst node of; nullptr if none.
  const std::string* ProviderOf(const std::string& node) const {
    return autoscaler_.ProviderOf(node);
  }
  // A spot notice for `node`: its group backs off (the engine gives the node's jobs notice).
  void Interrupted(const std::string& node);

  // One metering tick now (the timer runs it every metering_interval while there are burst
  // nodes).
  void Meter();

 private:
  class BurstStep;

  void ArmMetering();
  // Sets the burst labels of a node of `group` on `spec`.
  static void Label(const BurstGroup& group, v1::NodeSpec& spec);
  // `amount` of the node's price (for `hours`) by the tasks on it; adds each account's rate.
  void ChargeNode(const std::string& node, double price, double hours,
                  std::map<std::string, double>& rates);

  const ElasticOptions options_;
  Engine& engine_;
  const Clock& clock_;
  CapacityProviders& providers_;
  SaveAccounts save_;
  const LogOptions log_;
  Autoscaler autoscaler_;
  SpendLedger ledger_;
  std::vector<std::string> queues_with_budget_;  // known to the ledger (their refusals change).
  std::map<std::string, std::string> refused_;   // queue -> why, as the engine was told.
  TimestampUs last_meter_us_ = 0;
  bool metering_armed_ = false;
};

}  // namespace tessera
