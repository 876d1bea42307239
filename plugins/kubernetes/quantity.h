// Kubernetes quantities: the strings a node's capacity and a pod's resources are written in
// ("16", "1500m", "64Gi", "128974848", "1e3", "0.5"). A quantity is a decimal number with an
// optional suffix: a decimal SI one (n u m "" k M G T P E), a binary one (Ki Mi Gi Ti Pi Ei), or
// a decimal exponent (e3, E-2), as apimachinery's resource.Quantity reads them.
//
// The backend needs them in the scheduler's units: CPUs in milli-CPUs (rounded up, as
// Quantity.MilliValue does) and memory in MiB (rounded down: a node's allocatable memory is never
// overstated), and whole counts of extended resources such as "nvidia.com/gpu". Going the other
// way, a task's request is written as "<n>m" and "<n>Mi".
//
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::kubernetes {

// The value times 1000, rounded up; nullopt when `quantity` is not a valid quantity or the
// result does not fit in an int64.
std::optional<int64_t> QuantityMilli(std::string_view quantity);

// The value in MiB (2^20 bytes), rounded down; nullopt as for QuantityMilli.
std::optional<int64_t> QuantityMib(std::string_view quantity);

// The value as a whole count (rounded down), for extended resources ("nvidia.com/gpu": "8").
std::optional<int64_t> QuantityCount(std::string_view quantity);

// "1500m", "2Gi"-style strings for requests: milli-CPUs as "<n>m", MiB as "<n>Mi".
std::string MilliQuantity(int64_t milli);
std::string MibQuantity(int64_t mib);

}  // namespace tessera::kubernetes
