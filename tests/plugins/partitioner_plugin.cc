// A partitioner and nothing else (kinds: TESSERA_PLUGIN_KIND_PARTITIONER), for the plugin host's
// tests of a backend that shapes another backend's GPUs (BackendOptions::partitions), as a MIG
// manager beside an executor that only runs processes would. Built with the SDK like any plugin.
//
// on_apply_partition_layout applies every MIG layout it is asked for and names each instance's
// device "MIG-part-<node>-<gpu>-<profile>-<start>", with GPU instance ids counting from 1 and
// compute instance 0. Config ("key=value" lines):
//   fail_node=NAME   layouts for GPUs of node NAME fail for the GPU (the result's error), the
//                    GPU keeping the layout it had, as after an NVML error
//   call_error_node=NAME  the call itself fails (UNAVAILABLE) for GPUs of node NAME: no result
// The layouts it applied are remembered per GPU, so a failing GPU reports what it has: the last
// layout applied, or, before any, the whole GPU as one instance (7g.80gb at 0, as an H100 has
// when MIG is first enabled and the operator made one instance).
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

#include "tessera/plugin/plugin.h"

namespace {

using tessera::plugin::PluginStatus;
namespace v1 = tessera::v1;

class Partitioner : public tessera::plugin::Plugin {
 public:
  explicit Partitioner(tessera::plugin::Host host) : Plugin(host) {}

  PluginStatus Init(const std::string& config) override {
    std::istringstream lines(config);
    std::string line;
    while (std::getline(lines, line)) {
      const size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = line.substr(0, eq);
      if (key == "fail_node") {
        fail_node_ = line.substr(eq + 1);
      } else if (key == "call_error_node") {
        call_error_node_ = line.substr(eq + 1);
      } else {
        return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, key + ": unknown key");
      }
    }
    return PluginStatus::Ok();
  }

  PluginStatus ApplyPartitionLayout(const v1::PartitionLayoutRequest& request,
                                    v1::PartitionLayoutResult* result) override {
    std::lock_guard<std::mutex> lock(mu_);
    const auto gpu = std::make_pair(request.node(), request.gpu());
    if (request.node() == call_error_node_) {
      return PluginStatus::Error(TESSERA_UNAVAILABLE, "call_error_node: the device is busy");
    }
    if (request.node() == fail_node_) {
      result->set_error("fail_node: partitioning fails on node '" + fail_node_ + "'");
      auto known = applied_.find(gpu);
      if (known != applied_.end()) {
        *result->mutable_applied() = known->second;
      } else {
        result->mutable_applied()->set_sharing(v1::GPU_SHARING_MIG);
        v1::MigInstance* whole = result->mutable_applied()->add_mig_instances();
        whole->set_profile("7g.80gb");
        whole->set_start(0);
      }
      return PluginStatus::Ok();
    }
    applied_[gpu] = request.layout();
    *result->mutable_applied() = request.layout();
    int gpu_instance = 1;
    for (const v1::MigInstance& mig : request.layout().mig_instances()) {
      v1::PartitionInstance* instance = result->add_instances();
      *instance->mutable_mig() = mig;
      instance->set_uuid("MIG-part-" + request.node() + "-" + std::to_string(request.gpu()) + "-" +
                         mig.profile() + "-" + std::to_string(mig.start()));
      instance->set_gpu_instance_id(gpu_instance++);
      instance->set_compute_instance_id(0);
    }
    return PluginStatus::Ok();
  }

 private:
  std::mutex mu_;
  std::string fail_node_;
  std::string call_error_node_;
  std::map<std::pair<std::string, int>, v1::PartitionLayout> applied_;
};

}  // namespace

TESSERA_PLUGIN(Partitioner, "partitioner", "0.1.0", TESSERA_PLUGIN_KIND_PARTITIONER)
