#include "backends/plugin_backend.h"

#include "common/log.h"

namespace tessera {
namespace {

StatusOr<std::shared_ptr<PluginLibrary>> LoadLibrary(const PluginOptions& p,
                                                     const std::vector<std::string>& dirs) {
  if (p.linked) return PluginLibrary::Linked(p.linked);
  return p.isolate ? PluginLibrary::LoadIsolated(p.plugin, dirs, p.host_executable, p.call_deadline)
                   : PluginLibrary::Load(p.plugin, dirs);
}

}  // namespace

PluginBackend::PluginBackend(const BackendOptions& options, std::vector<std::string> plugin_dirs,
                             Host host)
    : options_(options), plugin_dirs_(std::move(plugin_dirs)), host_(std::move(host)) {}

PluginBackend::~PluginBackend() {
  StopRestarts();
  restarter_.reset();  // before the executor it may be installing.
  executor_.reset();
}

StatusOr<std::unique_ptr<PluginBackend>> PluginBackend::Open(
    const BackendOptions& options, const std::vector<std::string>& plugin_dirs, Host host) {
  std::unique_ptr<PluginBackend> backend(new PluginBackend(options, plugin_dirs, std::move(host)));
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<PluginLibrary> library,
                           LoadLibrary(options.plugin, plugin_dirs));
  backend->name_ = options.name.empty() ? library->info().name : options.name;
  const PluginOptions& p = options.plugin;
  if (p.max_restarts_per_minute > 0) {
    PluginBackend* self = backend.get();
    backend->restarter_ = std::make_unique<PluginRestarter>(
        backend->name_, p.max_restarts_per_minute, [self] { return self->Restart(); },
        [self](PluginRestarter::Restarted restarted) {
          if (self->host_.closing()) return;  // dropped here, off the strand.
          self->Install(std::move(restarted));
        },
        backend->host_.log);
  }
  TESSERA_ASSIGN_OR_RETURN(PluginRestarter::Restarted opened,
                           backend->StartInstance(std::move(library)));
  backend->executor_ = std::move(opened.executor);
  backend->first_inventory_ = std::move(opened.inventory);
  backend->first_live_ = std::move(opened.live);
  backend->node_groups_ = std::move(opened.node_groups);
  return backend;
}

StatusOr<PluginRestarter::Restarted> PluginBackend::StartInstance(
    std::shared_ptr<PluginLibrary> library) {
  PluginRestarter::Restarted opened;
  TESSERA_ASSIGN_OR_RETURN(opened.executor, StartExecutor(std::move(library)));
  TESSERA_ASSIGN_OR_RETURN(opened.inventory, opened.executor->LoadInventory());
  TESSERA_ASSIGN_OR_RETURN(opened.live, opened.executor->LoadLiveTasks());
  TESSERA_RETURN_IF_ERROR(opened.executor->StartPlugin());
  if (opened.executor->info().capacity_provider) {
    TESSERA_ASSIGN_OR_RETURN(opened.node_groups, opened.executor->LoadNodeGroups());
  }
  return opened;
}

StatusOr<std::unique_ptr<PluginExecutor>> PluginBackend::StartExecutor(
    std::shared_ptr<PluginLibrary> library) {
  PluginExecutor::Wiring wiring;
  wiring.post = host_.post;
  wiring.events = host_.events;
  wiring.timers = host_.timers;
  wiring.clock = host_.clock;
  wiring.log = host_.log;
  wiring.telemetry = host_.telemetry;
  wiring.on_inventory = host_.on_inventory;
  wiring.fencing_epoch = host_.fencing_epoch;
  wiring.on_interruption = host_.on_interruption;
  wiring.on_provisioned = host_.on_provisioned;
  wiring.operations = operations_;
  wiring.on_foreign_partition_started = host_.on_foreign_partition_started;
  wiring.on_foreign_partition_result = host_.on_foreign_partition_result;
  wiring.on_foreign_partition_failed = host_.on_foreign_partition_failed;
  wiring.backend_name = name_;
  wiring.on_job_submitted = host_.on_job_submitted;
  wiring.on_job_withdrawn = host_.on_job_withdrawn;
  wiring.on_unhealthy = [this, library](const std::string& why) {
    unhealthy_ = why;
    host_.on_lost(why);
    if (library->isolated()) {
      library->Abandon();  // its process is killed, so a stuck call returns.
      if (restarter_) restarter_->Schedule(why);
      return;
    }
    // In process, a call stuck in the plugin keeps its thread there for good: no new instance
    // beside it. Otherwise the old instance is shut down and a new one made (Restart).
    if (executor_->hung()) {
      LogWarning(host_.log,
                 "backend '{}': a call is stuck in its in-process plugin, so it is not restarted; "
                 "it stays unhealthy until the scheduler is reopened (isolate: true restarts "
                 "even a hung plugin)",
                 name_);
      return;
    }
    if (restarter_) restarter_->Schedule(why);
  };
  return PluginExecutor::Start(std::move(library), options_.plugin, std::move(wiring));
}

StatusOr<PluginRestarter::Restarted> PluginBackend::Restart() {
  // An in-process plugin's failed instance goes first: its threads and whatever it holds (child
  // processes it reaps, devices, ports) must not meet the new one's. (executor_ changes only in
  // Install, after this returns.)
  if (!options_.plugin.isolate) executor_->ShutDownInstance();
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<PluginLibrary> library,
                           LoadLibrary(options_.plugin, plugin_dirs_));
  return StartInstance(std::move(library));
}

void PluginBackend::Install(PluginRestarter::Restarted restarted) {
  auto fresh = std::make_shared<PluginRestarter::Restarted>(std::move(restarted));
  host_.post([this, fresh] {
    // Failed already (its on_unhealthy, queued before this, asked for another restart): drop it.
    if (!fresh->executor->healthy()) return;
    // The old executor is unhealthy and its process killed: destroying it does not wait.
    std::unique_ptr<PluginExecutor> old = std::move(executor_);
    executor_ = std::move(fresh->executor);
    node_groups_ = std::move(fresh->node_groups);
    unhealthy_.clear();
    // What the restarted plugin offers may differ from what it offered before.
    host_.on_restarted(executor_.get(), DiffInventory(old->Inventory(), fresh->inventory),
                       fresh->live);
    old.reset();
    executor_->Poll();
  });
}

bool PluginBackend::Busy() const { return executor_->Busy() || (restarter_ && restarter_->Busy()); }

void PluginBackend::StopRestarts() {
  if (restarter_) restarter_->Stop();
}

v1::Backend PluginBackend::Status() const {
  v1::Backend b;
  const PluginInfo& info = executor_->info();
  b.set_name(name_);
  b.set_plugin(info.path);
  b.set_version(info.version);
  b.set_abi(std::to_string(info.abi_major) + "." + std::to_string(info.abi_minor));
  b.set_isolated(executor_->library()->isolated());
  // The executor knows first (its reason is set as it turns unhealthy); the backend hears of it
  // on the strand just after.
  b.set_healthy(unhealthy_.empty() && executor_->healthy());
  if (!b.healthy()) {
    b.set_unhealthy_reason(unhealthy_.empty() ? executor_->unhealthy_reason() : unhealthy_);
  }
  b.set_restarts(restarter_ ? restarter_->restarts() : 0);
  if (info.executor) b.add_roles("executor");
  if (info.partitioner) b.add_roles("partitioner");
  if (info.capacity_provider) b.add_roles("capacity_provider");
  for (const std::string& other : options_.partitions) b.add_partitions(other);
  for (const v1::NodeGroup& group : node_groups_) *b.add_node_groups() = group;
  const OperationTracker::Snapshot operations = operations_->Counts();
  for (int kind = 0; kind < kOperationKinds; ++kind) {
    const OperationTracker::KindCounts& counts = operations.kinds[kind];
    if (counts.in_flight == 0 && counts.succeeded == 0 && counts.failed == 0) continue;
    v1::BackendOperations* row = b.add_operations();
    row->set_kind(OperationKindName(static_cast<OperationKind>(kind)));
    row->set_in_flight(counts.in_flight);
    row->set_succeeded(counts.succeeded);
    row->set_failed(counts.failed);
  }
  b.set_last_operation_failure(operations.last_failure);
  return b;
}

}  // namespace tessera
