#include "model/gpu_model_amounts.h"

#include <algorithm>

namespace tessera {

int64_t GpuModelAmounts::Get(int model) const {
  for (const Entry& e : entries_) {
    if (e.first == model) return e.second;
    if (e.first > model) break;
  }
  return 0;
}

void GpuModelAmounts::Add(int model, int64_t milli) {
  if (model < 0 || milli == 0) return;
  auto it = std::lower_bound(entries_.begin(), entries_.end(), model,
                             [](const Entry& e, int m) { return e.first < m; });
  if (it == entries_.end() || it->first != model) {
    entries_.insert(it, {model, milli});
    return;
  }
  it->second += milli;
  if (it->second == 0) entries_.erase(it);
}

GpuModelAmounts& GpuModelAmounts::operator+=(const GpuModelAmounts& other) {
  for (const Entry& e : other.entries_) Add(e.first, e.second);
  return *this;
}

GpuModelAmounts& GpuModelAmounts::operator-=(const GpuModelAmounts& other) {
  for (const Entry& e : other.entries_) Add(e.first, -e.second);
  return *this;
}

bool GpuModelAmounts::AnyNegative() const {
  for (const Entry& e : entries_) {
    if (e.second < 0) return true;
  }
  return false;
}

}  // namespace tessera
