#include "model/resource_vector.h"

#include <sstream>

namespace tessera {

const char* ResourceName(int resource) {
  static constexpr const char* kNames[kNumResources] = {"cpu_milli", "memory_mib", "gpu_milli",
                                                        "gpu_memory_mib"};
  return (resource >= 0 && resource < kNumResources) ? kNames[resource] : "unknown";
}

ResourceVector ResourceVector::FromProto(const v1::Resources& r) {
  return {r.cpu_milli(), r.memory_mib(), r.gpu_milli(), r.gpu_memory_mib()};
}

ResourceVector ResourceVector::FromLimits(const v1::ResourceLimits& l) {
  return {l.has_cpu_milli() ? l.cpu_milli() : kUnlimited,
          l.has_memory_mib() ? l.memory_mib() : kUnlimited,
          l.has_gpu_milli() ? l.gpu_milli() : kUnlimited,
          l.has_gpu_memory_mib() ? l.gpu_memory_mib() : kUnlimited};
}

v1::Resources ResourceVector::ToProto() const {
  v1::Resources r;
  r.set_cpu_milli(amounts_[0]);
  r.set_memory_mib(amounts_[1]);
  r.set_gpu_milli(amounts_[2]);
  r.set_gpu_memory_mib(amounts_[3]);
  return r;
}

ResourceVector& ResourceVector::operator+=(const ResourceVector& o) {
  for (int r = 0; r < kNumResources; ++r) amounts_[r] += o.amounts_[r];
  return *this;
}

ResourceVector& ResourceVector::operator-=(const ResourceVector& o) {
  for (int r = 0; r < kNumResources; ++r) amounts_[r] -= o.amounts_[r];
  return *this;
}

ResourceVector ResourceVector::operator*(int64_t k) const {
  ResourceVector out;
  for (int r = 0; r < kNumResources; ++r) out.amounts_[r] = amounts_[r] * k;
  return out;
}

bool ResourceVector::FitsWithin(const ResourceVector& limit) const {
  return FirstExceeding(limit) < 0;
}

int ResourceVector::FirstExceeding(const ResourceVector& limit) const {
  for (int r = 0; r < kNumResources; ++r) {
    if (limit.amounts_[r] != kUnlimited && amounts_[r] > limit.amounts_[r]) return r;
  }
  return -1;
}

bool ResourceVector::IsZero() const {
  for (int64_t a : amounts_) {
    if (a != 0) return false;
  }
  return true;
}

bool ResourceVector::AnyNegative() const {
  for (int64_t a : amounts_) {
    if (a < 0) return true;
  }
  return false;
}

std::string ResourceVector::ToString() const {
  std::ostringstream os;
  os << "{";
  for (int r = 0; r < kNumResources; ++r) {
    if (r) os << ", ";
    os << ResourceName(r) << ": ";
    if (amounts_[r] == kUnlimited) {
      os << "unlimited";
    } else {
      os << amounts_[r];
    }
  }
  os << "}";
  return os.str();
}

}  // namespace tessera
