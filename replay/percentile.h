// Percentile by nearest rank: the value below which a share `quantile` (0..1) of `values` fall,
// the smallest value v with at least ceil(quantile x n) values <= v. Nearest rank always returns
// one of the values (no interpolation), so p99 of a 3-value list is its largest value. 0 when
// `values` is empty.
//
// Thread safety: a pure function.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace tessera::replay {

inline double Percentile(std::vector<double> values, double quantile) {
  if (values.empty()) return 0;
  const size_t rank = static_cast<size_t>(
      std::max<double>(1, std::ceil(quantile * static_cast<double>(values.size()))));
  const size_t index = std::min(rank, values.size()) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(index),
                   values.end());
  return values[index];
}

}  // namespace tessera::replay
