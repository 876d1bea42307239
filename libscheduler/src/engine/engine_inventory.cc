// The inventory: nodes added at start and whenever a backend reports one; nodes that change
// (labels at once; a new shape once the node is idle); nodes that leave, whose tasks are
// requeued as lost without counting against the job's attempts, since the job did nothing wrong.
#include <algorithm>

#include <google/protobuf/util/message_differencer.h>

#include "common/log.h"
#include "engine/engine.h"

namespace tessera {

namespace {

// A spec as the scheduler would report the node: the fields it uses, in the form it keeps
// them (a GPU's `healthy` and `uuid` are not read from specs; health comes from telemetry).
v1::NodeSpec Canonical(const v1::NodeSpec& spec) {
  v1::NodeSpec out;
  out.set_name(spec.name());
  out.set_cpu_milli(spec.cpu_milli());
  out.set_memory_mib(spec.memory_mib());
  out.mutable_labels()->insert(spec.labels().begin(), spec.labels().end());
  *out.mutable_taints() = spec.taints();
  out.set_zone(spec.zone());
  for (int i = 0; i < spec.gpus_size(); ++i) {
    v1::GpuDevice* gpu = out.add_gpus();
    gpu->set_index(i);
    gpu->set_model(spec.gpus(i).model());
    DescribeGpu(MakeGpuSlot(spec.gpus(i)), *gpu);
    gpu->clear_healthy();
  }
  return out;
}

// Labels, taints and zone change in place, whatever runs on the node.
bool SameExceptLabelsAndTaints(v1::NodeSpec a, v1::NodeSpec b) {
  for (v1::NodeSpec* spec : {&a, &b}) {
    spec->clear_labels();
    spec->clear_taints();
    spec->clear_zone();
  }
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

}  // namespace

Status Engine::AddNode(const v1::NodeSpec& spec) { return AddNodes({spec}); }

Status Engine::AddNodes(const std::vector<v1::NodeSpec>& specs) {
  Status status;
  for (const v1::NodeSpec& spec : specs) {
    StatusOr<NodeIndexId> id = cluster_.AddNode(spec);
    if (!id.ok()) {
      status = id.status();
      break;
    }
    TakeNode(*id);
  }
  // Even after an error, the nodes added so far are real: account for them.
  InventoryUpdated();
  return status;
}

void Engine::TakeNode(NodeIndexId id) {
  placer_.Refresh(id);
  for (const GpuSlot& gpu : cluster_.node(id).gpus()) managed_mig_gpus_ += gpu.mig_managed;
}

Status Engine::ApplyInventoryChange(const InventoryDiff& diff, std::string_view backend) {
  if (diff.empty()) return Status::Ok();
  const std::string from = "backend '" + std::string(backend) + "'";
  Status first_error;
  auto note = [&first_error](const Status& status) {
    if (!status.ok() && first_error.ok()) first_error = status;
  };
  // Departures first, so a node renamed in one report frees its slot for the new name.
  RemoveNodes(diff.removed, from + " no longer reports it");
  for (const v1::NodeSpec& spec : diff.changed) note(UpdateNode(spec, from));
  for (const v1::NodeSpec& spec : diff.added) {
    StatusOr<NodeIndexId> id = cluster_.AddNode(spec);
    if (!id.ok()) {
      note(id.status().WithContext("node '" + spec.name() + "' reported by " + from));
      continue;
    }
    TakeNode(*id);
    PersistNodeEvent(spec.name(), "joined: reported by " + from, v1::NODE_ADDED);
  }
  InventoryUpdated();
  return first_error;
}

void Engine::RemoveNodes(const std::vector<std::string>& names, const std::string& why) {
  std::set<NodeIndexId> gone;
  for (const std::string& name : names) {
    const NodeState* node = cluster_.Find(name);
    if (node && node->present()) gone.insert(node->id());
  }
  if (gone.empty()) return;
  for (NodeIndexId id : gone) {
    cluster_.node(id).set_reshape_pending(false);  // no new shape waits for a node gone.
    reshapes_due_.erase(id);
  }
  // The jobs with tasks there lose them all: a gang cannot run with members missing.
  std::vector<uint64_t> hit;
  for (const auto& [id, job] : jobs_) {
    for (const PlacedTask& t : job.tasks) {
      if (!t.exited && gone.count(t.allocation.node) != 0) {
        hit.push_back(id);
        break;
      }
    }
  }
  std::sort(hit.begin(), hit.end());
  for (uint64_t id : hit) {
    JobRecord& job = jobs_.at(id);
    const PlacedTask* first = nullptr;
    for (const PlacedTask& t : job.tasks) {
      if (!t.exited && gone.count(t.allocation.node) != 0) {
        first = &t;
        break;
      }
    }
    const std::string node = cluster_.node(first->allocation.node).name();
    Requeue(job, "node '" + node + "' left (" + why + ")", LossCause::kInfrastructure);
  }
  for (NodeIndexId id : gone) ForgetNode(id, why);
}

void Engine::ForgetNode(NodeIndexId id, const std::string& why) {
  ReplanReservationsOn(id);
  NodeState& node = cluster_.node(id);
  for (const GpuSlot& gpu : node.gpus()) managed_mig_gpus_ -= gpu.mig_managed;
  gpu_health_.Forget(id);
  cordoned_by_loss_.erase(id);
  const std::string name = node.name();
  cluster_.RemoveNode(id);
  placer_.Forget(id);
  PersistNodeEvent(name, "removed: " + why, v1::NODE_REMOVED);
}

void Engine::ReplanReservationsOn(NodeIndexId id) {
  // Plans that counted on the node are made again; a job waiting there for its victims goes
  // back into line.
  std::vector<uint64_t> holders;
  for (const Reservation* r : reservations_.On(id)) holders.push_back(r->job);
  std::sort(holders.begin(), holders.end());
  holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
  for (uint64_t holder_id : holders) {
    JobRecord* holder = FindJob(holder_id);
    if (!holder) continue;
    if (holder->awaiting_victims) {
      FinishWaitingForVictims(*holder);
      AddPending(*holder);
    }
    DropReservation(*holder);
  }
}

Status Engine::UpdateNode(const v1::NodeSpec& spec, const std::string& from) {
  TESSERA_RETURN_IF_ERROR(ValidateNodeSpec(spec));
  NodeState* node = cluster_.Find(spec.name());
  if (!node || !node->present()) {
    return NotFoundError("node '" + spec.name() + "' does not exist");
  }
  const NodeIndexId id = node->id();
  const v1::NodeSpec now = DescribeNodeSpec(id);
  const v1::NodeSpec next = Canonical(spec);
  if (google::protobuf::util::MessageDifferencer::Equals(now, next)) {
    // Nothing the scheduler uses changed (a MIG layout it applied itself, say); a shape that
    // was waiting is no longer wanted.
    if (reshapes_due_.erase(id) != 0) {
      node->set_reshape_pending(false);
      placer_.Refresh(id);
    }
    return Status::Ok();
  }
  if (SameExceptLabelsAndTaints(now, next)) {
    cluster_.SetLabelsAndTaints(id, spec);
    placer_.Refresh(id);
    PersistNodeEvent(spec.name(), "labels, taints or zone changed: reported by " + from);
    return Status::Ok();
  }
  if (node->running_tasks() == 0) return Reshape(id, spec, from);
  cluster_.SetLabelsAndTaints(id, spec);
  reshapes_due_[id] = spec;
  node->set_reshape_pending(true);
  placer_.Refresh(id);
  PersistNodeEvent(spec.name(), "new shape reported by " + from + "; it takes effect once the " +
                                    std::to_string(node->running_tasks()) +
                                    " task(s) here have ended");
  return Status::Ok();
}

Status Engine::Reshape(NodeIndexId id, const v1::NodeSpec& spec, const std::string& from) {
  reshapes_due_.erase(id);
  ReplanReservationsOn(id);
  NodeState& old = cluster_.node(id);
  const bool cordoned = old.cordoned();
  const bool draining = old.draining();
  const bool by_loss = cordoned_by_loss_.count(id) != 0;
  for (const GpuSlot& gpu : old.gpus()) managed_mig_gpus_ -= gpu.mig_managed;
  gpu_health_.Forget(id);  // GPU indices may mean other devices now.
  cluster_.RemoveNode(id);
  StatusOr<NodeIndexId> back = cluster_.AddNode(spec);  // its name gives it its slot again.
  if (!back.ok()) {
    placer_.Forget(id);
    cordoned_by_loss_.erase(id);
    PersistNodeEvent(spec.name(), "removed: its new shape was refused: " + back.status().message(),
                     v1::NODE_REMOVED);
    return back.status().WithContext("node '" + spec.name() + "' reported by " + from);
  }
  NodeState& node = cluster_.node(*back);
  node.set_cordoned(cordoned);
  node.set_draining(draining);
  if (by_loss) cordoned_by_loss_.insert(*back);
  TakeNode(*back);
  PersistNodeEvent(spec.name(), "new shape in effect: reported by " + from);
  return Status::Ok();
}

void Engine::ApplyDueReshapes() {
  std::vector<NodeIndexId> idle;
  for (const auto& [id, spec] : reshapes_due_) {
    if (cluster_.node(id).running_tasks() == 0) idle.push_back(id);
  }
  if (idle.empty()) return;
  for (NodeIndexId id : idle) {
    const v1::NodeSpec spec = reshapes_due_.at(id);
    const Status status = Reshape(id, spec, "its backend");
    if (!status.ok()) LogWarning(options_.log, "{}", status.message());
  }
  InventoryUpdated();
}

Status Engine::SetNodeFlags(const std::string& name, bool cordoned, bool draining) {
  NodeState* node = cluster_.Find(name);
  if (!node || !node->present()) return NotFoundError("node '" + name + "' does not exist");
  if (!cordoned && !draining) ClearFailedGpus(*node);  // an operator vouches for the node again.
  cordoned_by_loss_.erase(node->id());  // the operator's word wins over a plugin's recovery.
  node->set_cordoned(cordoned || draining);
  node->set_draining(draining);
  placer_.Refresh(node->id());
  if (node->Schedulable()) {
    capacity_freed_ = true;
    host_.RequestDecisions();
  }
  return Status::Ok();
}

bool Engine::HasNode(const std::string& name) const {
  const NodeState* node = cluster_.Find(name);
  return node && node->present();
}

v1::NodeSpec Engine::DescribeNodeSpec(NodeIndexId id) const {
  const NodeState& n = cluster_.node(id);
  v1::NodeSpec spec;
  const ResourceVector cap = n.Capacity();
  spec.set_name(n.name());
  spec.set_cpu_milli(cap.cpu_milli());
  spec.set_memory_mib(cap.memory_mib());
  spec.mutable_labels()->insert(cluster_.labels(id).begin(), cluster_.labels(id).end());
  *spec.mutable_taints() = cluster_.taints_and_zone(id).taints();
  spec.set_zone(cluster_.taints_and_zone(id).zone());
  for (size_t i = 0; i < n.gpus().size(); ++i) {
    v1::GpuDevice* gpu = spec.add_gpus();
    gpu->set_index(static_cast<int32_t>(i));
    gpu->set_model(cluster_.models().Name(n.model()));
    DescribeGpu(n.gpus()[i], *gpu);
    gpu->clear_healthy();
  }
  return spec;
}

std::vector<v1::Node> Engine::Nodes() const {
  std::vector<v1::Node> out;
  for (const NodeState& n : cluster_.nodes()) {
    if (!n.present()) continue;
    v1::Node node;
    *node.mutable_spec() = DescribeNodeSpec(n.id());
    for (size_t i = 0; i < n.gpus().size(); ++i) {
      node.mutable_spec()->mutable_gpus(static_cast<int>(i))->set_healthy(n.gpus()[i].healthy);
    }
    v1::NodeStatus* status = node.mutable_status();
    status->set_cordoned(n.cordoned());
    status->set_draining(n.draining());
    status->set_reshape_pending(n.reshape_pending());
    *status->mutable_allocated() = n.Allocated().ToProto();
    status->set_running_tasks(n.running_tasks());
    for (size_t i = 0; i < n.gpus().size(); ++i) {
      if (const v1::GpuState* gpu = gpu_health_.Find(n.id(), static_cast<int>(i))) {
        *status->add_gpus() = *gpu;
      }
    }
    out.push_back(std::move(node));
  }
  // By name: slots are reused under churn, so their order means nothing to a reader.
  std::sort(out.begin(), out.end(),
            [](const v1::Node& a, const v1::Node& b) { return a.spec().name() < b.spec().name(); });
  return out;
}

void Engine::InventoryUpdated() {
  queues_.SetCapacity(cluster_.capacity(), cluster_.capacity_by_model());
  feasibility_ = std::make_shared<FeasibilityChecker>(cluster_);
  host_.InventoryChanged(feasibility_);
  // Jobs that no node could run may fit the new inventory.
  std::vector<uint64_t> recheck(infeasible_jobs_.begin(), infeasible_jobs_.end());
  for (uint64_t id : recheck) {
    JobRecord* job = FindJob(id);
    if (!job || CheckFeasible(*job)) continue;
    infeasible_jobs_.erase(id);
    job->infeasible = false;
    job->reason.clear();
    AddPending(*job);
    Persist(*job, MakeUpdateEvent(*job, "feasible with the new inventory"));
  }
  capacity_freed_ = true;
  host_.RequestDecisions();
}

}  // namespace tessera
