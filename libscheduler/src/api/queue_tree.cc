#include "tessera/queue_tree.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <map>
#include <set>

#include "api/validation.h"

namespace tessera {
namespace {

// "queues[2].name: ..." from the spec's own "name: ...".
Status AtEntry(int index, const Status& status) {
  const std::string entry = "queues[" + std::to_string(index) + "]";
  Status at(status.code(), entry + "." + status.message());
  return status.field().empty() ? at : at.WithField(entry + "." + status.field());
}

std::string ParentOf(const std::string& name) {
  const size_t slash = name.rfind('/');
  return slash == std::string::npos ? "" : name.substr(0, slash);
}

size_t Depth(const std::string& name) { return std::count(name.begin(), name.end(), '/'); }

// The checks against the existing queues, made before anything changes.
Status CheckAgainstExisting(const google::protobuf::RepeatedPtrField<v1::QueueSpec>& declared,
                            const std::map<std::string, v1::Queue>& existing) {
  std::set<std::string> declared_names;
  for (const v1::QueueSpec& spec : declared) declared_names.insert(spec.name());
  for (int i = 0; i < declared.size(); ++i) {
    const std::string& name = declared[i].name();
    if (existing.count(name) > 0) continue;
    const std::string parent = ParentOf(name);
    if (parent.empty()) continue;
    auto it = existing.find(parent);
    if (it == existing.end()) {
      if (declared_names.count(parent) > 0) continue;  // created first, empty.
      return AtEntry(i, InvalidFieldError("name", "parent queue '" + parent +
                                                      "' is neither declared nor existing"));
    }
    const v1::QueueStatus& status = it->second.status();
    // Counts cover the subtree, so only a leaf's are its own.
    if (status.pending_jobs() + status.running_jobs() > 0) {
      bool parent_has_children = false;
      for (const auto& [other, queue] : existing) {
        parent_has_children |= ParentOf(other) == parent;
      }
      if (!parent_has_children) {
        return AtEntry(i,
                       FailedPreconditionError("name: cannot create '" + name + "': '" + parent +
                                               "' holds unfinished jobs, so it must stay a leaf"));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateQueueDeclaration(const google::protobuf::RepeatedPtrField<v1::QueueSpec>& declared) {
  std::map<std::string, int> index_of;
  for (int i = 0; i < declared.size(); ++i) {
    const v1::QueueSpec& spec = declared[i];
    if (Status s = ValidateQueueSpec(spec); !s.ok()) return AtEntry(i, s);
    if (auto [it, inserted] = index_of.emplace(spec.name(), i); !inserted) {
      return AtEntry(i,
                     InvalidFieldError("name", "'" + spec.name() + "' is declared twice (also " +
                                                   "queues[" + std::to_string(it->second) + "])"));
    }
  }
  return Status::Ok();
}

StatusOr<QueueTreeReport> ApplyQueueTree(
    Scheduler& scheduler, const google::protobuf::RepeatedPtrField<v1::QueueSpec>& declared) {
  auto listed = scheduler.ListQueues();
  if (!listed.ok()) return listed.status();
  std::map<std::string, v1::Queue> existing;
  for (v1::Queue& queue : *listed) existing.emplace(queue.spec().name(), std::move(queue));
  TESSERA_RETURN_IF_ERROR(ValidateQueueDeclaration(declared));
  TESSERA_RETURN_IF_ERROR(CheckAgainstExisting(declared, existing));

  // Parents before children; declaration order otherwise.
  std::vector<int> order(declared.size());
  for (int i = 0; i < declared.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&declared](int a, int b) {
    return Depth(declared[a].name()) < Depth(declared[b].name());
  });

  QueueTreeReport report;
  std::set<std::string> declared_names;
  for (const int i : order) {
    const v1::QueueSpec& spec = declared[i];
    declared_names.insert(spec.name());
    auto it = existing.find(spec.name());
    if (it == existing.end()) {
      if (Status s = scheduler.CreateQueue(spec); !s.ok()) return AtEntry(i, s);
      report.created.push_back(spec.name());
    } else if (google::protobuf::util::MessageDifferencer::Equals(it->second.spec(), spec)) {
      report.unchanged.push_back(spec.name());
    } else {
      if (Status s = scheduler.UpdateQueue(spec); !s.ok()) return AtEntry(i, s);
      report.updated.push_back(spec.name());
    }
  }
  for (const auto& [name, queue] : existing) {
    if (declared_names.count(name) == 0) report.undeclared.push_back(name);
  }
  return report;
}

}  // namespace tessera
