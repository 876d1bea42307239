// DrfSorter: orders the clients of one level (the children of one queue) for weighted DRF.
//
// Clients holding less than their guarantee come first, the furthest below it first. The rest
// follow by weighted dominant share of their usage (current allocation, or a decayed
// equivalent), smallest first; ties go to the lower id so the order is deterministic. Only
// active clients (those with work that could be served) take part in the order.
//
// The sorter never looks at cluster state: the caller reports allocations and capacity.
// Each update costs O(log clients).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "model/gpu_model_amounts.h"
#include "model/resource_vector.h"

namespace tessera {

class DrfSorter {
 public:
  using ClientId = uint32_t;

  // The total every share is divided by; re-keys every client (O(n log n)).
  void SetCapacity(const ResourceVector& capacity);

  void Add(ClientId id, double weight);
  void Remove(ClientId id);
  void UpdateWeight(ClientId id, double weight);
  // `by_model`: guarantees per GPU model beside those in `guarantee` (which count any model).
  void UpdateGuarantee(ClientId id, const ResourceVector& guarantee,
                       const GpuModelAmounts& by_model = {});
  // `allocated` is what the client holds now (`allocated_by_model` its GPUs by model, read only
  // for a client with guarantees per model); `usage` is what orders it among clients above
  // their guarantee (the same vector, or a decayed equivalent, its GPUs possibly priced).
  void UpdateAllocation(ClientId id, const ResourceVector& allocated, const ResourceVector& usage,
                        const GpuModelAmounts& allocated_by_model = {});

  void Activate(ClientId id);
  void Deactivate(ClientId id);
  bool IsActive(ClientId id) const;
  int active_count() const { return static_cast<int>(order_.size()); }

  // The active client to serve next.
  std::optional<ClientId> First() const;
  // All active clients, best first.
  std::vector<ClientId> Order() const;

  // True when client `a` comes before client `b` in the order (whether or not they are active).
  // With `strictly`, a tie in share (broken by id in the order) does not count as before.
  bool Before(ClientId a, ClientId b, bool strictly = false) const;

  // Weighted dominant share of the client's usage.
  double Share(ClientId id) const;
  bool BelowGuarantee(ClientId id) const;
  bool Contains(ClientId id) const { return clients_.count(id) != 0; }

 private:
  struct Key {
    int tier;      // 0: below guarantee; 1: at or above it.
    double value;  // guarantee share in tier 0, weighted dominant share in tier 1.
    ClientId id;
    friend bool operator<(const Key& a, const Key& b) {
      if (a.tier != b.tier) return a.tier < b.tier;
      if (a.value != b.value) return a.value < b.value;
      return a.id < b.id;
    }
  };
  struct Client {
    double weight = 1.0;
    ResourceVector guarantee;
    GpuModelAmounts guarantee_by_model;
    ResourceVector allocated;
    GpuModelAmounts allocated_by_model;  // kept only while guarantee_by_model is not empty.
    ResourceVector usage;
    bool active = false;
    Key key{};
  };

  Key ComputeKey(ClientId id, const Client& c) const;
  // Recomputes the key of `c`, moving it in the order if active.
  void Rekey(ClientId id, Client& c);

  ResourceVector capacity_;
  std::unordered_map<ClientId, Client> clients_;
  std::set<Key> order_;
};

}  // namespace tessera
