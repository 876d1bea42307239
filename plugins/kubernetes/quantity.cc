#include "quantity.h"

#include <cctype>
#include <cmath>

namespace tessera::kubernetes {
namespace {

// The quantity as a long double number of base units (bytes, CPUs, items). Long double holds
// every int64 exactly, and node sizes are far below where its rounding would matter.
std::optional<long double> Parse(std::string_view text) {
  if (text.empty()) return std::nullopt;
  size_t i = 0;
  bool negative = false;
  if (text[i] == '+' || text[i] == '-') {
    negative = text[i] == '-';
    ++i;
  }
  long double value = 0;
  bool digits = false;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    value = value * 10 + (text[i] - '0');
    digits = true;
    ++i;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    long double scale = 0.1L;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      value += (text[i] - '0') * scale;
      scale /= 10;
      digits = true;
      ++i;
    }
  }
  if (!digits) return std::nullopt;
  const std::string_view suffix = text.substr(i);
  long double factor = 1;
  if (suffix.empty()) {
  } else if (suffix == "n") {
    factor = 1e-9L;
  } else if (suffix == "u") {
    factor = 1e-6L;
  } else if (suffix == "m") {
    factor = 1e-3L;
  } else if (suffix == "k") {
    factor = 1e3L;
  } else if (suffix == "M") {
    factor = 1e6L;
  } else if (suffix == "G") {
    factor = 1e9L;
  } else if (suffix == "T") {
    factor = 1e12L;
  } else if (suffix == "P") {
    factor = 1e15L;
  } else if (suffix == "E") {
    factor = 1e18L;
  } else if (suffix == "Ki") {
    factor = 1024.0L;
  } else if (suffix == "Mi") {
    factor = 1024.0L * 1024;
  } else if (suffix == "Gi") {
    factor = 1024.0L * 1024 * 1024;
  } else if (suffix == "Ti") {
    factor = 1024.0L * 1024 * 1024 * 1024;
  } else if (suffix == "Pi") {
    factor = 1024.0L * 1024 * 1024 * 1024 * 1024;
  } else if (suffix == "Ei") {
    factor = 1024.0L * 1024 * 1024 * 1024 * 1024 * 1024;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    // A decimal exponent: "1e3", "5E-2".
    size_t j = 1;
    bool negative_exponent = false;
    if (j < suffix.size() && (suffix[j] == '+' || suffix[j] == '-')) {
      negative_exponent = suffix[j] == '-';
      ++j;
    }
    if (j == suffix.size() || suffix.size() - j > 3) return std::nullopt;
    int exponent = 0;
    for (; j < suffix.size(); ++j) {
      if (!std::isdigit(static_cast<unsigned char>(suffix[j]))) return std::nullopt;
      exponent = exponent * 10 + (suffix[j] - '0');
    }
    factor = std::pow(10.0L, negative_exponent ? -exponent : exponent);
  } else {
    return std::nullopt;
  }
  const long double result = value * factor;
  return negative ? -result : result;
}

constexpr long double kInt64Max = 9.2e18L;  // just under 2^63, as a bound on results.

std::optional<int64_t> Bounded(long double v) {
  if (!(v > -kInt64Max && v < kInt64Max)) return std::nullopt;
  return static_cast<int64_t>(v);
}

}  // namespace

std::optional<int64_t> QuantityMilli(std::string_view quantity) {
  const std::optional<long double> v = Parse(quantity);
  if (!v) return std::nullopt;
  // Round up, but not past an exact value that long double's arithmetic left a hair above it.
  const long double milli = *v * 1000;
  const long double nearest = std::round(milli);
  return Bounded(std::fabs(milli - nearest) < 1e-6L ? nearest : std::ceil(milli));
}

std::optional<int64_t> QuantityMib(std::string_view quantity) {
  const std::optional<long double> v = Parse(quantity);
  if (!v) return std::nullopt;
  return Bounded(std::floor(*v / (1024.0L * 1024)));
}

std::optional<int64_t> QuantityCount(std::string_view quantity) {
  const std::optional<long double> v = Parse(quantity);
  if (!v) return std::nullopt;
  const long double nearest = std::round(*v);
  return Bounded(std::fabs(*v - nearest) < 1e-9L ? nearest : std::floor(*v));
}

std::string MilliQuantity(int64_t milli) { return std::to_string(milli) + "m"; }

std::string MibQuantity(int64_t mib) { return std::to_string(mib) + "Mi"; }

}  // namespace tessera::kubernetes
