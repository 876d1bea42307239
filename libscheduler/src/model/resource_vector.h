// ResourceVector: an amount of each schedulable resource, in fixed integer units.
//
// Accounting never uses floating point: cpu in milli-cores, memory in MiB, GPU compute in
// milli-GPUs, GPU memory in MiB. Fractions of a GPU (shares, MIG slices) are counted in the same
// units as whole GPUs so that quotas and fairness compare like with like.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>

#include "tessera/v1/queue.pb.h"
#include "tessera/v1/resources.pb.h"

namespace tessera {

enum class Resource : int { kCpu = 0, kMemory = 1, kGpu = 2, kGpuMemory = 3 };
inline constexpr int kNumResources = 4;

// "cpu_milli", "memory_mib", ...: the proto field name, used in messages.
const char* ResourceName(int resource);

class ResourceVector {
 public:
  // Stands for "no limit" in limit vectors.
  static constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

  constexpr ResourceVector() = default;
  constexpr ResourceVector(int64_t cpu_milli, int64_t memory_mib, int64_t gpu_milli,
                           int64_t gpu_memory_mib)
      : amounts_{cpu_milli, memory_mib, gpu_milli, gpu_memory_mib} {}

  static ResourceVector Unlimited() { return {kUnlimited, kUnlimited, kUnlimited, kUnlimited}; }
  static ResourceVector FromProto(const v1::Resources& r);
  // Unset fields become kUnlimited.
  static ResourceVector FromLimits(const v1::ResourceLimits& limits);

  v1::Resources ToProto() const;

  int64_t operator[](int r) const { return amounts_[r]; }
  int64_t& operator[](int r) { return amounts_[r]; }
  int64_t cpu_milli() const { return amounts_[0]; }
  int64_t memory_mib() const { return amounts_[1]; }
  int64_t gpu_milli() const { return amounts_[2]; }
  int64_t gpu_memory_mib() const { return amounts_[3]; }

  ResourceVector& operator+=(const ResourceVector& o);
  ResourceVector& operator-=(const ResourceVector& o);
  friend ResourceVector operator+(ResourceVector a, const ResourceVector& b) { return a += b; }
  friend ResourceVector operator-(ResourceVector a, const ResourceVector& b) { return a -= b; }
  ResourceVector operator*(int64_t k) const;
  friend bool operator==(const ResourceVector& a, const ResourceVector& b) {
    return a.amounts_ == b.amounts_;
  }

  // True when every component is <= the same component of `limit` (kUnlimited always holds).
  bool FitsWithin(const ResourceVector& limit) const;
  // First resource where this exceeds `limit`, or -1.
  int FirstExceeding(const ResourceVector& limit) const;
  bool IsZero() const;
  bool AnyNegative() const;

  std::string ToString() const;

 private:
  std::array<int64_t, kNumResources> amounts_{};
};

}  // namespace tessera
