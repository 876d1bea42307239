#include "placement/node_filter.h"

namespace tessera {

std::vector<std::unique_ptr<NodeFilter>> DefaultFilters() {
  std::vector<std::unique_ptr<NodeFilter>> filters;
  filters.push_back(std::make_unique<SchedulableFilter>());
  filters.push_back(std::make_unique<GpuModelFilter>());
  filters.push_back(std::make_unique<HostCapacityFilter>());
  return filters;
}

}  // namespace tessera
