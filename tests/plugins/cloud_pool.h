// A cloud whose machines join the scheduler through another backend, as EC2 instances join as
// Kubernetes nodes (plugins/aws-ec2): two test plugins that share a pool file.
//
//   cloud_provider (capacity provider): offers one node group; on_provision adds machines to the
//     pool file, each joining join_delay_ms later, and ends the request with PROVISION_COMPLETED
//     naming them complete_after_ms after they joined (so the nodes are in the scheduler before
//     the request ends, as with EC2, whose request ends once the Node is Ready).
//     on_deprovision marks them gone. A spot group sends SPOT_INTERRUPTION for each machine
//     notice_after_ms after it joined, and takes the machine back two minutes later.
//   cloud_nodes (executor): lists the pool's machines that have joined and are not gone, under
//     names of the cloud's own ("ip-10-0-0-<n>.ec2.internal", not the group's prefix), and runs
//     tasks on them as the test backend does (they end after simulation.duration_ms).
//
// The two are separate shared objects (each has its own copy of any global), so they meet in a
// file, written whole and renamed into place. Both read the host's clock: tests run them in
// virtual time, in one process. Where this differs from aws-ec2: cloud_provider declares itself
// an executor too, with no nodes, because on a virtual clock the host wakes a plugin only
// through on_poll_events, an executor's call; aws-ec2 is a capacity provider only and emits its
// events from its own thread on the real clock (tests/aws/ec2_burst_test.cc runs that path).
//
// Config, "key=value" lines:
//   pool=PATH              the pool file (both; required)
//   market=spot            the group is spot (provider; default on-demand)
//   price=P                per node-hour (provider; default 2.0)
//   join_delay_ms=MS       (provider; default 30000)
//   complete_after_ms=MS   (provider; default 5000)
//   notice_after_ms=MS     spot notices (provider; default 0: none)
//   also_name=NODE         every PROVISION_COMPLETED also names NODE (provider), as a buggy or
//                          hostile provider would name a node it never made
//   group_label=1          each node carries tessera.io/node-group=<group> (executor), as a boot
//                          script sets it with kubelet's --node-labels
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::testing::cloud_pool {

inline constexpr const char* kGroup = "cloud-l4";

// One machine of the pool.
struct Machine {
  std::string name;
  int64_t join_at_us = 0;
  int64_t gone_at_us = 0;  // 0: not gone.
};

inline std::vector<Machine> Read(const std::string& path) {
  std::vector<Machine> machines;
  std::ifstream in(path);
  Machine m;
  while (in >> m.name >> m.join_at_us >> m.gone_at_us) machines.push_back(m);
  return machines;
}

inline void Write(const std::string& path, const std::vector<Machine>& machines) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    for (const Machine& m : machines) {
      out << m.name << ' ' << m.join_at_us << ' ' << m.gone_at_us << '\n';
    }
  }
  std::rename(temp.c_str(), path.c_str());
}

inline std::string MachineName(size_t n) {
  return "ip-10-0-0-" + std::to_string(n + 1) + ".ec2.internal";
}

// The value of `key` in "key=value" lines, or `fallback`.
inline std::string ConfigValue(const std::string& config, const std::string& key,
                               const std::string& fallback = "") {
  std::istringstream lines(config);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  }
  return fallback;
}

}  // namespace tessera::testing::cloud_pool
