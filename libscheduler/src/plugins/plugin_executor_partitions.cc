// PluginExecutor, continued: partition layouts (ABI 1.1 results, or 1.0's MIG layouts) for
// its own GPUs or another backend's, their results, and the MIG launches that wait for them.
#include "plugins/plugin_executor.h"
#include "plugins/plugin_executor_shared.h"

namespace tessera {

using executor_detail::Bytes;
using executor_detail::CallError;
using executor_detail::GpuSubject;
using executor_detail::StringSink;

void PluginExecutor::ApplyMigLayout(const std::string& node, int gpu,
                                    const std::vector<v1::MigInstance>& layout) {
  if (library_->descriptor().tessera_plugin_on_apply_partition_layout != nullptr) {
    // A result will come: launches onto the GPU wait for it (the owner's, when the node is
    // another backend's).
    if (OwnsNode(node)) {
      WaitForPartition(node, gpu);
    } else if (shared_->wiring.on_foreign_partition_started) {
      shared_->wiring.on_foreign_partition_started(node, gpu);
    }
    PostPartitionLayout(node, gpu, layout);
    return;
  }
  v1::MigLayoutRequest request;
  request.set_epoch(shared_->wiring.fencing_epoch);
  request.set_node(node);
  request.set_gpu(gpu);
  for (const v1::MigInstance& m : layout) *request.add_layout() = m;
  PostRequest("on_apply_mig_layout", OperationKind::kPartition, GpuSubject(node, gpu),
              options_.partition_deadline,
              &library_->descriptor().tessera_plugin_on_apply_mig_layout,
              request.SerializeAsString());
}

void PluginExecutor::PostPartitionLayout(const std::string& node, int gpu,
                                         const std::vector<v1::MigInstance>& layout) {
  v1::PartitionLayoutRequest request;
  request.set_node(node);
  request.set_gpu(gpu);
  request.mutable_layout()->set_sharing(v1::GPU_SHARING_MIG);
  for (const v1::MigInstance& m : layout) *request.mutable_layout()->add_mig_instances() = m;
  request.set_epoch(shared_->wiring.fencing_epoch);
  partitions_under_way_.insert({node, gpu});
  if (unhealthy_) {  // no call is made, so no result comes: the launches waiting for one go.
    shared_->Post([shared = shared_, node, gpu, why = unhealthy_reason()] {
      if (shared->partition_call_failed) {
        shared->partition_call_failed(node, gpu, "the plugin is unhealthy: " + why);
      }
    });
    return;
  }
  std::shared_ptr<Shared> shared = shared_;
  const std::string what = "on_apply_partition_layout";
  const std::chrono::milliseconds deadline = DeadlineOf(options_.partition_deadline);
  OperationTracker* operations = shared->wiring.operations.get();
  const uint64_t op = operations->Begin(OperationKind::kPartition, GpuSubject(node, gpu),
                                        shared->wiring.clock->NowUs(), deadline.count() * 1000);
  const bool queued = Queue(
      Lane::kOperations, what,
      [shared, what, op, node, gpu, bytes = request.SerializeAsString()] {
        StringSink out;
        StringSink error;
        const tessera_status code =
            shared->library->descriptor().tessera_plugin_on_apply_partition_layout(
                shared->instance, Bytes(bytes), &out.sink, &error.sink);
        if (code != TESSERA_OK) {
          const std::string why = CallError(shared->library->info(), what, code, error.bytes);
          shared->wiring.operations->End(op, false, why);
          // The launches waiting on the GPU (its owner's, when that is this executor) are lost.
          shared->CallFailed(what, why, [shared, node, gpu, why] {
            if (shared->partition_call_failed) shared->partition_call_failed(node, gpu, why);
          });
          return;
        }
        auto result = std::make_shared<v1::PartitionLayoutResult>();
        if (!result->ParseFromString(out.bytes)) {
          shared->MarkUnhealthy("plugin '" + shared->library->info().name + "': " + what +
                                " wrote bytes that are not a tessera.v1.PartitionLayoutResult");
          return;
        }
        // A layout the plugin could not apply to this GPU fails this operation only.
        shared->wiring.operations->End(op, result->error().empty(), result->error());
        shared->CallSucceeded(what);
        shared->Post([shared, node, gpu, result] {
          if (shared->partition_taken) shared->partition_taken(node, gpu, *result);
        });
      },
      deadline);
  if (!queued) operations->End(op, false, "the plugin is unhealthy; " + what + " was not called");
}

bool PluginExecutor::OwnsNode(const std::string& node) const {
  for (const v1::NodeSpec& n : inventory_) {
    if (n.name() == node) return true;
  }
  return false;
}

void PluginExecutor::TakeOwnPartitionResult(const std::string& node, int gpu,
                                            const v1::PartitionLayoutResult& result) {
  partitions_under_way_.erase({node, gpu});
  if (OwnsNode(node)) {
    TakePartitionResult(node, gpu, result);
  } else if (shared_->wiring.on_foreign_partition_result) {
    shared_->wiring.on_foreign_partition_result(node, gpu, result);
  }
}

namespace {

std::string PartitionFailure(const std::string& node, int gpu, const std::string& why) {
  return "re-partitioning GPU " + std::to_string(gpu) + " of node '" + node + "' failed: " + why;
}

}  // namespace

bool PluginExecutor::HeldForPartition(const LaunchRequest& request) {
  if (waiting_for_partition_.empty() && failed_partitions_.empty()) return false;
  if (!request.partition || request.partition->sharing() != v1::GPU_SHARING_MIG ||
      request.gpus.size() != 1) {
    return false;
  }
  const auto gpu = std::make_pair(request.node, request.gpus[0]);
  auto waiting = waiting_for_partition_.find(gpu);
  if (waiting != waiting_for_partition_.end()) {
    waiting->second.push_back(request);  // it goes out with the result's devices.
    return true;
  }
  // Placed before the engine heard that the layout failed: the instance is not there.
  auto failed = failed_partitions_.find(gpu);
  if (failed == failed_partitions_.end() ||
      devices_.MigDevice(request.node, request.gpus[0], request.partition->mig_profile(),
                         request.partition->mig_start()) != nullptr) {
    return false;
  }
  ExecutorEvents* events = shared_->wiring.events;
  shared_->Post([events, ref = request.ref,
                 why = PartitionFailure(request.node, request.gpus[0], failed->second)] {
    events->OnTaskLost(ref, why);
  });
  return true;
}

void PluginExecutor::PartitionUnderWay(const std::string& node, int gpu) {
  if (OwnsNode(node)) WaitForPartition(node, gpu);
}

void PluginExecutor::PartitionFailed(const std::string& node, int gpu, const std::string& why) {
  // A failed layout whose GPU has what it had when last reported: the engine takes that layout,
  // unmanaged, rather than placing again and again onto instances that were never made.
  v1::PartitionLayoutResult result;
  result.set_error(why);
  for (const v1::NodeSpec& n : inventory_) {
    if (n.name() != node || gpu < 0 || gpu >= n.gpus_size()) continue;
    result.mutable_applied()->set_sharing(n.gpus(gpu).sharing());
    *result.mutable_applied()->mutable_mig_instances() = n.gpus(gpu).mig_instances();
    *result.mutable_instances() = n.gpus(gpu).instances();
  }
  TakePartitionResult(node, gpu, result);
}

void PluginExecutor::WaitForPartition(const std::string& node, int gpu) {
  const auto key = std::make_pair(node, gpu);
  if (waiting_for_partition_.count(key)) return;  // its bound runs already.
  waiting_for_partition_[key];
  const int64_t bound_ms = 2 * DeadlineOf(options_.partition_deadline).count();
  std::weak_ptr<Shared> weak = shared_;
  auto waiting = [this, weak, key] {
    auto s = weak.lock();
    return s && s->partition_call_failed && waiting_for_partition_.count(key) > 0;
  };
  shared_->wiring.timers->Schedule(
      shared_->wiring.clock->NowUs() + bound_ms * 1000,
      [this, waiting, node, gpu, bound_ms] {
        if (!waiting()) return;
        ReleaseWaitingLaunches(node, gpu,
                               "no partition result within " + std::to_string(bound_ms) + " ms");
      },
      waiting);
}

void PluginExecutor::ReleaseWaitingLaunches(const std::string& node, int gpu,
                                            const std::string& failure) {
  auto it = waiting_for_partition_.find({node, gpu});
  if (it == waiting_for_partition_.end()) return;
  const std::vector<LaunchRequest> launches = std::move(it->second);
  waiting_for_partition_.erase(it);
  for (const LaunchRequest& request : launches) {
    if (failure.empty()) {
      Launch(request);
    } else {
      shared_->wiring.events->OnTaskLost(request.ref, PartitionFailure(node, gpu, failure));
    }
  }
}

void PluginExecutor::TakePartitionResult(const std::string& node, int gpu,
                                         const v1::PartitionLayoutResult& result) {
  v1::NodeSpec* spec = nullptr;
  for (v1::NodeSpec& n : inventory_) {
    if (n.name() == node) spec = &n;
  }
  if (spec == nullptr || gpu < 0 || gpu >= spec->gpus_size()) {  // gone meanwhile.
    ReleaseWaitingLaunches(node, gpu, "the node or GPU is gone");
    return;
  }
  v1::GpuDevice* device = spec->mutable_gpus(gpu);
  *device->mutable_mig_instances() = result.applied().mig_instances();
  *device->mutable_instances() = result.instances();
  devices_.TakeGpu(node, gpu, *device);
  if (result.error().empty()) {
    failed_partitions_.erase({node, gpu});
    ReleaseWaitingLaunches(node, gpu, "");
    return;
  }
  failed_partitions_[{node, gpu}] = result.error();
  // The engine learns the layout the GPU has, and stops re-partitioning it (it would only fail
  // again, and in virtual time without end) until the plugin reports its inventory anew.
  device->set_mig_managed(false);
  LogWarning(shared_->wiring.log,
             "plugin '{}': the layout of GPU {} of node '{}' failed: {}; it keeps its {} MIG "
             "instance(s) and is not re-partitioned until the plugin reports it again",
             library_->info().name, gpu, node, result.error(),
             result.applied().mig_instances_size());
  InventoryDiff diff;
  diff.changed.push_back(*spec);
  // The waiting tasks go first, so the engine no longer holds the instances they were placed on
  // when it takes the GPU's real layout.
  ReleaseWaitingLaunches(node, gpu, result.error());
  if (shared_->wiring.on_inventory) shared_->wiring.on_inventory(diff);
}

}  // namespace tessera
