#include "engine/reservations.h"

#include <algorithm>

#include "placement/shadow_time.h"

namespace tessera {

void ReservationBook::Add(Reservation reservation) {
  Remove(reservation.job);
  for (NodeIndexId n : reservation.nodes) {
    if (n >= jobs_by_node_.size()) jobs_by_node_.resize(n + 1);
    jobs_by_node_[n].push_back(reservation.job);
  }
  reservations_.push_back(std::move(reservation));
}

void ReservationBook::Remove(uint64_t job) {
  auto it = std::find_if(reservations_.begin(), reservations_.end(),
                         [job](const Reservation& r) { return r.job == job; });
  if (it == reservations_.end()) return;
  for (NodeIndexId n : it->nodes) {
    auto& jobs = jobs_by_node_[n];
    jobs.erase(std::remove(jobs.begin(), jobs.end(), job), jobs.end());
  }
  reservations_.erase(it);
}

const Reservation* ReservationBook::Find(uint64_t job) const {
  for (const Reservation& r : reservations_) {
    if (r.job == job) return &r;
  }
  return nullptr;
}

size_t ReservationBook::whole_node_count() const {
  return static_cast<size_t>(std::count_if(reservations_.begin(), reservations_.end(),
                                           [](const Reservation& r) { return r.whole_nodes(); }));
}

std::vector<const Reservation*> ReservationBook::On(NodeIndexId node) const {
  std::vector<const Reservation*> out;
  if (node >= jobs_by_node_.size()) return out;
  for (uint64_t job : jobs_by_node_[node]) out.push_back(Find(job));
  return out;
}

bool ReservationBook::HeldWholeForOther(NodeIndexId node, uint64_t job) const {
  if (node >= jobs_by_node_.size()) return false;
  for (uint64_t holder : jobs_by_node_[node]) {
    if (holder != job && Find(holder)->whole_nodes()) return true;
  }
  return false;
}

bool ReservationFilter::LeavesRoomFor(const Reservation& r, const NodeState& node,
                                      const TaskShape& shape) const {
  const auto at = std::find(r.nodes.begin(), r.nodes.end(), node.id());
  if (r.tasks.empty() || at == r.nodes.end()) return false;
  // Which GPUs the task takes matters to the holder only through their number, unless the
  // holder shares GPUs or wants NVLink neighbours: then only a task without GPUs may come.
  const bool counted_gpus = r.shape.whole_gpus() && !r.shape.same_nvlink;
  if (shape.needs_gpu() && r.shape.needs_gpu() && !counted_gpus) return false;
  const std::optional<TaskAllocation> task = node.Fit(shape, DevicePreference::kTightest);
  if (!task) return false;
  NodeState at_start = node;
  if (ending_by_) {
    std::vector<TaskAllocation> ending;
    ending_by_(node.id(), r.start_us, ending);
    for (const TaskAllocation& a : ending) at_start.Release(a);
  }
  at_start.Apply(*task);
  return TasksThatFit(at_start, r.shape) >= r.tasks[static_cast<size_t>(at - r.nodes.begin())];
}

bool ReservationFilter::Accept(const NodeState& node, const TaskShape& shape) const {
  if (book_.size() == 0) return true;
  const std::vector<const Reservation*> on = book_.On(node.id());
  // Room its victims are freeing is this job's, whatever whole-node plans others made since.
  const bool own_hold = std::any_of(on.begin(), on.end(), [this](const Reservation* r) {
    return r->job == job_ && !r->whole_nodes();
  });
  ResourceVector held;
  for (const Reservation* r : on) {
    if (r->job == job_) continue;
    if (r->whole_nodes()) {
      if (own_hold) continue;
      if ((!ends_by_ || *ends_by_ > r->start_us) && !LeavesRoomFor(*r, node, shape)) return false;
      continue;
    }
    // A holder that needs GPUs needs the GPUs its victims free, not just as much: which GPU a
    // task placed meanwhile would take (a whole free GPU for a share, a vGPU's type, a
    // fraction's device) decides whether the holder fits once they are gone. So no other GPU
    // task comes to its nodes while it waits (a requeued victim came straight back onto the
    // room it freed, and the holder never fit), but for another holder there, whose own
    // victims free its room: holders share the node by the counts below.
    if (r->shape.needs_gpu() && shape.needs_gpu() && !own_hold) return false;
    const size_t i = static_cast<size_t>(std::find(r->nodes.begin(), r->nodes.end(), node.id()) -
                                         r->nodes.begin());
    held += r->held[i];
  }
  if (held.IsZero()) return true;
  // Room left once what others hold here is set aside.
  int64_t free_gpu_milli = 0;
  for (const GpuSlot& g : node.gpus()) free_gpu_milli += g.healthy ? g.free_milli : 0;
  const ResourceVector need = shape.RequestVector();
  return node.cpu_free() - held.cpu_milli() >= need.cpu_milli() &&
         node.memory_free() - held.memory_mib() >= need.memory_mib() &&
         (!shape.needs_gpu() ||
          (free_gpu_milli - held.gpu_milli() >= need.gpu_milli() &&
           (!shape.whole_gpus() ||
            node.whole_free_gpus() - held.gpu_milli() / 1000 >= shape.gpu_count)));
}

}  // namespace tessera
