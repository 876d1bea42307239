// Helpers for integration tests: a scheduler on a small simulated cluster in virtual time,
// driven only through the public API.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "tessera/job.h"
#include "tessera/scheduler.h"

namespace tessera::testing {

// A temporary directory removed at the end of the scope.
class ScratchDir {
 public:
  ScratchDir() {
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() /
            ("tessera-it-" + std::to_string(random()) + std::to_string(random()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline v1::SimulatedNodeGroup* AddGroup(v1::SimulatedCluster& cluster, const std::string& prefix,
                                        int count, int gpus, const std::string& model = "A100",
                                        int64_t cpu_milli = 64000, int64_t memory_mib = 262144) {
  v1::SimulatedNodeGroup* g = cluster.add_groups();
  g->set_name_prefix(prefix);
  g->set_count(count);
  g->set_cpu_milli(cpu_milli);
  g->set_memory_mib(memory_mib);
  g->set_gpus(gpus);
  if (gpus > 0) {
    g->set_gpu_model(model);
    g->set_gpu_memory_mib(81920);
  }
  return g;
}

// One node with `gpus` A100s.
inline v1::SimulatedCluster OneNode(int gpus) {
  v1::SimulatedCluster cluster;
  AddGroup(cluster, "node", 1, gpus);
  return cluster;
}

struct TestScheduler {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  std::unique_ptr<Scheduler> scheduler;

  Scheduler* operator->() { return scheduler.get(); }
};

inline TestScheduler Open(Options options) {
  TestScheduler t;
  if (!options.clock) {
    options.clock = t.clock;
  } else {
    t.clock = std::dynamic_pointer_cast<ManualClock>(options.clock);
  }
  auto opened = Scheduler::Open(options);
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  t.scheduler = std::move(*opened);
  return t;
}

inline TestScheduler OpenCluster(const v1::SimulatedCluster& cluster, Options options = {}) {
  options.simulated_cluster = cluster;
  return Open(options);
}

inline v1::QueueSpec QueueSpec(const std::string& name, double weight = 1.0) {
  v1::QueueSpec spec;
  spec.set_name(name);
  spec.set_weight(weight);
  return spec;
}

inline void CreateQueue(Scheduler* s, const v1::QueueSpec& spec) {
  Status status = s->CreateQueue(spec);
  REQUIRE_MESSAGE(status.ok(), status.ToString());
}

inline v1::Job MustSubmit(Scheduler* s, const v1::JobSpec& spec) {
  auto job = s->Submit(spec);
  REQUIRE_MESSAGE(job.ok(), job.status().ToString());
  return *job;
}

inline v1::Job MustGet(Scheduler* s, uint64_t id) {
  auto job = s->GetJob(id);
  REQUIRE_MESSAGE(job.ok(), job.status().ToString());
  return *job;
}

// Jobs per state, over every job of the store.
inline std::map<v1::JobState, int> CountStates(Scheduler* s, const std::string& queue = "") {
  std::map<v1::JobState, int> counts;
  v1::ListJobsRequest request;
  request.set_queue(queue);
  request.set_page_size(1000);
  while (true) {
    auto page = s->ListJobs(request);
    REQUIRE_MESSAGE(page.ok(), page.status().ToString());
    for (const v1::Job& j : page->jobs()) ++counts[j.status().state()];
    if (page->next_page_token().empty()) return counts;
    request.set_page_token(page->next_page_token());
  }
}

}  // namespace tessera::testing
