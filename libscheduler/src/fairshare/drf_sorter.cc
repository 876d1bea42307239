#include "fairshare/drf_sorter.h"

#include "common/check.h"

#include "fairshare/drf.h"

namespace tessera {

DrfSorter::Key DrfSorter::ComputeKey(ClientId id, const Client& c) const {
  double guarantee_share =
      GuaranteeShare(c.allocated, c.guarantee, c.allocated_by_model, c.guarantee_by_model);
  if (guarantee_share < 1.0) return {0, guarantee_share, id};
  return {1, DominantShare(c.usage, capacity_, c.weight), id};
}

void DrfSorter::Rekey(ClientId id, Client& c) {
  Key key = ComputeKey(id, c);
  if (c.active) {
    order_.erase(c.key);
    order_.insert(key);
  }
  c.key = key;
}

void DrfSorter::SetCapacity(const ResourceVector& capacity) {
  capacity_ = capacity;
  for (auto& [id, c] : clients_) Rekey(id, c);
}

void DrfSorter::Add(ClientId id, double weight) {
  TESSERA_DCHECK(weight > 0);
  Client& c = clients_[id];
  c.weight = weight;
  c.key = ComputeKey(id, c);
}

void DrfSorter::Remove(ClientId id) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return;
  if (it->second.active) order_.erase(it->second.key);
  clients_.erase(it);
}

void DrfSorter::UpdateWeight(ClientId id, double weight) {
  TESSERA_DCHECK(weight > 0);
  Client& c = clients_.at(id);
  c.weight = weight;
  Rekey(id, c);
}

void DrfSorter::UpdateGuarantee(ClientId id, const ResourceVector& guarantee,
                                const GpuModelAmounts& by_model) {
  Client& c = clients_.at(id);
  c.guarantee = guarantee;
  c.guarantee_by_model = by_model;
  Rekey(id, c);
}

void DrfSorter::UpdateAllocation(ClientId id, const ResourceVector& allocated,
                                 const ResourceVector& usage,
                                 const GpuModelAmounts& allocated_by_model) {
  Client& c = clients_.at(id);
  c.allocated = allocated;
  if (!c.guarantee_by_model.empty()) c.allocated_by_model = allocated_by_model;
  c.usage = usage;
  Rekey(id, c);
}

void DrfSorter::Activate(ClientId id) {
  Client& c = clients_.at(id);
  if (c.active) return;
  c.active = true;
  order_.insert(c.key);
}

void DrfSorter::Deactivate(ClientId id) {
  Client& c = clients_.at(id);
  if (!c.active) return;
  c.active = false;
  order_.erase(c.key);
}

bool DrfSorter::IsActive(ClientId id) const {
  auto it = clients_.find(id);
  return it != clients_.end() && it->second.active;
}

std::optional<DrfSorter::ClientId> DrfSorter::First() const {
  if (order_.empty()) return std::nullopt;
  return order_.begin()->id;
}

std::vector<DrfSorter::ClientId> DrfSorter::Order() const {
  std::vector<ClientId> out;
  out.reserve(order_.size());
  for (const Key& k : order_) out.push_back(k.id);
  return out;
}

bool DrfSorter::Before(ClientId a, ClientId b, bool strictly) const {
  const Key& ka = clients_.at(a).key;
  const Key& kb = clients_.at(b).key;
  if (!strictly) return ka < kb;
  if (ka.tier != kb.tier) return ka.tier < kb.tier;
  return ka.value < kb.value;
}

double DrfSorter::Share(ClientId id) const {
  const Client& c = clients_.at(id);
  return DominantShare(c.usage, capacity_, c.weight);
}

bool DrfSorter::BelowGuarantee(ClientId id) const { return clients_.at(id).key.tier == 0; }

}  // namespace tessera
